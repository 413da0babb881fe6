"""File I/O at the edge: blueprint files, event files, the audit log as it happens, atomic reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from builders import UserMessage, act, call, family, settle_events

from dynsteer_hook.files import outputs as storage
from dynsteer_hook.files.blueprints import load_blueprint, save_blueprint
from dynsteer_hook.files.events import EventLog, read_events
from dynsteer_hook.files.outputs import JsonlSink, write_text_atomic
from dynsteer_hook.model.errors import BlueprintError, EventFileError, Halt
from dynsteer_hook.model.events import ToolCall
from dynsteer_hook.model.records import Report
from dynsteer_hook.report.writer import AUDIT_LOG, REPORT_JSON, REPORT_MD, write_report
from dynsteer_hook.runtime.evaluator import Evaluator

CHAIN = family("chain").blueprint()
MINES = family("minefield_off_path").blueprint()
ROOT = Path(__file__).resolve().parent.parent


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---- blueprints -------------------------------------------------------------------------------------


def test_blueprint_save_load_round_trip(tmp_path: Path) -> None:
    """A saved blueprint loads back equal, in canonical form."""
    path = tmp_path / "sub" / "bp.json"
    save_blueprint(CHAIN, path)
    assert load_blueprint(path) == CHAIN
    assert path.read_text(encoding="utf-8") == CHAIN.to_json()


def test_missing_blueprint_file(tmp_path: Path) -> None:
    """A missing blueprint file is one sentence naming the path and the fix."""
    with pytest.raises(BlueprintError, match=r"blueprint file .*nope\.json does not exist; pass the path of a blueprint JSON file"):
        load_blueprint(tmp_path / "nope.json")


def test_blueprint_path_is_a_directory(tmp_path: Path) -> None:
    """A directory where a blueprint file is expected is named as a directory."""
    with pytest.raises(BlueprintError, match="is a directory, not a file"):
        load_blueprint(tmp_path)


def test_blueprint_file_not_json_names_the_file(tmp_path: Path) -> None:
    """A blueprint file that is not JSON is reported under its file name."""
    path = tmp_path / "bp.json"
    path.write_text("not json", encoding="utf-8")
    with pytest.raises(BlueprintError, match=rf"^blueprint file {path} is not valid JSON"):
        load_blueprint(path)


# ---- event files ------------------------------------------------------------------------------------------


def test_event_log_round_trip(tmp_path: Path) -> None:
    """Events written by EventLog read back identical, with the meta line (free-form info included) skipped."""
    events = [*settle_events(["a", "b"]), ToolCall("x", "t", None, "{raw")]
    log = EventLog(tmp_path / "trace.jsonl")
    log.meta(task="demo", seed=3)
    for e in events:
        log.write(e)
    log.close()
    meta = _lines(tmp_path / "trace.jsonl")[0]
    assert (meta["kind"], meta["format"], meta["task"]) == ("meta", "dynsteer-events", "demo")
    assert list(read_events(tmp_path / "trace.jsonl")) == events


def test_missing_event_file(tmp_path: Path) -> None:
    """A missing event file is one sentence naming the path."""
    with pytest.raises(EventFileError, match=r"event file .*none\.jsonl does not exist"):
        list(read_events(tmp_path / "none.jsonl"))


def test_malformed_event_line_names_its_number(tmp_path: Path) -> None:
    """The error for a malformed line names the file and its 1-based line number, after the good lines were read."""
    path = tmp_path / "trace.jsonl"
    path.write_text('{"kind": "user_message", "content": "hi"}\n\n{"kind": "tool_call"\n', encoding="utf-8")
    got = []
    with pytest.raises(EventFileError, match=rf"^event file {path} line 3 is not valid JSON"):
        for e in read_events(path):
            got.append(e)
    assert got == [UserMessage("hi")]


def test_event_file_not_utf8(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 are reported as such."""
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"kind": "user_message", "content": "\xff\xfe"}\n')
    with pytest.raises(EventFileError, match="is not UTF-8 text"):
        list(read_events(path))


# ---- the audit log -------------------------------------------------------------------------------------------


def test_audit_file_is_readable_after_every_event(tmp_path: Path) -> None:
    """After each observe() the audit file holds only complete, parseable JSON lines, and grows as stages happen."""
    path = tmp_path / AUDIT_LOG
    counts = []
    with JsonlSink(path) as sink:
        ev = Evaluator(CHAIN, sink=sink)
        for e in settle_events(["a", "b", "c"]):
            ev.observe(e)
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            assert all(line.endswith("\n") for line in lines)
            records = [json.loads(line) for line in lines]
            counts.append(len(records))
        ev.finish()
    # start, then step+stage after each result (k = 3, 5, 7)
    assert counts == [1, 1, 3, 3, 5, 5, 7]
    assert [r["type"] for r in _lines(path)] == ["start", "step", "stage", "step", "stage", "step", "stage", "end"]


