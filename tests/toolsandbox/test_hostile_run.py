"""`dynsteer run` on real ToolSandbox scenarios against hostile blueprints, crashing agents, full disks and Ctrl-C.

Blueprint defects are a table (``BLUEPRINT_DEFECTS``): one broken blueprint among several
scenarios must stop the run before the first rollout, with one sentence and nothing
written. The other tests play real scenarios and read every file the run leaves.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer, Reply, call
from test_faults_io import TMPFS
from test_hostile_files import snapshot
from ts_support import BLUEPRINTS, SCRIPTS, A, B, C

from dynsteer_hook.cli import main
from dynsteer_hook.toolsandbox.live.runner import RunOptions, run_scenario, run_scenarios
from dynsteer_hook.toolsandbox.roles.named import LITELLM

pytestmark = pytest.mark.toolsandbox

ROOT = Path(__file__).resolve().parents[2]
CLEAN = SCRIPTS / "clean_solver.json"
PROGRESS = re.compile(r"^\[\d+/\d+\] [^:]+: \w+; so far ")  # the run's progress off a terminal: a line per finished scenario


def _only_dir(base: Path) -> Path:
    dirs = [p for p in base.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def _edit(name: str, change: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    def write(bps: Path) -> None:
        doc = json.loads((BLUEPRINTS / f"{name}.json").read_text())
        change(doc)
        (bps / f"{name}.json").write_text(json.dumps(doc))
    return write


def _raw(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda bps: (bps / f"{name}.json").write_bytes(data)


@dataclass(frozen=True)
class Defect:
    """A broken blueprint of scenario B, played together with a good one for A."""

    name: str
    make: Callable[[Path], None]
    needle: str


BLUEPRINT_DEFECTS = [
    Defect("cycle", _edit(B, lambda d: d["edges"].append({"source": d["edges"][-1]["target"], "target": d["edges"][0]["source"]})),
           "(acyclic at "),
    Defect("unknown_tool", _edit(B, lambda d: d["milestones"][0].update(tool="teleport")), "tool 'teleport' is not in the tool catalog"),
    Defect("not_json", _raw(B, b"{"), "is not valid JSON"),
    Defect("nested_too_deeply", _raw(B, b"[" * 50_000 + b"]" * 50_000), "deeper than 100 levels"),
    Defect("not_utf8", _raw(B, b"\xff\xfe{}"), "is not UTF-8 text"),
    Defect("a_folder", lambda bps: (bps / f"{B}.json").mkdir(), "is a directory, not a file"),
    Defect("missing", lambda bps: None, "no blueprint for 1 scenario(s)"),
    Defect("task_of_another_scenario", _edit(B, lambda d: d.update(task=A)), f"was compiled for scenario '{A}', not '{B}'"),
    Defect("provenance_of_another_scenario", _edit(B, lambda d: d["provenance"].update(scenario=C)),
           f"was compiled for scenario '{C}', not '{B}'"),
    Defect("copied_from_another_scenario", lambda bps: shutil.copy(BLUEPRINTS / f"{C}.json", bps / f"{B}.json"),
           f"was compiled for scenario '{C}', not '{B}'"),
    Defect("stale", _edit(B, lambda d: d["provenance"].update(public_view_hash="0" * 64)), "(stale), e.g. "),
]


@pytest.mark.parametrize("defect", BLUEPRINT_DEFECTS, ids=lambda d: d.name)
def test_one_bad_blueprint_stops_the_run_before_any_rollout(defect: Defect, scenarios: dict[str, Any], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A bad blueprint among several scenarios ends the run before the first rollout: one sentence naming it, exit 2,
    no run folder, nothing else touched."""
    bps = tmp_path / "bps"
    bps.mkdir()
    shutil.copy(BLUEPRINTS / f"{A}.json", bps / f"{A}.json")
    defect.make(bps)
    (tmp_path / "out").mkdir()
    before = snapshot(tmp_path)
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(CLEAN), "-s", A, B, "-p", "1",
                 "-o", str(tmp_path / "out"), "--blueprints", str(bps)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1 and defect.needle in err and str(bps) in err, err
    assert snapshot(tmp_path) == before


