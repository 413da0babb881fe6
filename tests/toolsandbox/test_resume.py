"""``dynsteer run --resume RUN_DIR``: a run killed (SIGKILL) or interrupted (SIGINT) at several points and then resumed ends
with the summaries of the same run played without a stop; what the run folder holds decides what is kept, and a folder made
with other flags, an older folder or a planted link is refused in one sentence."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ts_support import SCRIPTS, A, B, C, D, E

from dynsteer_hook.cli import main
from dynsteer_hook.toolsandbox.live.resume import MANIFEST, RESULT_FILE, SUPERSEDED, resume, whole_result
from dynsteer_hook.toolsandbox.similarity import INTERRUPTED as SIMILARITY_CUT

ROOT = Path(__file__).resolve().parents[2]
NAMES = [A, B, C, D, E]
# Where each scenario's moves come from: clean solvers, looping agents (halted) and a minefield-stepping agent (halted).
MOVES = {A: "clean_solver", B: "looping_agent", C: "clean_solver", D: "minefield_agent", E: "looping_agent"}


def mixed_script(folder: Path) -> Path:
    """One script of the shipped agents' moves: completed, halted and first-error scenarios in one run."""
    script = {name: json.loads((SCRIPTS / f"{source}.json").read_text(encoding="utf-8"))[name] for name, source in MOVES.items()}
    path = folder / "mixed.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    return path


