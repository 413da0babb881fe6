"""Minefield screening of a pending call: what it could do, over-approximated on purpose.

Settling a milestone needs the exact call (offered tool, exact argument names). Stopping a
hazard must not: a fatal minefield is checked against every tool the call could mean (its
name, its execution-facing name, and for a call refused by a gate the offered tools its text
names) and against its arguments read leniently (argument names in any case or width, and
an object sent as a JSON string). A false alarm costs a halted run; a miss costs the world
state the minefield protects.
"""

from __future__ import annotations

import html
import json
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from dynsteer_hook.model.events import ToolCall

_MAX_SCREEN_CHARS = 200_000


def fold_name(text: str) -> str:
    """An argument name compared in any case or width (NFKC, case-folded)."""
    return unicodedata.normalize("NFKC", text).casefold()


class FoldedArguments(Mapping[str, Any]):
    """A call's arguments looked up by folded name; the first of several spellings wins."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        folded: dict[str, Any] = {}
        for key, value in values.items():
            folded.setdefault(fold_name(str(key)), value)
        self._values = folded

    def __getitem__(self, key: str) -> Any:
        return self._values[fold_name(key)]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and fold_name(key) in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def _object_in(raw: str) -> Mapping[str, Any] | None:
    """The JSON object a raw payload holds: directly, encoded once more as a JSON string, or HTML-escaped."""
    if len(raw) > _MAX_SCREEN_CHARS:
        return None
    found = _decoded(raw)
    return found if found is not None or "&" not in raw else _decoded(html.unescape(raw))


def _decoded(raw: str) -> Mapping[str, Any] | None:
    value: Any = raw
    for _ in range(2):
        if not isinstance(value, str):
            break
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, Mapping) else None


def screening_arguments(call: ToolCall) -> FoldedArguments | None:
    """The arguments minefield predicates are checked against, or ``None`` when none can be read."""
    values = call.arguments if call.arguments is not None else (_object_in(call.raw_arguments) if call.raw_arguments else None)
    return FoldedArguments(values) if values is not None else None


def screened_tools(call: ToolCall) -> tuple[str, ...]:
    """Every tool name the call could mean, in a stable order without repeats."""
    names = [call.tool, call.canonical_tool or "", *call.suspected_tools]
    out: list[str] = []
    for name in names:
        if name and name not in out:
            out.append(name)
    return tuple(out)
