"""`dynsteer run` and `dynsteer demo` through the command line entry point."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ts_support import BLUEPRINTS, SCRIPTS, A, B

from dynsteer_hook.cli import main

pytestmark = pytest.mark.toolsandbox

REPO = Path(__file__).resolve().parents[2]


def _only_dir(base: Path) -> Path:
    dirs = [p for p in base.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_native_evaluator_writes_toolsandbox_outputs_only(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--evaluator native plays as ToolSandbox does: its summary and trajectories, no dynsteer report or log, only the scenario's
    record that --resume keeps."""
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"),
                 "-s", A, "-p", "1", "-o", str(tmp_path), "--evaluator", "native"])
    assert code == 0
    out = _only_dir(tmp_path)
    assert out.name.startswith("agent_Scripted_user_Scripted_")
    summary = json.loads((out / "result_summary.json").read_text())
    assert summary["per_scenario_results"][0]["similarity"] == pytest.approx(1.0)
    assert set(summary) == {"per_scenario_results", "category_aggregated_results", "git_sha"}
    assert not (out / "dynsteer_summary.json").exists()
    assert [p.name for p in (out / "trajectories" / A).glob("dynsteer_*")] == ["dynsteer_result.json"]
    assert "Storing outputs to" in capsys.readouterr().out


def test_dynsteer_run_prints_a_verdict_per_scenario(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The default evaluator is dynsteer; each scenario gets a one-line verdict; a halt is a result (exit 0). Off a terminal
    the progress is one plain line per scenario on stderr, and nothing else is printed: no ToolSandbox category dump, no
    per-rollout bar, no log line, no colour."""
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "looping_agent.json"),
                 "-s", B, "-p", "1", "-o", str(tmp_path), "--n-stag", "5"])
    assert code == 0
    captured = capsys.readouterr()
    line = next(x for x in captured.out.splitlines() if x.startswith(B + ":"))
    assert "HALTED frontier_stagnation" in line and "t=5" in line
    lines = captured.out.splitlines()
    assert lines[0].startswith("Storing outputs to ") and lines[1] == line
    # then the totals, one indented row each, ending with the run page
    assert [x.split()[0] for x in lines[2:]] == ["scenarios", "halts", "mean", "steps", "judge", "run"], lines[2:]
    assert captured.err.splitlines() == [f"[1/1] {B}: halted; so far 1 halted, 0 crashed"]
    assert "\x1b" not in captured.out + captured.err
    out = _only_dir(tmp_path)
    assert json.loads((out / "dynsteer_summary.json").read_text())["halts_by_reason"] == {"frontier_stagnation": 1}


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--agent", "Scripted", "--user", "Scripted", "-s", A], "needs --script"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", "missing.json", "-s", A], "does not exist"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", "no_such_scenario"], "unknown scenario"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "minefield_agent.json"), "-s", A], "has no entry"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", A, "--blueprints", "nowhere"], "no blueprint"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", A, "--theta-fail", "3"], "theta_fail=3.0 is not accepted"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", A, "-p", "0"], "at least 1"),
    ],
)
def test_bad_run_input_is_one_sentence_and_exit_2(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  argv: list[str], needle: str) -> None:
    """Mistakes in flags or files end in one clear sentence on stderr, no traceback, nothing played."""
    code = main(["run", *argv, "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not any(tmp_path.rglob("conversation.json"))


def test_malformed_blueprint_stops_the_run_before_it_starts(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A broken blueprint file is reported by path before any scenario plays."""
    bps = tmp_path / "bps"
    bps.mkdir()
    (bps / f"{A}.json").write_text((BLUEPRINTS / f"{A}.json").read_text().replace('"edges": [', '"edges": [{"source": "ghost", "target": "report"}, ', 1))
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"),
                 "-s", A, "-o", str(tmp_path / "out"), "--blueprints", str(bps)])
    err = capsys.readouterr().err
    assert code == 2 and "ghost" in err and str(bps) in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("conversation.json"))


SCRAMBLED = "send_message_with_contact_content_cellular_off_3_distraction_tools_tool_name_scrambled"


def _decisions(out: Path) -> dict[str, Any]:
    """Every scenario's verdict in ``dynsteer_summary.json`` without the seconds it took."""
    summary = json.loads((out / "dynsteer_summary.json").read_text())
    return {p["name"]: p for p in summary["per_scenario"]} | {
        "halts_by_reason": summary["halts_by_reason"], "outcomes": summary["outcomes"]}


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
@pytest.mark.usefixtures("ray_instance")
def test_run_on_ray_decides_as_local_processes(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``dynsteer run --engine ray`` (a local Ray instance) plays the scenarios as Ray tasks to the same verdicts,
    summaries and ToolSandbox similarities as ``--engine local`` (in this process: that local worker processes decide
    as one process does is tests/toolsandbox/test_live.py's). The agent halts on one scenario (it steps on a minefield)
    and solves the other (scrambled tool names)."""
    minefield = json.loads((SCRIPTS / "minefield_agent.json").read_text())
    [halting] = [n for n in minefield if not n.startswith("_")]
    script = tmp_path / "mixed.json"
    script.write_text(json.dumps({halting: minefield[halting], SCRAMBLED: json.loads((SCRIPTS / "clean_solver.json").read_text())[SCRAMBLED]}))
    outs = {}
    for engine, processes in (("local", "1"), ("ray", "2")):
        argv = ["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(script),
                "-s", halting, SCRAMBLED, "-p", processes, "-o", str(tmp_path / engine), "--engine", engine, "--blueprints", str(BLUEPRINTS)]
        assert main(argv) == 0
        outs[engine] = _only_dir(tmp_path / engine)
    local, ray = (_decisions(outs[e]) for e in ("local", "ray"))
    assert local == ray
    assert local["halts_by_reason"] == {"fatal_minefield": 1} and local["outcomes"] == {"halted": 1, "completed": 1}, local
    similarity = {e: {r["name"]: r["similarity"] for r in json.loads((outs[e] / "result_summary.json").read_text())["per_scenario_results"]}
                  for e in outs}
    assert similarity["local"] == similarity["ray"]
    assert (outs["ray"] / "trajectories" / SCRAMBLED / "dynsteer_report.json").is_file()


def test_ray_address_without_the_ray_engine_is_refused_by_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--ray-address`` with the local engine is one sentence, before any scenario loads."""
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "looping_agent.json"),
                 "-s", B, "-o", str(tmp_path), "--ray-address", "ray://127.0.0.1:1"])
    err = capsys.readouterr().err
    assert code == 2 and "--engine ray" in err and len(err.strip().splitlines()) == 1