def argv(script: Path, *more: str) -> list[str]:
    return ["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(script), "-s", *NAMES, *more]


def only_dir(base: Path) -> Path:
    dirs = [p for p in base.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def _timeless(value: Any) -> Any:
    """A summary without what differs between two plays of the same run (seconds, the checkout's state)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if not k.endswith("seconds") and k != "git_sha"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def summaries(run: Path) -> dict[str, Any]:
    """What a run's summaries say of its scenarios: scores, outcomes, halts, stops, first errors, similarities."""
    dyn = json.loads((run / "dynsteer_summary.json").read_text(encoding="utf-8"))
    res = json.loads((run / "result_summary.json").read_text(encoding="utf-8"))
    dyn["per_scenario"] = sorted(dyn["per_scenario"], key=lambda r: r["name"])
    res["per_scenario_results"] = sorted(res["per_scenario_results"], key=lambda r: r["name"])
    return _timeless({"dynsteer_summary": dyn, "result_summary": res})


@pytest.fixture(scope="module")
def baseline(scenarios: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The mixed script, and the run it makes when nothing stops it."""
    folder = tmp_path_factory.mktemp("baseline")
    script = mixed_script(folder)
    assert main(argv(script, "-p", "1", "-o", str(folder / "out"))) == 0
    return script, only_dir(folder / "out")


def test_the_uninterrupted_run_holds_completions_halts_and_first_errors(baseline: tuple[Path, Path]) -> None:
    """The run compared against is no trivial one: it completes some scenarios, halts others and finds first errors."""
    _, run = baseline
    dyn = json.loads((run / "dynsteer_summary.json").read_text(encoding="utf-8"))
    assert dyn["outcomes"].get("completed") == 2 and dyn["halted"] == 3, dyn["outcomes"]
    assert any(r["first_error"] for r in dyn["per_scenario"])
    assert sorted(p.parent.name for p in run.glob(f"trajectories/*/{RESULT_FILE}")) == sorted(NAMES)
    assert json.loads((run / MANIFEST).read_text(encoding="utf-8"))["scenarios"] == sorted(NAMES)


def _results_on_disk(base: Path) -> tuple[int, int]:
    """(scenarios finished, scenarios started) of the one run folder under ``base`` so far."""
    return len(list(base.glob(f"*/trajectories/*/{RESULT_FILE}"))), len(list(base.glob("*/trajectories/*/dynsteer_audit.jsonl")))


def _stopped_run(script: Path, out: Path, sig: signal.Signals, finished: int, processes: int) -> tuple[int, str]:
    """``dynsteer run`` in a process of its own, sent ``sig`` (to its whole process group: the workers too) once ``finished``
    scenarios have written their records (0: once the first rollout has started); its exit status and stderr."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "dynsteer_hook.cli", *argv(script, "-p", str(processes), "-o", str(out))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while True:
            done, started = _results_on_disk(out) if out.is_dir() else (0, 0)
            if (done >= finished and started > 0) or proc.poll() is not None:
                break
            assert time.monotonic() < deadline, "the run never got that far"
            time.sleep(0.01)
        os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return proc.returncode, err


@pytest.mark.parametrize(
    ("sig", "finished", "processes"),
    [pytest.param(signal.SIGKILL, 0, 1, id="kill-in-the-first-rollout"),
     pytest.param(signal.SIGKILL, 2, 1, id="kill-after-two"),
     pytest.param(signal.SIGKILL, 3, 2, id="kill-after-three-p2"),
     pytest.param(signal.SIGINT, 1, 1, id="ctrl_c-after-one"),
     pytest.param(signal.SIGINT, 2, 2, id="ctrl_c-after-two-p2")],
)
def test_a_stopped_run_resumed_has_the_summaries_of_the_run_never_stopped(
    baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], sig: signal.Signals, finished: int, processes: int
) -> None:
    """Killed or interrupted at several points (in a rollout, between rollouts, with workers), then resumed: both summaries
    (scores, outcomes, halts and their stops, first errors, ToolSandbox's similarities and category means) equal the
    uninterrupted run's, the run page lists every scenario, no finished scenario was played again, and the files of every
    unfinished one are kept under superseded/."""
    script, reference = baseline
    status, err = _stopped_run(script, tmp_path / "out", sig, finished, processes)
    assert status in ((-signal.SIGKILL,) if sig == signal.SIGKILL else (130, 0)), err
    assert "Traceback" not in err
    run = only_dir(tmp_path / "out")
    records = {p.parent.name: p.stat().st_mtime_ns for p in run.glob(f"trajectories/*/{RESULT_FILE}")
               if whole_result(p.parent, p.parent.name, reports=True) is not None}
    started = {p.name for p in (run / "trajectories").iterdir()} if (run / "trajectories").is_dir() else set()
    capsys.readouterr()
    assert main(argv(script, "-p", str(processes), "--resume", str(run))) == 0
    out = capsys.readouterr().out
    assert f"Resuming '{run}': {len(records)} scenario(s) kept, {len(NAMES) - len(records)} to play" in out
    assert summaries(run) == summaries(reference)
    page = (run / "index.html").read_text(encoding="utf-8")
    assert all(name in page for name in NAMES)
    assert {name: (run / "trajectories" / name / RESULT_FILE).stat().st_mtime_ns for name in records} == records  # kept, not replayed
    aside = sorted(p.name.rsplit(".", 1)[0] for p in (run / SUPERSEDED).iterdir()) if (run / SUPERSEDED).is_dir() else []
    assert aside == sorted(started - set(records))
    assert not list(run.rglob("*.tmp"))


def _copy(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / run.name
    shutil.copytree(run, copy, symlinks=True)
    return copy


def test_a_resume_of_a_finished_run_plays_nothing_and_writes_the_same_summaries(
    baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every record whole: nothing is played, and the summaries are written again as they were."""
    script, reference = baseline
    run = _copy(reference, tmp_path)
    assert main(argv(script, "--resume", str(run), "-o", str(tmp_path))) == 0
    assert "5 scenario(s) kept, 0 to play." in capsys.readouterr().out
    assert summaries(run) == summaries(reference) and not (run / SUPERSEDED).exists()


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# What a kill or a hand can leave in a finished scenario's folder; each makes the scenario one to play again.
DAMAGE = {
    "record cut in half": lambda t: _truncate(t / RESULT_FILE),
    "record missing": lambda t: (t / RESULT_FILE).unlink(),
    "record empty": lambda t: (t / RESULT_FILE).write_bytes(b""),
    "record of another scenario": lambda t: (t / RESULT_FILE).write_text(
        (t / RESULT_FILE).read_text(encoding="utf-8").replace(f'"name": "{t.name}"', f'"name": "{A}x"'), encoding="utf-8"),
    "record of an interrupted rollout": lambda t: (t / RESULT_FILE).write_text(json.dumps(
        {**json.loads((t / RESULT_FILE).read_text(encoding="utf-8")), "interrupted": "in_flight"}), encoding="utf-8"),
    "record of a crash": lambda t: (t / RESULT_FILE).write_text(json.dumps(
        {**json.loads((t / RESULT_FILE).read_text(encoding="utf-8")), "exception_type": "RuntimeError", "traceback": "boom"}),
        encoding="utf-8"),
    "record of a rollout whose similarity Ctrl-C cut": lambda t: (t / RESULT_FILE).write_text(json.dumps(
        {**json.loads((t / RESULT_FILE).read_text(encoding="utf-8")), "similarity": None, "similarity_unknown": SIMILARITY_CUT}),
        encoding="utf-8"),
    "record with a field no result has": lambda t: (t / RESULT_FILE).write_text(json.dumps(
        {**json.loads((t / RESULT_FILE).read_text(encoding="utf-8")), "extra": 1}), encoding="utf-8"),
    "record a link to a whole one": lambda t: ((t / RESULT_FILE).unlink(), (t / RESULT_FILE).symlink_to(
        t.parent / A / RESULT_FILE)),
    "report cut in half": lambda t: _truncate(t / "dynsteer_report.json"),
    "report missing": lambda t: (t / "dynsteer_report.json").unlink(),
    "Markdown report missing": lambda t: (t / "dynsteer_report.md").unlink(),
    "HTML report a folder": lambda t: ((t / "dynsteer_report.html").unlink(), (t / "dynsteer_report.html").mkdir()),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_scenario_whose_files_are_not_whole_is_played_again(baseline: tuple[Path, Path], tmp_path: Path, damage: str) -> None:
    """A damaged record or report makes its scenario one to play (its folder moved aside, whole), the others are kept."""
    _, reference = baseline
    run = _copy(reference, tmp_path)
    victim = run / "trajectories" / B
    DAMAGE[damage](victim)
    before = {p.relative_to(victim): p.read_bytes() if p.is_file() and not p.is_symlink() else None for p in victim.rglob("*")}
    sorted_out = resume(run, NAMES, reports=True)
    assert sorted_out.to_play == [B] and sorted(r["name"] for r in sorted_out.kept) == sorted(set(NAMES) - {B})
    aside = run / SUPERSEDED / f"{B}.1"
    assert sorted_out.superseded == [f"{SUPERSEDED}/{B}.1"] and not victim.exists()
    assert {p.relative_to(aside): p.read_bytes() if p.is_file() and not p.is_symlink() else None for p in aside.rglob("*")} == before


def test_a_whole_scenario_is_kept_with_its_record(baseline: tuple[Path, Path]) -> None:
    """The record kept is the one the scenario wrote, as result_summary.json holds it."""
    _, run = baseline
    entries = {r["name"]: r for r in json.loads((run / "result_summary.json").read_text(encoding="utf-8"))["per_scenario_results"]}
    assert whole_result(run / "trajectories" / D, D, reports=True) == json.loads(json.dumps(entries[D]))


def test_a_second_try_is_set_aside_beside_the_first(baseline: tuple[Path, Path], tmp_path: Path) -> None:
    """A scenario cut short twice keeps both tries: superseded/<name>.1 and .2, each as it was."""
    _, reference = baseline
    run = _copy(reference, tmp_path)
    for n in (1, 2):
        (run / "trajectories" / C).mkdir(exist_ok=True)
        (run / "trajectories" / C / RESULT_FILE).unlink(missing_ok=True)
        (run / "trajectories" / C / "dynsteer_audit.jsonl").write_text(f"try {n}\n", encoding="utf-8")
        assert resume(run, NAMES, reports=True).superseded == [f"{SUPERSEDED}/{C}.{n}"]
    assert [(run / SUPERSEDED / f"{C}.{n}" / "dynsteer_audit.jsonl").read_text(encoding="utf-8") for n in (1, 2)] == ["try 1\n", "try 2\n"]


# ---- refusals: one sentence, exit 2, nothing changed ----------------------------------------------------------------


def _refused(args: list[str], capsys: pytest.CaptureFixture[str], run: Path) -> str:
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and not p.is_symlink()}
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("dynsteer: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and not p.is_symlink()} == before
    return err


@pytest.mark.parametrize(
    ("change", "said"),
    [pytest.param(["--n-stag", "3"], "was made with --n-stag 8, not 3;", id="threshold"),
     pytest.param(["--set", "theta_fail=0.4"], "was made with --theta-fail", id="threshold-by-set"),
     pytest.param(["--max-parallel-calls", "4"], "was made with --max-parallel-calls 32, not 4;", id="limit"),
     pytest.param(["--no-events"], "was made with --no-events false, not true;", id="events"),
     pytest.param(["--evaluator", "native"], "was made with --evaluator dynsteer, not native;", id="evaluator")],
)
def test_a_folder_made_with_another_flag_is_refused_naming_the_flag(
    baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], change: list[str], said: str
) -> None:
    """A flag that changes results and differs from the run's: one sentence naming it, its two values and the fix."""
    script, reference = baseline
    run = _copy(reference, tmp_path)
    err = _refused(argv(script, "--resume", str(run), *change), capsys, run)
    assert said in err and f"--resume {run}" in err and "start a new run without --resume" in err


def test_another_agent_another_script_or_other_scenarios_are_refused(
    baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent, the script's content and the scenario selection are the run's too."""
    script, reference = baseline
    run = _copy(reference, tmp_path)
    other = tmp_path / "other.json"
    other.write_text(script.read_text(encoding="utf-8").replace("get_cellular_service_status", "get_wifi_status", 1), encoding="utf-8")
    assert "was made with another --script (its content differs)" in _refused(
        argv(other, "--resume", str(run)), capsys, run)
    fewer = ["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(script), "-s", A, B, "--resume", str(run)]
    assert "was made with other scenarios (-s/--scenarios, -t): 5 of them, where this command selects 2" in _refused(fewer, capsys, run)
    litellm = ["run", "--agent", "LiteLLM", "--agent-model", "openai/x", "--agent-api-base", "http://127.0.0.1:9/v1",
               "--agent-api-key-env", "PATH", "--user", "Scripted", "--script", str(script), "-s", *NAMES, "--resume", str(run)]
    assert 'was made with --agent Scripted, not LiteLLM;' in _refused(litellm, capsys, run)


def test_a_changed_blueprint_is_refused(baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--blueprints naming a folder whose blueprint of a scenario differs from the one the run played."""
    from dynsteer_hook.toolsandbox.live.preflight import default_blueprint_dir

    script, reference = baseline
    run = _copy(reference, tmp_path)
    folder = tmp_path / "bps"
    folder.mkdir()
    for name in NAMES:
        shutil.copy(default_blueprint_dir() / f"{name}.json", folder)
    assert main(argv(script, "--blueprints", str(folder), "--resume", str(run), "-o", str(tmp_path))) == 0  # the same content
    bp = json.loads((folder / f"{C}.json").read_text(encoding="utf-8"))
    (folder / f"{C}.json").write_text(json.dumps(bp, indent=1), encoding="utf-8")
    assert f"was made with another blueprint of {C} (--blueprints: its content differs)" in _refused(
        argv(script, "--blueprints", str(folder), "--resume", str(run)), capsys, run)


@pytest.mark.parametrize(
    ("plant", "said"),
    [pytest.param(lambda run, elsewhere: (run / MANIFEST).unlink(), "holds no dynsteer_run.json: it was made by a dynsteer older than "
                  "--resume, or is no run folder", id="older-folder-without-manifest"),
     pytest.param(lambda run, elsewhere: _truncate(run / MANIFEST), "its dynsteer_run.json is not valid JSON", id="manifest-cut"),
     pytest.param(lambda run, elsewhere: ((run / MANIFEST).rename(elsewhere / MANIFEST), (run / MANIFEST).symlink_to(elsewhere / MANIFEST)),
                  "its dynsteer_run.json is a link, a pipe, a folder or too large", id="manifest-a-link"),
     pytest.param(lambda run, elsewhere: (shutil.rmtree(run / "trajectories" / B), (run / "trajectories" / B).symlink_to(elsewhere)),
                  "is a symbolic link", id="scenario-folder-a-link"),
     pytest.param(lambda run, elsewhere: (run / SUPERSEDED).symlink_to(elsewhere), "is a symbolic link", id="superseded-a-link"),
     pytest.param(lambda run, elsewhere: (shutil.rmtree(run / "trajectories"), (run / "trajectories").symlink_to(elsewhere)),
                  "is a symbolic link", id="trajectories-a-link")],
)
def test_an_older_damaged_or_planted_folder_is_refused(
    baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], plant: Any, said: str
) -> None:
    """No manifest (a folder of an older dynsteer: its flags are unknown), a damaged one, or a link planted where the run
    reads or writes: one sentence, exit 2, and nothing written, here or where the link leads."""
    script, reference = baseline
    run = _copy(reference, tmp_path / "copy")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plant(run, elsewhere)
    before = sorted(p.name for p in elsewhere.iterdir())
    assert said in _refused(argv(script, "--resume", str(run)), capsys, run)
    assert sorted(p.name for p in elsewhere.iterdir()) == before


def test_resume_names_a_folder_and_only_its_own_parent_as_output(
    baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--resume of a missing folder, or with an -o that is not the folder holding the run: one sentence each."""
    script, reference = baseline
    run = _copy(reference, tmp_path)
    assert "is not a folder" in _refused(argv(script, "--resume", str(tmp_path / "nope")), capsys, run)
    assert "writes in its own folder, which is not in -o/--output_dir" in _refused(
        argv(script, "--resume", str(run), "-o", str(tmp_path / "other")), capsys, run)


def test_gates_judge_the_whole_resumed_run(baseline: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--max-halt-rate on a resume counts the halts of the scenarios kept as well as of those played now."""
    script, reference = baseline
    run = _copy(reference, tmp_path)
    shutil.rmtree(run / "trajectories" / A)  # a completed one to play; the three halted ones are kept
    assert main(argv(script, "--resume", str(run), "--max-halt-rate", "0.5")) == 3
    err = capsys.readouterr().err
    assert "halt rate" in err and "0.600" in err, err