def test_stale_blueprint_plays_when_allowed_and_says_so_everywhere(scenarios: dict[str, Any], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """With --allow-stale-blueprints a stale blueprint is played, and the console, the report (JSON and Markdown) and
    dynsteer_summary.json say it is stale."""
    bps = tmp_path / "bps"
    bps.mkdir()
    shutil.copy(BLUEPRINTS / f"{A}.json", bps / f"{A}.json")
    _edit(B, lambda d: d["provenance"].update(public_view_hash="0" * 64))(bps)
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(CLEAN), "-s", A, B, "-p", "1",
                 "-o", str(tmp_path / "out"), "--blueprints", str(bps), "--allow-stale-blueprints"])
    out = capsys.readouterr().out
    assert code == 0
    assert f"warning: 1 stale blueprint(s) played (--allow-stale-blueprints), compiled from another version of the public view: {B}" in out
    assert next(x for x in out.splitlines() if x.startswith(B + ":")).endswith("[stale blueprint]")
    run = _only_dir(tmp_path / "out")
    assert json.loads((run / "trajectories" / B / "dynsteer_report.json").read_text())["blueprint_stale"] is True
    assert json.loads((run / "trajectories" / A / "dynsteer_report.json").read_text())["blueprint_stale"] is False
    assert "Blueprint is **stale**" in (run / "trajectories" / B / "dynsteer_report.md").read_text()
    assert json.loads((run / "dynsteer_summary.json").read_text())["stale_blueprints"] == [B]


# ---- a crashed agent is crashed in every file ----------------------------------------------------------------------


def _silent_user(tmp_path: Path, *names: str) -> Path:
    path = tmp_path / "users.json"
    path.write_text(json.dumps({n: {"agent": [], "user": []} for n in names}))
    return path


def _closed_port() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _assert_crashed_everywhere(run: Path, name: str, console: str, reason: str) -> None:
    line = next(x for x in console.splitlines() if x.startswith(name + ":"))
    assert line.startswith(f"{name}: crashed (") and reason in line and "dynsteer 0.000" in line
    report = json.loads((run / "trajectories" / name / "dynsteer_report.json").read_text())
    assert report["outcome"] == "crashed" and report["score"] == 0.0 and reason in report["crash"]
    md = (run / "trajectories" / name / "dynsteer_report.md").read_text()
    assert "- Outcome: **crashed**; score 0.000" in md and "- Crash: " in md
    block = json.loads((run / "result_summary.json").read_text())["per_scenario_results"][0]["dynsteer"]
    assert block["outcome"] == "crashed" and block["score"] == 0.0 and reason in block["crash"]
    summary = json.loads((run / "dynsteer_summary.json").read_text())
    assert summary["outcomes"] == {"crashed": 1} and summary["crashed"] == 1 and summary["mean_score"] is None
    end = json.loads((run / "trajectories" / name / "dynsteer_audit.jsonl").read_text().splitlines()[-1])
    assert end["type"] == "end" and end["outcome"] == "crashed" and end["score"] == 0.0


