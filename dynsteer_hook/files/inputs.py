"""Input files read whole-or-not-at-all: every problem is one sentence naming the file and the fix.

Missing, a folder, a pipe or device, unreadable, not UTF-8, empty, not JSON, nested too
deeply: each is a ``DynsteerError`` leaf of the caller's choice, raised before anything is
written, so a bad input never damages an earlier run's files.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.model.json_text import MAX_JSON_DEPTH, JsonTextError, json_too_deep, loads

__all__ = ["MAX_JSON_DEPTH", "json_too_deep", "load_json_input", "read_input_text"]



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


def load_json_input(path: str | Path, what: str, fix: str, error: type[DynsteerError], *, surrogates: bool = False) -> tuple[str, Any]:
    """Read and parse a JSON input file: its text and value, or one sentence naming the file (``surrogates``: accept
    lone surrogates in strings, for a caller that repairs them)."""
    text = read_input_text(path, what, fix, error)
    if not text.strip():
        raise error(f"{what} {path} is empty; {fix}")
    try:
        return text, loads(text, surrogates=surrogates)
    except JsonTextError as exc:
        raise error(f"{what} {path} {exc}; fix the file or regenerate it") from None
