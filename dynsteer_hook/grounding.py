"""What the agent has been shown so far, for evidence rules and the ``grounded`` predicate."""

from __future__ import annotations

import json
import re
from typing import Any

_DIGITS = re.compile(r"\d")


def _forms(value: Any) -> list[str]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, float):
        forms = [repr(value), f"{value:.6f}".rstrip("0").rstrip(".")]
        if value.is_integer():
            forms.append(str(int(value)))
        return forms
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, str):
        text = value.strip().casefold()
        return [text] if text else []
    return [json.dumps(value, sort_keys=True, default=str).casefold()]


class TextGrounding:
    """An append-only corpus of user, system and tool-result text, searched case-insensitively."""

    __slots__ = ("_digits", "_parts", "_size")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._digits: list[str] = []
        self._size = 0

    def add(self, text: str) -> None:
        """Record text the agent has been shown."""
        folded = text.casefold()
        self._parts.append(folded)
        self._digits.append("".join(_DIGITS.findall(folded)))
        self._size += 1

    def add_value(self, value: Any) -> None:
        """Record a tool result (any JSON-able value)."""
        if value is None:
            return
        self.add(value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False))

    @property
    def size(self) -> int:
        """Number of recorded texts (a position to search up to)."""
        return self._size

    def seen(self, value: Any, upto: int | None = None) -> bool:
        """Whether ``value`` appears in the first ``upto`` texts (all by default).

        Phone-number-like strings also match on their digits alone, so '+1 (245) 334-4098'
        grounds '+12453344098'.
        """
        parts = self._parts[:upto] if upto is not None else self._parts
        for form in _forms(value):
            if any(form in p for p in parts):
                return True
            digits = "".join(_DIGITS.findall(form))
            if len(digits) >= 7 and len(digits) >= len(form) - 6:
                pool = self._digits[:upto] if upto is not None else self._digits
                if any(digits in d for d in pool):
                    return True
        return False