def _closed_port() -> str:
    """An OpenAI-compatible URL on 127.0.0.1 with nothing listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_a_run_with_an_unreachable_agent_writes_everything_and_exits_1(scenarios: dict[str, Any], tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Every scenario crashes (nothing listens at the agent's URL): the summaries and reports are written, stderr says how
    many crashed and why in one sentence naming run's own flag (--agent-api-base, not --api-base), and the exit status is 1."""
    users = tmp_path / "users.json"
    users.write_text(json.dumps({A: {"agent": [], "user": []}, B: {"agent": [], "user": []}}))
    code = main(["run", "--agent", "LiteLLM", "--agent-model", "openai/local", "--agent-api-base", _closed_port(),
                 "--agent-max-retries", "0", "--user", "Scripted", "--script", str(users), "-s", A, B, "-p", "1",
                 "-o", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert code == 1
    out = _only_dir(tmp_path / "out")
    summary = json.loads((out / "dynsteer_summary.json").read_text())
    assert summary["crashed"] == 2 and summary["outcomes"] == {"crashed": 2}
    assert len(json.loads((out / "result_summary.json").read_text())["per_scenario_results"]) == 2
    assert all((out / "trajectories" / n / "dynsteer_report.json").is_file() for n in (A, B))
    [sentence] = [x for x in captured.err.splitlines() if x.startswith("dynsteer: ")]
    assert sentence.startswith(f"dynsteer: 2 of 2 scenario(s) crashed (e.g. {A}): 2 x LLMUnavailableError: ")
    assert "could not be reached" in sentence and "check --agent-api-base" in sentence
    assert "--api-base" not in sentence.replace("--agent-api-base", "") and str(out / "result_summary.json") in sentence
    assert "Traceback" not in captured.err
    verdicts = [x for x in captured.out.splitlines() if x.startswith((A + ":", B + ":"))]
    assert len(verdicts) == 2 and all("crashed (LLMUnavailableError: " in v and "--agent-api-base" in v for v in verdicts)


def test_a_missing_api_key_names_the_run_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A hosted agent model without its key stops the run before it starts, naming --agent-api-key-env (run's flag)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = main(["run", "--agent", "LiteLLM", "--agent-model", "openai/gpt-4o", "--user", "Scripted", "-s", A, "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "set OPENAI_API_KEY in the environment" in err and "--agent-api-key-env" in err
    assert "--api-key-env" not in err.replace("--agent-api-key-env", "")


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the other end closed (EIO on Linux)
            return b"".join(chunks)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_on_a_terminal_the_run_draws_one_bar(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """``dynsteer run`` with stderr on a pseudo-terminal draws one bar in place (scenarios done of total, halts and crashes),
    coloured; ToolSandbox's per-rollout bars never appear, and stdout (a pipe) gets plain verdicts. (NO_COLOR: the bar is
    the run command's ``RunProgress``, whose colour test_progress.py checks with NO_COLOR set.)"""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"PYTHONPATH": str(REPO), "TERM": "xterm", "COLUMNS": "120"}
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dynsteer_hook.cli", "run", "--agent", "Scripted", "--user", "Scripted", "--script",
             str(SCRIPTS / "looping_agent.json"), "-s", B, "-p", "1", "-o", str(tmp_path)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=tmp_path)
        os.close(slave)
        drawn = _read_all(master).decode("utf-8")
        stdout = proc.stdout.read().decode("utf-8") if proc.stdout else ""
        assert proc.wait(timeout=300) == 0, drawn
    finally:
        os.close(master)
    frames = [f for f in drawn.replace("\x1b[K", "").split("\r") if f.strip()]
    plain = [re.sub(r"\x1b\[\d+m", "", f) for f in frames]
    assert plain[0].startswith("dynsteer run [------------------------] 0/1 scenarios, 0 halted, 0 crashed")
    assert "[########################] 1/1 scenarios, 1 halted, 0 crashed" in plain[-1]
    assert "\x1b[33m1 halted\x1b[0m" in drawn
    assert "it/s" not in drawn and B not in drawn and "Number of test cases" not in drawn + stdout  # no ToolSandbox output
    assert f"{B}: HALTED frontier_stagnation" in stdout and "\x1b" not in stdout
