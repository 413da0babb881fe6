"""File I/O at the edge: blueprints, event files, the audit log and reports.

Inputs are read whole-or-not-at-all into one sentence per problem (missing, a folder, a
pipe or device, unreadable, not UTF-8, empty, not JSON, nested too deeply). Reports are
written atomically, both files renamed into place together, so a killed process leaves
either the previous pair or the new one. The audit log is appended line by line, so a
killed process leaves a readable prefix (see ``outputs``).
"""

from __future__ import annotations

import importlib.resources
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynsteer_hook.model.blueprint import Blueprint, parse_blueprint
from dynsteer_hook.model.contract import validate_blueprint
from dynsteer_hook.model.errors import BlueprintError, DynsteerError, EventFileError
from dynsteer_hook.model.events import Event, event_to_record, parse_event_line
from dynsteer_hook.outputs import JsonlSink, StagedFiles, write_json_atomic, write_text_atomic
from dynsteer_hook.report import Report, render_markdown

__all__ = [
    "AUDIT_LOG", "MAX_JSON_DEPTH", "REPORT_JSON", "REPORT_MD", "EventLog", "JsonlSink", "check_events", "json_too_deep",
    "load_blueprint", "load_json_input", "load_valid_blueprint", "read_events", "read_input_text", "save_blueprint",
    "shipped_blueprint_dir", "stage_report", "write_json_atomic", "write_report", "write_text_atomic",
]

AUDIT_LOG = "dynsteer_audit.jsonl"


def shipped_blueprint_dir(benchmark: str = "toolsandbox") -> Path:
    """The blueprints shipped for a benchmark's scenarios: ``blueprints/<benchmark>`` inside the package.

    They are package data, so an installed wheel finds them beside its modules. In a source
    checkout ``dynsteer_hook/blueprints`` links to the repository's ``blueprints`` folder, the
    one ``dynsteer compile`` writes to by default, so the same lookup finds them there.
    """
    return Path(str(importlib.resources.files("dynsteer_hook"))) / "blueprints" / benchmark

REPORT_JSON = "dynsteer_report.json"
REPORT_MD = "dynsteer_report.md"
REPORT_FILES = (AUDIT_LOG, REPORT_JSON, REPORT_MD)

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects accepted in any JSON input (deeper input would exhaust the stack)."""


def read_input_text(path: str | Path, what: str, fix: str, error: type[DynsteerError]) -> str:
    """The UTF-8 text of an input file, or one sentence naming the file and the fix.

    Args:
        path: The file.
        what: How the message names it, e.g. ``"blueprint file"``.
        fix: What to do when it is missing or not a file, e.g. ``"pass the path of a blueprint JSON file"``.
        error: The exception type raised.
    """
    p = Path(path)
    try:
        mode = p.stat().st_mode
        if stat.S_ISDIR(mode):
            raise error(f"{what} {p} is a directory, not a file; {fix}")
        if not stat.S_ISREG(mode):  # a pipe or a device could block or never end
            raise error(f"{what} {p} is not a regular file (a pipe or a device); save it to a file and {fix}")
        data = p.read_bytes()
    except FileNotFoundError:
        raise error(f"{what} {p} does not exist; {fix}") from None
    except PermissionError:
        raise error(f"{what} {p} cannot be read (permission denied); check its permissions") from None
    except OSError as exc:
        raise error(f"{what} {p} cannot be read ({exc.strerror or exc}); {fix}") from None
    try:
        return data.decode("utf-8-sig")  # a byte-order mark some editors write is not content
    except UnicodeDecodeError as exc:
        raise error(f"{what} {p} is not UTF-8 text (byte {exc.start} cannot be decoded); save it as UTF-8 JSON") from None


def _depth(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d > limit:
                return True
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False


def json_too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON text nests arrays and objects deeper than ``limit`` (unparseable depth counts as too deep)."""
    if text.count("[") + text.count("{") <= limit:
        return False  # cannot nest deeper than it has brackets: the common case costs two scans
    try:
        return _depth(json.loads(text), limit)
    except RecursionError:
        return True
    except ValueError:
        return False  # not JSON: the parser's own message says so


def load_json_input(path: str | Path, what: str, fix: str, error: type[DynsteerError]) -> tuple[str, Any]:
    """Read and parse a JSON input file: its text and value, or one sentence naming the file."""
    text = read_input_text(path, what, fix, error)
    if not text.strip():
        raise error(f"{what} {path} is empty; {fix}")
    if json_too_deep(text):
        raise error(f"{what} {path} nests arrays and objects deeper than {MAX_JSON_DEPTH} levels; flatten it")
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{what} {path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); fix the file or regenerate it") from None


