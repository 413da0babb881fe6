"""File I/O at the edge: blueprints, event files, the audit log and reports.

Reports are written atomically (temporary file, fsync, rename) so a killed process
leaves either the previous file or the new one, never a torn one. The audit log is
appended and flushed line by line, so a killed process leaves a readable prefix.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from dynsteer_hook.audit import Report, render_markdown
from dynsteer_hook.blueprint import Blueprint, parse_blueprint
from dynsteer_hook.errors import BlueprintError, EventFileError
from dynsteer_hook.events import Event, event_to_record, parse_event_line

AUDIT_LOG = "dynsteer_audit.jsonl"
REPORT_JSON = "dynsteer_report.json"
REPORT_MD = "dynsteer_report.md"


def load_blueprint(path: str | Path) -> Blueprint:
    """Read and check a blueprint file.

    Raises:
        BlueprintError: The file is missing, unreadable or malformed (one sentence).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BlueprintError(f"blueprint file {p} does not exist; pass the path of a blueprint JSON file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BlueprintError(f"blueprint file {p} cannot be read ({exc}); check its permissions and encoding") from None
    return parse_blueprint(text, source=f"blueprint file {p}")


def write_text_atomic(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write JSON (indented, UTF-8) atomically."""
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def save_blueprint(bp: Blueprint, path: str | Path) -> None:
    """Write a blueprint in canonical form, atomically."""
    write_text_atomic(path, bp.to_json())


def read_events(path: str | Path) -> Iterator[Event]:
    """Events of a JSONL file, in order (meta lines skipped).

    Raises:
        EventFileError: The file is missing or a line is malformed (one sentence).
    """
    for _, event in read_numbered_events(path):
        yield event


def read_numbered_events(path: str | Path) -> Iterator[tuple[int, Event]]:
    """(line number, event) pairs of a JSONL file, in order (meta and blank lines skipped).

    Raises:
        EventFileError: The file is missing or a line is malformed (one sentence).
    """
    p = Path(path)
    try:
        f = p.open(encoding="utf-8")
    except FileNotFoundError:
        raise EventFileError(f"event file {p} does not exist; pass the path of a JSONL event file") from None
    except OSError as exc:
        raise EventFileError(f"event file {p} cannot be read ({exc}); check its permissions") from None
    with f:
        try:
            for lineno, line in enumerate(f, start=1):
                event = parse_event_line(line, lineno=lineno, source=f"event file {p}")
                if event is not None:
                    yield lineno, event
        except UnicodeDecodeError:
            raise EventFileError(f"event file {p} is not UTF-8 text; write it as UTF-8 JSON lines") from None


class JsonlSink:
    """Appends one JSON record per line and flushes each, so a crash leaves a readable prefix."""

    def __init__(self, path: str | Path, *, truncate: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: TextIO = self.path.open("w" if truncate else "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._f.flush()

    def close(self) -> None:
        """Close the file (idempotent)."""
        if not self._f.closed:
            self._f.close()

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EventLog:
    """Writes events as JSONL records (the evaluator's input format), flushed per line."""

    def __init__(self, path: str | Path) -> None:
        self._sink = JsonlSink(path)

    def write(self, event: Event) -> None:
        self._sink.write(event_to_record(event))

    def meta(self, task: str | None = None, **info: Any) -> None:
        """Write a meta record (task name, format version, free-form info)."""
        self._sink.write({"kind": "meta", "format": "dynsteer-events", "version": 1, "task": task, "info": info})

    def close(self) -> None:
        self._sink.close()


def write_report(report: Report, out_dir: str | Path) -> tuple[Path, Path]:
    """Write the JSON and Markdown reports into ``out_dir``, atomically."""
    out = Path(out_dir)
    json_path, md_path = out / REPORT_JSON, out / REPORT_MD
    write_text_atomic(json_path, report.model_dump_json(indent=2) + "\n")
    write_text_atomic(md_path, render_markdown(report))
    return json_path, md_path