def test_audit_file_holds_the_stop_when_halted(tmp_path: Path) -> None:
    """When a halt propagates, the stop record is already on disk."""
    path = tmp_path / AUDIT_LOG
    with JsonlSink(path) as sink:
        ev = Evaluator(MINES, sink=sink)
        with pytest.raises(Halt):
            ev.observe(call("1", "delete_all"))
        assert _lines(path)[-1]["type"] == "stop"


def test_jsonl_sink_truncates_or_appends(tmp_path: Path) -> None:
    """A new sink truncates by default and appends when asked; close is idempotent."""
    path = tmp_path / "log.jsonl"
    for truncate in (True, True, False):
        sink = JsonlSink(path, truncate=truncate)
        sink.write({"n": 1})
        sink.close()
        sink.close()
    assert _lines(path) == [{"n": 1}, {"n": 1}]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_process_leaves_a_readable_audit_prefix(tmp_path: Path) -> None:
    """A process killed mid-run leaves an audit log of complete lines and no report file."""
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT / "tests")!r})
        from builders import family, settle_events
        from dynsteer_hook.runtime.evaluator import Evaluator
        from dynsteer_hook.files.outputs import JsonlSink
        sink = JsonlSink({str(tmp_path / AUDIT_LOG)!r})
        ev = Evaluator(family("chain").blueprint(), sink=sink)
        for e in settle_events(["a", "b"]):
            ev.observe(e)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, check=False)
    assert proc.returncode == -signal.SIGKILL
    records = _lines(tmp_path / AUDIT_LOG)
    assert [r["type"] for r in records] == ["start", "step", "stage", "step", "stage"]
    assert not (tmp_path / REPORT_JSON).exists()


# ---- atomic reports -------------------------------------------------------------------------------------------


def _report() -> Report:
    ev = Evaluator(CHAIN)
    for e in [UserMessage("go"), *act("1", "op_a", {"x": "a"})]:
        ev.observe(e)
    return ev.finish()


def test_write_report_writes_json_and_markdown(tmp_path: Path) -> None:
    """write_report leaves a JSON report that validates as a Report, and its Markdown rendering."""
    report = _report()
    json_path, md_path = write_report(report, tmp_path / "out")
    assert (json_path.name, md_path.name) == (REPORT_JSON, REPORT_MD)
    assert Report.model_validate_json(json_path.read_text(encoding="utf-8")) == report
    assert md_path.read_text(encoding="utf-8").startswith("# DynSTEER report: chain")


def test_failed_rename_keeps_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the process dies before the rename, the old file is intact and no temporary file is left."""
    path = tmp_path / "report.json"
    write_text_atomic(path, "old\n")

    def die(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", die)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomic(path, "new\n")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_failed_write_keeps_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error while the temporary file is written never touches the target."""
    path = tmp_path / "report.json"
    write_text_atomic(path, "old\n")
    monkeypatch.setattr(storage, "_write_all", lambda _fd, _data: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        write_text_atomic(path, "new\n")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_rollouts_reports_land_together_unsynced_and_summaries_are_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The three files a rollout writes are renamed in as one group without a sync each (a run writes them per rollout);
    a file written once per run is synced before it is renamed in."""
    from dynsteer_hook.report.writer import REPORT_HTML, write_run_report

    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    bp = family("chain").blueprint()
    paths = write_run_report(Evaluator(bp).finish(), tmp_path / "scenario", bp)
    assert [p.name for p in paths] == [REPORT_JSON, REPORT_MD, REPORT_HTML] and all(p.is_file() for p in paths)
    assert synced == [] and sorted(p.name for p in (tmp_path / "scenario").iterdir()) == sorted(p.name for p in paths)
    write_text_atomic(tmp_path / "summary.json", "{}\n")
    assert len(synced) == 1


def test_atomic_write_replaces_content(tmp_path: Path) -> None:
    """A successful atomic write replaces the file's whole content."""
    path = tmp_path / "a" / "b.txt"
    write_text_atomic(path, "first\n")
    write_text_atomic(path, "second\n")
    assert path.read_text(encoding="utf-8") == "second\n"


def test_write_json_atomic(tmp_path: Path) -> None:
    """write_json_atomic writes indented UTF-8 JSON with a trailing newline."""
    storage.write_json_atomic(tmp_path / "x.json", {"name": "café"})
    text = (tmp_path / "x.json").read_text(encoding="utf-8")
    assert text == '{\n  "name": "café"\n}\n'
