"""Hostile input files: every file a command reads, broken in every way we know of.

Each case runs the real command line and asserts exit status 2, exactly one sentence on
stderr that names the file (no traceback), and that nothing was written: every file that
existed before (an earlier run's audit log and reports, an earlier blueprint) has the same
bytes, and no file appeared. To add a case, add a row to ``MALFORMATIONS`` (a way to break a
file) or to ``KINDS`` (a file some command reads); every pair is tested.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from builders import family, settle_events
from llm_graphs import VIEW

from dynsteer_hook.cli import main
from dynsteer_hook.model.events import event_to_record

SCRIPTS = Path(__file__).resolve().parents[1] / "dynsteer_hook" / "data" / "scripts"
CHAIN = family("chain").blueprint()
TRACE = "".join(json.dumps(event_to_record(e)) + "\n" for e in settle_events(["a", "b", "c"])).encode()


@dataclass(frozen=True)
class Malformation:
    """A way to break an input file, and the phrase the sentence about it must contain."""

    name: str
    make: Callable[[Path, bytes], None]  # (where, the bytes of a good file of that kind)
    needle: str


def _write(data: bytes) -> Callable[[Path, bytes], None]:
    return lambda path, _good: path.write_bytes(data)


MALFORMATIONS = [
    Malformation("missing", lambda path, good: None, "does not exist"),
    Malformation("directory", lambda path, good: path.mkdir(), "is a directory, not a file"),
    Malformation("fifo", lambda path, good: os.mkfifo(path), "is not a regular file"),
    # Reading /proc/self/mem at offset 0 fails with EIO: an unreadable file, even for root.
    Malformation("unreadable", lambda path, good: path.symlink_to("/proc/self/mem"), "cannot be read"),
    Malformation("non_utf8", lambda path, good: path.write_bytes(good.replace(b'"', b'"\xff', 1)), "not UTF-8"),
    Malformation("binary", _write(bytes(range(128, 256)) + bytes(range(128))), "not UTF-8"),
    Malformation("empty", _write(b""), "is empty"),
    Malformation("whitespace_only", _write(b" \n\t\n"), "is empty"),
    Malformation("nul_bytes", _write(b"\x00" * 64), "not valid JSON"),
    Malformation("not_json", _write(b"milestones: [a, b]\n"), "not valid JSON"),
    # Cut inside a record: never on a line end, where a shorter event file would still be whole.
    Malformation("truncated", lambda path, good: path.write_bytes(good[: len(good) // 2].rstrip(b"\n")[:-1]), "not valid JSON"),
    Malformation("nested_past_the_stack", _write(b"[" * 100_000 + b"]" * 100_000 + b"\n"), "deeper than 100 levels"),
    Malformation("nested_past_the_limit", _write(b"[" * 101 + b"]" * 101 + b"\n"), "deeper than 100 levels"),
    Malformation("wrong_shape", _write(b"[1, 2]\n"), "WRONG_SHAPE"),
    # 1e400 is a JSON number Python reads as infinity, which no JSON writer may write back.
    Malformation("number_past_a_float", lambda path, good: path.write_bytes(good.replace(b"{", b'{"n": 1e400, ', 1)),
                 "beyond the range of a float"),
]


@dataclass(frozen=True)
class Kind:
    """A file some command reads.

    ``argv`` builds the command line from the hostile file and a workspace holding good
    files: ``bp.json``, ``trace.jsonl``, ``view.json``, ``script.json`` and an earlier run's
    report folder ``prev``. ``needles`` overrides a malformation's phrase for this kind; a
    phrase of ``None`` means the kind accepts that input (the command exits 0).
    """

    name: str
    good: bytes
    argv: Callable[[Path, Path], list[str]]
    needles: dict[str, str | None] = field(default_factory=dict)
    marks: tuple[pytest.MarkDecorator, ...] = ()
    before_scenarios: bool = False  # a ToolSandbox command that must refuse the file before loading its scenarios


def _evaluate(bp: str, events: str) -> Callable[[Path, Path], list[str]]:
    def argv(hostile: Path, ws: Path) -> list[str]:
        files = {"bp": ws / "bp.json", "events": ws / "trace.jsonl", bp: hostile, events: hostile}
        return ["evaluate", "--blueprint", str(files["bp"]), "--events", str(files["events"]), "--report", str(ws / "prev")]
    return argv


KINDS = [
    Kind("blueprint_for_evaluate", CHAIN.to_json().encode(), _evaluate("bp", "-"),
         {"wrong_shape": "must hold a JSON object"}),
    Kind("blueprint_for_validate", CHAIN.to_json().encode(), lambda hostile, ws: ["validate", str(hostile)],
         {"wrong_shape": "must hold a JSON object"}),
    # An empty trace is a run without events: evaluated (incomplete), not an error.
    Kind("event_file", TRACE, _evaluate("-", "events"),
         {"wrong_shape": "has no 'kind'", "empty": None, "whitespace_only": None, "non_utf8": "line 1 is not UTF-8"}),
    Kind("task_view_for_compile", VIEW.model_dump_json().encode(),
         lambda hostile, ws: ["compile", "--view", str(hostile), "-o", str(ws / "blueprints")], {"wrong_shape": "is not a TaskView"}),
    Kind("script_for_run", (SCRIPTS / "clean_solver.json").read_bytes(),
         lambda hostile, ws: ["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(hostile), "-s", "cellular_off",
                              "-p", "1", "-o", str(ws / "runs")],
         {"wrong_shape": "must map scenario names to scripts"}, (pytest.mark.toolsandbox,), before_scenarios=True),
]


def _workspace(ws: Path) -> None:
    """Good inputs, and the files of an earlier evaluate run and an earlier compile."""
    ws.mkdir()
    (ws / "bp.json").write_text(CHAIN.to_json(), encoding="utf-8")
    (ws / "trace.jsonl").write_bytes(TRACE)
    assert main(["evaluate", "--blueprint", str(ws / "bp.json"), "--events", str(ws / "trace.jsonl"), "--report", str(ws / "prev")]) == 0
    (ws / "blueprints").mkdir()
    (ws / "blueprints" / f"{VIEW.task}.json").write_text('{"earlier": "blueprint"}\n', encoding="utf-8")
    (ws / "runs").mkdir()


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: a regular file's bytes, a link's target, or a kind (never opening a pipe or a device)."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = f"-> {os.readlink(p)}"
            elif p.is_file():
                out[rel] = p.read_bytes()
            else:
                out[rel] = "dir" if p.is_dir() else "special"
    return out


CASES = [
    pytest.param(kind, bad, id=f"{kind.name}-{bad.name}", marks=kind.marks)
    for kind in KINDS
    for bad in MALFORMATIONS
]


@pytest.mark.parametrize(("kind", "bad"), CASES)
def test_hostile_input_file(kind: Kind, bad: Malformation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """A broken input file ends in one sentence naming it, exit status 2, and nothing written (or is accepted where it is a valid input)."""
    if kind.before_scenarios:
        from dynsteer_hook.toolsandbox.live import runner

        monkeypatch.setattr(runner, "load_scenarios", lambda *_a, **_k: pytest.fail("scenarios were loaded before the file was checked"))
    ws = tmp_path / "ws"
    _workspace(ws)
    hostile = tmp_path / f"hostile_{kind.name}"
    bad.make(hostile, kind.good)
    before = snapshot(ws)
    capsys.readouterr()
    code = main(kind.argv(hostile, ws))
    out, err = capsys.readouterr()
    needle = kind.needles.get(bad.name, bad.needle)
    if needle is None:
        assert code == 0 and err == "", err
        return
    assert code == 2, (out, err)
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("dynsteer: error: "), err
    assert str(hostile) in err and needle in err, err
    assert snapshot(ws) == before


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        pytest.param("[" * 100_000 + "]" * 100_000, "nests arrays and objects too deeply", id="nested_past_the_stack"),
        pytest.param('{"safety": "a"}', "config value initial_weights={'safety': 'a'} is not accepted", id="wrong_type"),
    ],
)
def test_hostile_json_flag_value(value: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A JSON value given with --set is checked like a file: one sentence, exit 2, nothing written."""
    ws = tmp_path / "ws"
    _workspace(ws)
    before = snapshot(ws)
    capsys.readouterr()
    code = main(["evaluate", "--blueprint", str(ws / "bp.json"), "--events", str(ws / "trace.jsonl"), "--report", str(ws / "prev"),
                 "--set", f"initial_weights={value}"])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert snapshot(ws) == before


def test_byte_order_mark_is_not_content(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A blueprint and an event file that start with a UTF-8 byte-order mark are read as if it were absent."""
    ws = tmp_path / "ws"
    _workspace(ws)
    (ws / "bp.json").write_bytes(b"\xef\xbb\xbf" + CHAIN.to_json().encode())
    (ws / "trace.jsonl").write_bytes(b"\xef\xbb\xbf" + TRACE)
    code = main(["evaluate", "--blueprint", str(ws / "bp.json"), "--events", str(ws / "trace.jsonl"), "--report", str(tmp_path / "new")])
    assert code == 0 and "completed; score 1.000; settled 3/3" in capsys.readouterr().out
