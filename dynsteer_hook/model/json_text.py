"""JSON text parsed the one way every input is parsed: each reason Python's parser or a later
encoder would refuse it becomes one ``JsonTextError`` whose message completes a sentence.

``json.loads`` raises ``JSONDecodeError`` for broken text, but a plain ``ValueError`` for an
integer of more than 4,300 digits and ``RecursionError`` for deep nesting, and it accepts a lone
UTF-16 surrogate (``"\\ud800"``) that no UTF-8 encoder will write back, and a number such as
``1e400`` that no float holds (Python reads it as infinity, which no JSON writer may write back).
``loads`` turns all of them into one error; ``lone_surrogate`` and ``repair_text`` serve text that
arrives some other way.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects accepted in any JSON input (deeper input would exhaust the stack)."""

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_HUGE = re.compile(r"[eE]\+?\d{3}|\d{309}")
"""What a number beyond a float's range must hold: an exponent of three digits or 309 digits in a row (cheap to look for)."""


class JsonTextError(ValueError):
    """JSON text that cannot be used; ``str(exc)`` completes ``"<what> <where> ..."`` (e.g. ``"is not valid JSON (...)"``)."""


def lone_surrogate(text: str) -> int | None:
    """The index of the first lone UTF-16 surrogate in ``text`` (no UTF-8 encoder accepts one), or None."""
    m = _SURROGATE.search(text)
    return m.start() if m else None


def repair_text(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate replaced by U+FFFD, and how many were replaced."""
    return _SURROGATE.subn(REPLACEMENT, text)


def repair_value(value: Any) -> tuple[Any, int]:
    """A JSON-shaped value with every string (keys too) repaired, and how many surrogates were replaced."""
    if isinstance(value, str):
        return repair_text(value)
    if isinstance(value, list):
        pairs = [repair_value(v) for v in value]
        return [p[0] for p in pairs], sum(p[1] for p in pairs)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        n = 0
        for k, v in value.items():
            k2, nk = repair_text(k) if isinstance(k, str) else (k, 0)
            v2, nv = repair_value(v)
            out[k2] = v2
            n += nk + nv
        return out, n
    return value, 0


def value_surrogate(value: Any) -> bool:
    """Whether a JSON-shaped value holds a lone surrogate in any string, key or value."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                return True
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                if isinstance(k, str) and _SURROGATE.search(k):
                    return True
                stack.append(x)
    return False


def _depth_over(value: Any, limit: int) -> bool:
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
        return _depth_over(json.loads(text), limit)
    except RecursionError:
        return True
    except ValueError:
        return False  # not JSON: the parser's own message says so


def _reject_constant(name: str) -> Any:
    raise JsonTextError(f"holds {name}, which is no JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JsonTextError(f"holds the number {text[:40]}, which is beyond the range of a float")
    return value


def finite_number(value: Any) -> float | None:
    """A JSON number as a finite float; None for anything else: text, a bool, NaN, infinity, an integer beyond a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def has_nonfinite(value: Any) -> bool:
    """Whether a JSON-shaped value holds a float that is no finite number anywhere (in a list or under any key)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float):
            if not math.isfinite(v):
                return True
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def finite_value(value: Any) -> Any:
    """A JSON-shaped value with every float that is no finite number (NaN, infinity) replaced by None: what a writer
    keeps of a value that was never refused on the way in (shown as unknown, never written as invalid JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_value(v) for v in value]
    return value


def loads(text: str | bytes, *, surrogates: bool = False, limit: int = MAX_JSON_DEPTH, finite: bool = True) -> Any:
    """Parse JSON text, refusing what Python's parser or a UTF-8 encoder would choke on later.

    Args:
        text: The JSON text (bytes are decoded as UTF-8).
        surrogates: Accept lone surrogates in strings (the caller repairs them); refused by default.
        limit: Deepest nesting accepted.
        finite: Refuse a number beyond a float's range (``1e400``); without it such a number is read as infinity, for a
            caller that checks each record of a file and refuses only the record that holds one.

    Raises:
        JsonTextError: One sentence tail: not UTF-8, not valid JSON, NaN or Infinity, a number beyond
            a float's range, an integer Python will not parse, nesting deeper than ``limit``, or a lone surrogate.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JsonTextError(f"is not UTF-8 text (byte {exc.start} cannot be decoded)") from None
    if json_too_deep(text, limit):
        raise JsonTextError(f"nests arrays and objects deeper than {limit} levels")
    try:
        huge = finite and _HUGE.search(text) is not None  # the common case keeps the C parser's own float reading
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float if huge else None)
    except json.JSONDecodeError as exc:
        raise JsonTextError(f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except JsonTextError:
        raise
    except RecursionError:
        raise JsonTextError(f"nests arrays and objects deeper than {limit} levels") from None
    except ValueError as exc:  # Python's integer digit limit (sys.get_int_max_str_digits)
        if "digits" in str(exc):
            raise JsonTextError("holds an integer of more than 4300 digits, which Python will not parse") from None
        raise JsonTextError(f"is not valid JSON ({str(exc)[:120]})") from None
    # A lone surrogate reaches the value only as a raw character of the text or a backslash-u escape (JSON has no other).
    if not surrogates and ("\\u" in text or _SURROGATE.search(text)) and value_surrogate(value):
        raise JsonTextError("holds a lone UTF-16 surrogate (such as \\ud800), which is no text any encoder can write")
    return value
