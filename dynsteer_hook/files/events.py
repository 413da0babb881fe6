"""Event files (JSON lines, the evaluator's input format): read as a stream with one sentence per
problem, and written one whole line at a time (``EventLog``)."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynsteer_hook.files.inputs import MAX_JSON_DEPTH, json_too_deep
from dynsteer_hook.files.outputs import JsonlSink
from dynsteer_hook.model.errors import EventFileError
from dynsteer_hook.model.events import Event, event_to_record, parse_event_line


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
