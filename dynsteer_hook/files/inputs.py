"""Input files read whole-or-not-at-all: every problem is one sentence naming the file and the fix.

Missing, a folder, a pipe or device, unreadable, not UTF-8, empty, not JSON, nested too
deeply: each is a ``DynsteerError`` leaf of the caller's choice, raised before anything is
written, so a bad input never damages an earlier run's files.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from dynsteer_hook.model.errors import DynsteerError

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
