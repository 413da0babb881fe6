"""Hostile output places: every output folder flag of every command, pointed where it cannot write.

Each case asserts exit status 2, one sentence on stderr naming the place and the fix (no
traceback), that nothing was written (every file under the test's folder has the same
bytes, none appeared), and, for the ToolSandbox commands, that the check came before the
scenarios were loaded. To add a case, add a row to ``PLACES`` (a bad place) or to
``COMMANDS`` (a command that writes); every pair is tested. Standard output faults (a full
device, a reader that stops early) have their own table below.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from builders import family
from llm_graphs import VIEW
from test_hostile_files import TRACE, snapshot

from dynsteer_hook.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "dynsteer_hook" / "data" / "scripts" / "clean_solver.json"
CHAIN = family("chain").blueprint()


@dataclass(frozen=True)
class Place:
    """A bad output place: ``make`` prepares it under the workspace and returns the path to pass."""

    name: str
    make: Callable[[Path, tuple[str, ...]], Path]  # (workspace, names of the files the command writes there)
    needle: str
    marks: tuple[pytest.MarkDecorator, ...] = ()


def _file(ws: Path, files: tuple[str, ...]) -> Path:
    (ws / "taken").write_text("an earlier file\n", encoding="utf-8")
    return ws / "taken"


def _under_file(ws: Path, files: tuple[str, ...]) -> Path:
    return _file(ws, files) / "sub"


def _dangling_link(ws: Path, files: tuple[str, ...]) -> Path:
    (ws / "link").symlink_to(ws / "nowhere")
    return ws / "link"


def _read_only(ws: Path, files: tuple[str, ...]) -> Path:
    (ws / "locked").mkdir()
    (ws / "locked").chmod(0o555)
    return ws / "locked" / "out"


def _target_is_dir(ws: Path, files: tuple[str, ...]) -> Path:
    (ws / "out" / files[0]).mkdir(parents=True)
    return ws / "out"


PLACES = [
    Place("is_a_file", _file, "is a file, not a directory"),
    Place("under_a_file", _under_file, "is a file, not a directory"),
    Place("under_a_device", lambda ws, files: Path(os.devnull) / "out", "is a device or a pipe, not a directory"),
    Place("dangling_link", _dangling_link, "is a link to nowhere, not a directory"),
    # /proc refuses new files even to root: the probe that stands for every unwritable place.
    Place("pseudo_filesystem", lambda ws, files: Path("/proc") / "dynsteer-test" / "out", "cannot be written"),
    Place("read_only_folder", _read_only, "cannot be written",
          (pytest.mark.unprivileged,)),  # as root, without its power to ignore permission bits (tests/privileges.py)
    Place("output_file_is_a_folder", _target_is_dir, "is a directory, where a file will be written"),
]


@dataclass(frozen=True)
class Command:
    """A command that writes into a folder: ``argv`` from the workspace and the folder; the files it writes there."""

    name: str
    argv: Callable[[Path, Path], list[str]]
    files: tuple[str, ...]
    toolsandbox: bool = False  # a ToolSandbox subcommand: the check must come before its scenarios load


COMMANDS = [
    Command("evaluate", lambda ws, out: ["evaluate", "--blueprint", str(ws / "bp.json"), "--events", str(ws / "trace.jsonl"),
                                         "--report", str(out)], ("dynsteer_report.json", "dynsteer_audit.jsonl", "dynsteer_report.md", "dynsteer_report.html")),
    Command("compile", lambda ws, out: ["compile", "--view", str(ws / "view.json"), "-o", str(out)], (f"{VIEW.task}.json",)),
    Command("run", lambda ws, out: ["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPT), "-s", "cellular_off",
                                    "-p", "1", "-o", str(out)], (), toolsandbox=True),
    Command("demo", lambda ws, out: ["demo", "-o", str(out)], (), toolsandbox=True),
    Command("blueprint_eval", lambda ws, out: ["blueprint-eval", "-s", "cellular_off", "-o", str(out)],
            ("blueprint_eval.csv", "blueprint_eval.json"), toolsandbox=True),
    Command("diff", lambda ws, out: ["diff", str(ws / "run_a"), str(ws / "run_b"), "-o", str(out)], ("diff.html", "diff.md", "diff.json")),
]


def _runs(ws: Path) -> None:
    """Two small run folders for ``diff`` to read (a summary each, one scenario with its dynsteer score)."""
    for name, score in (("run_a", 1.0), ("run_b", 0.5)):
        (ws / name).mkdir()
        entry = {"name": "cellular_off", "categories": [], "similarity": 1.0, "dynsteer": {"outcome": "completed", "score": score}}
        (ws / name / "result_summary.json").write_text(json.dumps({"per_scenario_results": [entry]}), encoding="utf-8")


CASES = [
    pytest.param(cmd, place, id=f"{cmd.name}-{place.name}", marks=place.marks + ((pytest.mark.toolsandbox,) if cmd.toolsandbox else ()))
    for cmd in COMMANDS
    for place in PLACES
    if cmd.files or place.name != "output_file_is_a_folder"  # run and demo write into a new folder of their own
]


@pytest.mark.parametrize(("cmd", "place"), CASES)
def test_hostile_output_place(cmd: Command, place: Place, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """An output place that cannot be written ends in one sentence naming it, exit status 2, nothing written, nothing loaded first."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "bp.json").write_text(CHAIN.to_json(), encoding="utf-8")
    (ws / "trace.jsonl").write_bytes(TRACE)
    (ws / "view.json").write_text(VIEW.model_dump_json(), encoding="utf-8")
    _runs(ws)
    out = place.make(ws, cmd.files)
    if cmd.toolsandbox:
        from dynsteer_hook.toolsandbox.live import runner

        def never(*_: object, **__: object) -> None:
            raise AssertionError("scenarios were loaded before the output place was checked")

        monkeypatch.setattr(runner, "load_scenarios", never)
    before = snapshot(ws)
    try:
        code = main(cmd.argv(ws, out))
    finally:
        if (ws / "locked").exists():
            (ws / "locked").chmod(0o755)  # let pytest clean up
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("dynsteer: error: "), err
    assert place.needle in err and str(out) in err, err
    assert snapshot(ws) == before