def load_blueprint(path: str | Path) -> Blueprint:
    """Read a blueprint file and check its shape and references.

    Raises:
        BlueprintError: The file is missing, unreadable or malformed (one sentence).
    """
    p = Path(path)
    text, _ = load_json_input(p, "blueprint file", "pass the path of a blueprint JSON file", BlueprintError)
    return parse_blueprint(text, source=f"blueprint file {p}")


def load_valid_blueprint(path: str | Path) -> Blueprint:
    """``load_blueprint`` plus the contract check the evaluator makes, so a run can refuse it before it starts."""
    bp = load_blueprint(path)
    violations = validate_blueprint(bp, None, bp.task or "blueprint")
    if violations:
        v = violations[0]
        where = f" at {v.node!r}" if v.node else ""
        raise BlueprintError(
            f"blueprint file {path} is not valid ({v.rule}{where}: {v.message}); fix it or recompile it with dynsteer compile "
            "(dynsteer validate lists every problem)"
        )
    return bp


def save_blueprint(bp: Blueprint, path: str | Path) -> None:
    """Write a blueprint in canonical form, atomically."""
    write_text_atomic(path, bp.to_json())


def read_events(path: str | Path) -> Iterator[Event]:
    """Events of a JSONL file, in order (meta and blank lines skipped), read as a stream.

    Raises:
        EventFileError: The file is missing, not a regular file, or a line is malformed (one sentence with the line number).
    """
    for _, event in read_numbered_events(path):
        yield event


def read_numbered_events(path: str | Path) -> Iterator[tuple[int, Event]]:
    """(line number, event) pairs of a JSONL file, in order (meta and blank lines skipped).

    Raises:
        EventFileError: The file is missing, not a regular file, or a line is malformed (one sentence with the line number).
    """
    p = Path(path)
    what = f"event file {p}"
    try:
        mode = p.stat().st_mode
        if stat.S_ISDIR(mode):
            raise EventFileError(f"{what} is a directory, not a file; pass the path of a JSONL event file")
        if not stat.S_ISREG(mode):  # a pipe cannot be checked first and read again
            raise EventFileError(f"{what} is not a regular file (a pipe or a device); save the events to a file first")
        f = p.open("rb")
    except FileNotFoundError:
        raise EventFileError(f"{what} does not exist; pass the path of a JSONL event file") from None
    except OSError as exc:
        raise EventFileError(f"{what} cannot be read ({exc.strerror or exc}); check its permissions") from None
    with f:
        lineno = 0
        while True:
            try:
                raw = f.readline()
            except OSError as exc:
                where = f" after line {lineno}" if lineno else ""
                raise EventFileError(f"{what} cannot be read{where} ({exc.strerror or exc}); check the file and its disk") from None
            if not raw:
                return
            lineno += 1
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                raise EventFileError(f"{what} line {lineno} is not UTF-8 text; write the file as UTF-8 JSON lines") from None
            if json_too_deep(line):
                raise EventFileError(f"{what} line {lineno} nests arrays and objects deeper than {MAX_JSON_DEPTH} levels; flatten that record")
            event = parse_event_line(line, lineno=lineno, source=what)
            if event is not None:
                yield lineno, event


def check_events(path: str | Path) -> int:
    """Read a whole event file once without keeping it; the number of events, or the first problem.

    Raises:
        EventFileError: As ``read_events``.
    """
    n = 0
    for _ in read_events(path):
        n += 1
    return n


class EventLog:
    """Writes events as JSONL records (the evaluator's input format), one whole line each."""

    def __init__(self, path: str | Path | JsonlSink) -> None:
        self.sink = path if isinstance(path, JsonlSink) else JsonlSink(path)

    def write(self, event: Event) -> None:
        self.sink.write(event_to_record(event))

    def meta(self, task: str | None = None, **info: Any) -> None:
        """Write a meta record (task name, format version, free-form info)."""
        self.sink.write({"kind": "meta", "format": "dynsteer-events", "version": 1, "task": task, "info": info})

    def close(self) -> None:
        self.sink.close()


def stage_report(staged: StagedFiles, report: Report, out_dir: str | Path) -> tuple[Path, Path]:
    """Stage the JSON and Markdown reports of ``report`` for ``out_dir`` (renamed in by ``staged.commit``)."""
    out = Path(out_dir)
    json_path, md_path = out / REPORT_JSON, out / REPORT_MD
    staged.text(json_path, report.model_dump_json(indent=2) + "\n")
    staged.text(md_path, render_markdown(report))
    return json_path, md_path


def write_report(report: Report, out_dir: str | Path) -> tuple[Path, Path]:
    """Write the JSON and Markdown reports into ``out_dir``: both new files, or (on an error) both old ones.

    Raises:
        OSError: A report could not be written; no temporary file is left.
    """
    os.makedirs(out_dir, exist_ok=True)
    with StagedFiles() as staged:
        paths = stage_report(staged, report, out_dir)
        staged.commit()
    return paths
