"""The gates of ``run``, ``rerun`` and ``replay`` on real scenarios played by the scripted agents: a gate met exits 0, a
gate failed exits 3 once every file is written and says in one sentence which gate and by how much, a crash (1) comes
before a failed gate (3) and both are said, and gates that cannot be judged are refused before anything plays (2).
(``diff``'s gates: test_diff.py.)"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from shipped_runs import ShippedRuns
from ts_support import BLUEPRINTS, SCRIPTS, A, B

from dynsteer_hook.cli import main

pytestmark = [pytest.mark.toolsandbox, pytest.mark.slow]

RUN_FILES = ("result_summary.json", "dynsteer_summary.json", "index.html")


def _only_dir(base: Path) -> Path:
    [run] = [p for p in base.iterdir() if p.is_dir()]
    return run


def _run(tmp_path: Path, script: str, scenario: str, *flags: str) -> int:
    return main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / f"{script}.json"), "-s", scenario,
                 "-p", "1", "-o", str(tmp_path / "out"), "--n-stag", "5", *flags])


@pytest.mark.parametrize(("script", "scenario", "flags", "code", "sentence"), [
    ("clean_solver", A, ["--fail-under", "0.9", "--max-halt-rate", "0"], 0, None),
    ("looping_agent", B, ["--max-halt-rate", "0.5"], 3,
     "dynsteer: a gate failed: the halt rate 1.000 (1 of 1 scenario(s) halted) is 0.500 over --max-halt-rate 0.5; every file was written"),
    ("looping_agent", B, ["--fail-under", "0.9"], 3, "under --fail-under 0.9; every file was written"),
], ids=["met", "halt_rate", "score"])
def test_run_exits_3_on_a_failed_gate_once_everything_is_written(scenarios: dict[str, Any], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str], script: str, scenario: str,
                                                                 flags: list[str], code: int, sentence: str | None) -> None:
    """The run's files are all written whatever the gates say; the verdicts are one stdout line; a failed gate is one
    sentence on stderr naming the gate and the amount, and exit 3."""
    assert _run(tmp_path, script, scenario, *flags) == code
    captured = capsys.readouterr()
    run = _only_dir(tmp_path / "out")
    assert all((run / name).is_file() for name in RUN_FILES) and (run / "trajectories" / scenario / "dynsteer_report.html").is_file()
    [verdicts] = [line for line in captured.out.splitlines() if line.startswith("gates: ")]
    gate_lines = [line for line in captured.err.splitlines() if line.startswith("dynsteer: ")]
    if sentence is None:
        assert "FAILED" not in verdicts and gate_lines == []
    else:
        assert "FAILED" in verdicts and len(gate_lines) == 1 and sentence in gate_lines[0], captured.err


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_a_crash_comes_before_a_failed_gate_and_both_are_said(scenarios: dict[str, Any], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """An agent that cannot be reached crashes its scenario: exit 1, not 3; stderr says the crash, then the failed gate."""
    users = tmp_path / "users.json"
    users.write_text(json.dumps({A: {"agent": [], "user": []}}))
    code = main(["run", "--agent", "LiteLLM", "--agent-model", "openai/fake-agent", "--agent-api-base", _closed_port(),
                 "--agent-max-retries", "0", "--user", "Scripted", "--script", str(users), "-s", A, "-p", "1", "-o", str(tmp_path / "out"),
                 "--fail-under", "0.5"])
    assert code == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("dynsteer: ")]
    assert len(err) == 2 and "1 of 1 scenario(s) crashed" in err[0]
    assert err[1] == ("dynsteer: a gate failed: no scenario was judged, so no mean dynsteer score can reach --fail-under 0.5; "
                      "every file was written")


@pytest.mark.parametrize(("flags", "needle"), [
    (["--evaluator", "native", "--fail-under", "0.5"], "drop --evaluator native, or drop the gates"),
    (["--max-halt-rate", "1.5"], "--max-halt-rate 1.5 must be a number from 0 to 1"),
])
def test_gates_that_cannot_be_judged_are_refused_before_anything_plays(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                       monkeypatch: pytest.MonkeyPatch, flags: list[str],
                                                                       needle: str) -> None:
    """Gates on a native run, or a bar outside 0 to 1: one sentence, exit 2, no scenario loaded, no folder made."""
    from dynsteer_hook.toolsandbox.live import runner

    def never(*_: object, **__: object) -> None:
        raise AssertionError("scenarios were loaded before the gates were checked")

    monkeypatch.setattr(runner, "load_scenarios", never)
    assert _run(tmp_path, "clean_solver", A, *flags) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def looping(shipped_runs: ShippedRuns, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The looping agent's live run (two scenarios, both halted), copied."""
    folder = tmp_path_factory.mktemp("gates") / "looping"
    shutil.copytree(shipped_runs("looping_agent").folder, folder)
    return folder


@pytest.mark.parametrize(("flags", "code", "needle"), [
    (["--max-halt-rate", "1"], 0, None),
    (["--max-halt-rate", "0"], 3, "the halt rate 1.000 (2 of 2 scenario(s) halted) is 1.000 over --max-halt-rate 0"),
    (["--fail-under", "0.95", "--max-halt-rate", "0"], 3, "dynsteer: 2 gates failed: the mean dynsteer score"),
], ids=["met", "halt_rate", "both"])
def test_replay_exits_3_on_a_failed_gate_once_everything_is_written(looping: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                    flags: list[str], code: int, needle: str | None) -> None:
    """Virtual stops count as halts; the summary and the run page are written whatever the gates say."""
    out = tmp_path / "replayed"
    assert main(["replay", str(looping), "-o", str(out), "--no-progress", "--blueprints", str(BLUEPRINTS), *flags]) == code
    err = capsys.readouterr().err
    assert (out / "replay_summary.json").is_file() and (out / "index.html").is_file()
    if needle is None:
        assert err == ""
    else:
        assert err.count("\n") == 1 and needle in err and err.endswith("; every file was written\n"), err


def test_replay_refuses_a_bar_out_of_range_before_replaying(looping: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(looping), "-o", str(tmp_path / "out"), "--no-progress", "--fail-under", "2"]) == 2
    assert "--fail-under 2 must be a number from 0 to 1" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_rerun_exits_3_on_a_failed_gate_once_everything_is_written(shipped_runs: ShippedRuns, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The minefield agent's native recording, re-executed live, is halted at the fatal call: --max-halt-rate 0 fails with
    exit 3 and the rerun's folder written whole; the same rerun with --evaluator native refuses gates (exit 2)."""
    recording = shipped_runs("minefield_agent", "native").folder
    assert main(["rerun", str(recording), "-o", str(tmp_path / "again"), "--max-halt-rate", "0"]) == 3
    err = capsys.readouterr().err
    assert "the halt rate 1.000 (1 of 1 scenario(s) halted) is 1.000 over --max-halt-rate 0" in err
    run = _only_dir(tmp_path / "again")
    assert all((run / name).is_file() for name in RUN_FILES)
    assert main(["rerun", str(recording), "-o", str(tmp_path / "native"), "--evaluator", "native", "--fail-under", "0.5"]) == 2
    assert "drop --evaluator native, or drop the gates" in capsys.readouterr().err and not (tmp_path / "native").exists()