def test_evaluate_into_a_symlinked_folder_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A --report folder reached through a link is a folder like any other (the checks do not refuse it)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "bp.json").write_text(CHAIN.to_json(), encoding="utf-8")
    (tmp_path / "trace.jsonl").write_bytes(TRACE)
    code = main(["evaluate", "--blueprint", str(tmp_path / "bp.json"), "--events", str(tmp_path / "trace.jsonl"), "--report", str(tmp_path / "link")])
    assert code == 0 and "completed" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["dynsteer_audit.jsonl", "dynsteer_report.html", "dynsteer_report.json", "dynsteer_report.md"]


# ---- standard output --------------------------------------------------------------------------------------------------


def _cli(*args: str, stdout: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "dynsteer_hook.cli", *args], stdout=stdout, stderr=subprocess.PIPE, env=env)


def test_full_standard_output_is_one_sentence(tmp_path: Path) -> None:
    """Standard output on a full device (/dev/full) ends in one sentence and exit status 2, not a traceback."""
    with open("/dev/full", "wb") as full:
        proc = _cli("schema", "report", stdout=full.fileno())
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.decode() == "dynsteer: error: standard output cannot be written (No space left on device); redirect it to a writable place\n"


def test_reader_that_stops_early_ends_the_command_quietly(tmp_path: Path) -> None:
    """A reader that is gone before the output comes (| head -c 0) ends the command with status 141 and nothing on stderr."""
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)  # one page: the schema (about 17 KB) cannot fit, so the writer must block
    proc = _cli("schema", "report", stdout=write)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        assert pipe.read(1) == b"{"  # then close it with the rest unread (the schema is larger than the pipe's buffer)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 141 and err == b""