def test_unreachable_agent_is_crashed_in_every_file(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An agent whose model cannot be reached is `crashed` on the console, in the report JSON and Markdown, in the
    result summary's dynsteer block, in dynsteer_summary.json and in the audit log's end record."""
    code = main(["run", "--agent", LITELLM, "--agent-model", "openai/fake-agent", "--agent-api-base", _closed_port(),
                 "--agent-max-retries", "0", "--user", "Scripted", "--script", str(_silent_user(tmp_path, A)),
                 "-s", A, "-p", "1", "-o", str(tmp_path / "out")])
    assert code == 1  # a crashed scenario fails the run, once everything is written
    _assert_crashed_everywhere(_only_dir(tmp_path / "out"), A, capsys.readouterr().out, "could not be reached")


def test_agent_crashing_after_settling_every_milestone_is_not_a_success(scenarios: dict[str, Any], llm_server: FakeLLMServer,
                                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An agent that settles the blueprint's only milestone and then crashes (its server fails) is `crashed` with
    score 0 everywhere, where the milestones alone would read `completed 1.000`."""
    bps = tmp_path / "bps"
    bps.mkdir()

    def only_the_call(d: dict[str, Any]) -> None:
        d["milestones"] = [m for m in d["milestones"] if m["tool"] != "@agent_message"]
        d["edges"] = []

    _edit(A, only_the_call)(bps)
    llm_server.script(Reply(content=None, tool_calls=(call("set_cellular_service_status", {"on": False}),)), Reply(content=None, status=500))
    code = main(["run", "--agent", LITELLM, "--agent-model", "openai/fake-agent", "--agent-api-base", llm_server.url,
                 "--agent-max-retries", "0", "--user", "Scripted", "--script", str(_silent_user(tmp_path, A)),
                 "-s", A, "-p", "1", "-o", str(tmp_path / "out"), "--blueprints", str(bps)])
    assert code == 1
    run = _only_dir(tmp_path / "out")
    assert json.loads((run / "trajectories" / A / "dynsteer_report.json").read_text())["settled"] == ["set_cellular_service_status[default]"]
    _assert_crashed_everywhere(run, A, capsys.readouterr().out, "LLMUnavailableError")


# ---- full disks ---------------------------------------------------------------------------------------------------


def test_rollout_goes_on_when_its_logs_fail_and_the_report_says_so(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """With the audit log and the event log on a full device, the real rollout plays and is judged as without them;
    the report is written and names both logs as incomplete from record 0."""
    options = RunOptions(agent="Scripted", user="Scripted", script=CLEAN)
    reference = run_scenario((B, scenarios[B]), options=options, output_directory=tmp_path / "ok")
    trajectory = tmp_path / "full" / "trajectories" / B
    trajectory.mkdir(parents=True)
    (trajectory / "dynsteer_audit.jsonl").symlink_to("/dev/full")
    (trajectory / "dynsteer_events.jsonl").symlink_to("/dev/full")
    r = run_scenario((B, scenarios[B]), options=options, output_directory=tmp_path / "full")
    d = r["dynsteer"]
    assert r["exception_type"] is None and r["similarity"] == reference["similarity"]
    assert (d["outcome"], d["settled"], d["score"]) == (reference["dynsteer"]["outcome"], reference["dynsteer"]["settled"], reference["dynsteer"]["score"])
    gaps = [{"file": "dynsteer_audit.jsonl", "from_record": 0, "reason": "No space left on device"},
            {"file": "dynsteer_events.jsonl", "from_record": 0, "reason": "No space left on device"}]
    assert d["incomplete_logs"] == gaps and d["report_written"] is True
    report = json.loads((trajectory / "dynsteer_report.json").read_text())
    assert report["incomplete_logs"] == gaps
    assert "events.jsonl is **incomplete** from record 0" in (trajectory / "dynsteer_report.md").read_text().replace("\\", "")


@TMPFS
@pytest.mark.slow
def test_run_on_a_full_disk_is_one_sentence_and_tears_nothing(tmp_path: Path) -> None:
    """`dynsteer run` on a tmpfs that fills up: exit 2, one sentence naming the full disk, every audit and event line
    whole, reports only in pairs, no temporary file left."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    check = tmp_path / "check.py"
    check.write_text(textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        root = Path(sys.argv[1])
        assert not list(root.rglob("*.tmp")), "temporary file left"
        for log in [*root.rglob("dynsteer_audit.jsonl"), *root.rglob("dynsteer_events.jsonl")]:
            data = log.read_bytes()
            assert not data or data.endswith(b"\\n"), f"torn last line in {log}"
            [json.loads(x) for x in data.splitlines()]
        for folder in root.rglob("trajectories/*"):
            assert (folder / "dynsteer_report.json").exists() == (folder / "dynsteer_report.md").exists(), folder
            if (folder / "dynsteer_report.json").exists():
                json.loads((folder / "dynsteer_report.json").read_text())
        print("checked", len(list(root.rglob("dynsteer_audit.jsonl"))))
        """
    ))
    argv = ["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(CLEAN), "-s", A, B, C, "-p", "1", "-o", f"{mnt}/out"]
    command = (f'mount -t tmpfs -o size=64k tmpfs "{mnt}" && "{sys.executable}" -m dynsteer_hook.cli {" ".join(argv)} 2> "{tmp_path}/err"; '
               f'echo "exit $?"; "{sys.executable}" "{check}" "{mnt}"')
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", command], capture_output=True, text=True, env=env, timeout=600)
    assert "exit 2" in proc.stdout and "checked 3" in proc.stdout, proc.stdout + proc.stderr
    err = [x for x in (tmp_path / "err").read_text().splitlines() if x.strip() and not PROGRESS.match(x)]
    assert len(err) == 1 and err[0].startswith("dynsteer: error: ") and "No space left on device" in err[0], err
    assert "Traceback" not in (tmp_path / "err").read_text()


# ---- Ctrl-C --------------------------------------------------------------------------------------------------------


def _signalled(llm_server: FakeLLMServer, tmp_path: Path, names: list[str], processes: int, to_group: bool, sig: signal.Signals,
               times: int = 1) -> tuple[subprocess.Popen[str], str, str]:
    """``dynsteer run`` of ``names`` whose agents wait on their model, sent ``sig`` ``times`` (to the parent or to its
    whole process group) once ``processes`` agents are waiting; the process, its stdout and its stderr."""
    import time

    llm_server.script(*[Reply(content="Let me think.", delay=120)] * len(names))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, "-m", "dynsteer_hook.cli", "run", "--agent", LITELLM, "--agent-model", "openai/fake-agent",
         "--agent-api-base", llm_server.url, "--user", "Scripted", "--script", str(_silent_user(tmp_path, *names)),
         "-s", *names, "-p", str(processes), "-o", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while llm_server.in_flight < processes:
            assert proc.poll() is None and time.monotonic() < deadline, "the agents never called their model"
            time.sleep(0.05)
        for _ in range(times):
            if to_group:
                os.killpg(proc.pid, sig)  # what a terminal's Ctrl-C (or its closing) does
            else:
                os.kill(proc.pid, sig)
            time.sleep(0.05)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc, out, err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("processes", "to_group", "sig"),
    [pytest.param(2, True, signal.SIGINT, id="p2-ctrl_c_in_a_terminal"), pytest.param(2, False, signal.SIGINT, id="p2-kill_int_to_the_parent"),
     pytest.param(1, False, signal.SIGINT, id="p1-kill_int"), pytest.param(2, False, signal.SIGTERM, id="p2-kill_term_to_the_parent"),
     pytest.param(2, True, signal.SIGTERM, id="p2-kill_term_to_the_group"), pytest.param(2, True, signal.SIGHUP, id="p2-terminal_closed"),
     pytest.param(1, False, signal.SIGTERM, id="p1-kill_term")],
)
def test_ctrl_c_ends_in_flight_scenarios_as_interrupted_and_writes_the_summaries(
    processes: int, to_group: bool, sig: signal.Signals, llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    """A real SIGINT (or SIGTERM, or SIGHUP) while agents wait on their model: exit 128 + the signal (130, 143, 129), one
    line on stderr naming the signal, no traceback and no leaked semaphore, each in-flight scenario's report written
    (JSON and Markdown) and marked interrupted, the queued ones not started, and both summaries and the run page written
    with the interruption recorded."""
    names = [A, B, C]
    proc, out, err = _signalled(llm_server, tmp_path, names, processes, to_group, sig)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and "leaked" not in err and "BrokenPipeError" not in err, err
    by = "" if sig == signal.SIGINT else f" by {sig.name}"
    lines = [x for x in err.splitlines() if x.strip() and not PROGRESS.match(x)]
    assert len(lines) == 1 and lines[0].startswith(f"dynsteer: interrupted{by}: 0 scenario(s) finished, "
                                                   f"{processes} stopped while playing (reports marked interrupted), "
                                                   f"{3 - processes} not started; summaries in "), err
    run = _only_dir(tmp_path / "out")
    result = json.loads((run / "result_summary.json").read_text())
    summary = json.loads((run / "dynsteer_summary.json").read_text())
    assert (run / "index.html").is_file()
    stopped = summary["interrupted"]
    assert len(stopped["in_flight"]) == processes and sorted(stopped["in_flight"] + stopped["not_started"]) == sorted(names)
    assert {k: result["interrupted"][k] for k in ("finished", "in_flight", "not_started")} == stopped
    assert result["per_scenario_results"] == [] and summary["outcomes"] == {"interrupted": processes}
    for name in stopped["in_flight"]:
        report = json.loads((run / "trajectories" / name / "dynsteer_report.json").read_text())
        assert report["outcome"] == "interrupted"
        assert "- Outcome: **interrupted**" in (run / "trajectories" / name / "dynsteer_report.md").read_text()
        assert f"{name}: interrupted at k=" in out
    for name in stopped["not_started"]:
        assert not (run / "trajectories" / name).exists() and f"{name}: interrupted before it started" in out
    assert not list(run.rglob("*.tmp"))


@pytest.mark.slow
@pytest.mark.parametrize("to_group", [pytest.param(False, id="to_the_parent"), pytest.param(True, id="to_the_group")])
def test_a_second_sigterm_stops_waiting_for_the_workers_and_still_writes_the_summaries(
    to_group: bool, llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    """Two SIGTERMs in a row to `dynsteer run -p 2`: the second ends the workers (which take SIGTERM as Ctrl-C until the
    parent gives up on them) and the wait, whenever it lands (even while the workers exit); the summaries and the page are
    written and the exit status is 143, with no traceback."""
    proc, _, err = _signalled(llm_server, tmp_path, [A, B, C], 2, to_group, signal.SIGTERM, times=2)
    assert proc.returncode == 143 and "Traceback" not in err, err
    lines = [x for x in err.splitlines() if x.strip() and not PROGRESS.match(x) and "leaked semaphore" not in x and "warnings.warn" not in x]
    assert len(lines) == 1 and lines[0].startswith("dynsteer: interrupted by SIGTERM: 0 scenario(s) finished, "), err
    run = _only_dir(tmp_path / "out")
    assert {"result_summary.json", "dynsteer_summary.json", "index.html"} <= {p.name for p in run.iterdir()}


# ---- demo --------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_each_demo_gets_its_own_folder(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two demos into the same -o leave two folders; the second changes no byte of the first. (The second demo plays
    only the minefield agent, the quickest: which agents a demo plays does not change where it writes.)"""
    import dynsteer_hook.data

    assert main(["demo", "-o", str(tmp_path)]) == 0
    first = _only_dir(tmp_path)
    out = capsys.readouterr().out
    assert f"outputs in {first}" in out and first.name.startswith("demo_")
    assert f"[clean_solver] reports under {first / 'clean_solver'}/trajectories/<scenario>/dynsteer_report.md" in out
    agents = sorted(p.name for p in first.iterdir() if p.is_dir())
    assert agents == sorted(dynsteer_hook.data.shipped_scripts()), agents
    before = snapshot(first)
    minefield = dynsteer_hook.data.shipped_scripts()["minefield_agent"]
    monkeypatch.setattr(dynsteer_hook.data, "shipped_scripts", lambda: {"minefield_agent": minefield})
    assert main(["demo", "-o", str(tmp_path)]) == 0
    second = next(p for p in tmp_path.iterdir() if p != first)
    assert snapshot(first) == before
    assert sorted(p.name for p in second.iterdir() if p.is_dir()) == ["minefield_agent"]
    assert sorted(p.relative_to(second / "minefield_agent") for p in (second / "minefield_agent").rglob("*")) == \
        sorted(p.relative_to(first / "minefield_agent") for p in (first / "minefield_agent").rglob("*"))


def test_run_scenarios_checks_blueprints_when_called_directly(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """The library entry point refuses a foreign blueprint before playing too (not only the command line)."""
    from dynsteer_hook.model.errors import ScenarioError

    bps = tmp_path / "bps"
    bps.mkdir()
    shutil.copy(BLUEPRINTS / f"{C}.json", bps / f"{A}.json")
    with pytest.raises(ScenarioError, match=f"compiled for scenario '{C}', not '{A}'"):
        run_scenarios({A: scenarios[A]}, RunOptions(agent="Scripted", user="Scripted", script=CLEAN, blueprint_dir=bps), tmp_path / "out", 1)
    assert not (tmp_path / "out").exists()

