"""What the agent has been shown so far, for evidence rules and the ``grounded`` predicate.

A long run asks "was this value shown before?" at every call a grounded predicate
watches and at every judged stage, against a corpus that grows with the run. Scanning
every recorded text per question made a long trace quadratic; here the texts are packed
into large strings searched at C speed, newest first (agents mostly reuse what they were
just shown), and each value's answer is remembered as a known occurrence and a prefix
known to be clean, so asking again only searches text recorded since.

A value never shown would still cost a scan of everything, and an agent can send a fresh
number on every call. Identifiers and phone numbers carry digits, so a bitmap of every run
of seven digits ever recorded answers most of those at once: if the value's digits hold a
run the bitmap lacks, neither the digits nor the text can contain the value (a text that
contains the value contains its digits, in order, with no other digit between them).
Other values never shown (a fresh name) still cost one scan of the text recorded since
they were last asked about.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import Any

_NON_DIGITS = re.compile(r"\D")
_DIGITS = re.compile(r"\d")
_SEP = "\x00"
_CHUNK_CHARS = 1 << 16
_CHUNK_TEXTS = 256
_MEMO_LIMIT = 1 << 16
_MEMO_NEEDLE = 4096
_GRAM = 7  # digits per run in the bitmap: 10**7 bits, 1.25 MB


class _DigitRuns:
    """Which runs of ``_GRAM`` consecutive digits occur in any recorded digit text."""

    __slots__ = ("_bits",)

    def __init__(self) -> None:
        self._bits: bytearray | None = None  # allocated with the first long enough digit text

    def add(self, digits: str) -> None:
        if len(digits) < _GRAM:
            return
        if self._bits is None:
            self._bits = bytearray(10**_GRAM // 8 + 1)
        bits = self._bits
        for i in range(len(digits) - _GRAM + 1):
            run = int(digits[i : i + _GRAM])
            bits[run >> 3] |= 1 << (run & 7)

    def lacks_some(self, digits: str) -> bool:
        """Whether ``digits`` holds a run no recorded text has (so no recorded text contains it)."""
        if len(digits) < _GRAM:
            return False
        bits = self._bits
        if bits is None:
            return True
        for i in range(len(digits) - _GRAM + 1):
            run = int(digits[i : i + _GRAM])
            if not bits[run >> 3] & (1 << (run & 7)):
                return True
        return False


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


class _Chunk:
    """Consecutive texts joined by a separator, with where each one starts."""

    __slots__ = ("first", "starts", "text")

    def __init__(self, first: int, texts: list[str]) -> None:
        self.first = first
        self.text = _SEP.join(texts)
        self.starts: list[int] = []
        at = 0
        for t in texts:
            self.starts.append(at)
            at += len(t) + 1

    def find_last(self, needle: str, lo: int, hi: int) -> int | None:
        """Index of the last text in [lo, hi) (corpus indices) that contains ``needle``."""
        a, b = max(lo - self.first, 0), min(hi - self.first, len(self.starts))
        if a >= b:
            return None
        begin = self.starts[a]
        end = self.starts[b] - 1 if b < len(self.starts) else len(self.text)
        while True:
            pos = self.text.rfind(needle, begin, end)
            if pos < 0:
                return None
            i = bisect.bisect_right(self.starts, pos) - 1
            text_end = self.starts[i + 1] - 1 if i + 1 < len(self.starts) else len(self.text)
            if pos + len(needle) <= text_end:
                return self.first + i
            end = pos + len(needle) - 1  # the match ran across a separator: look further left


class _Corpus:
    """Append-only texts; which of the first ``upto`` of them contain a substring."""

    __slots__ = ("_chunks", "_memo", "_open", "_open_chars", "_size")

    def __init__(self) -> None:
        self._chunks: list[_Chunk] = []
        self._open: list[str] = []
        self._open_chars = 0
        self._size = 0
        self._memo: dict[str, tuple[int | None, int]] = {}

    @property
    def size(self) -> int:
        return self._size

    def add(self, text: str) -> None:
        self._open.append(text)
        self._open_chars += len(text)
        self._size += 1
        if self._open_chars >= _CHUNK_CHARS or len(self._open) >= _CHUNK_TEXTS:
            self._chunks.append(_Chunk(self._size - len(self._open), self._open))
            self._open, self._open_chars = [], 0

    def _find_last(self, needle: str, lo: int, hi: int) -> int | None:
        first_open = self._size - len(self._open)
        for i in range(min(hi, self._size) - 1, max(lo, first_open) - 1, -1):
            if needle in self._open[i - first_open]:
                return i
        for chunk in reversed(self._chunks):
            if chunk.first >= hi:
                continue
            if chunk.first + len(chunk.starts) <= lo:
                break
            found = chunk.find_last(needle, lo, hi)
            if found is not None:
                return found
        return None

    def contains(self, needle: str, upto: int) -> bool:
        """Whether one of the first ``upto`` texts contains ``needle``."""
        hit, clean = self._memo.get(needle, (None, 0))
        if hit is not None and hit < upto:
            return True
        if upto <= clean:
            return False
        found = self._find_last(needle, clean, upto)
        if found is not None:
            hit = found
        else:
            clean = upto
        if len(needle) <= _MEMO_NEEDLE:
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()  # a bound, not a policy: answers are recomputed on demand
            self._memo[needle] = (hit, clean)
        return found is not None


class TextGrounding:
    """An append-only corpus of user, system and tool-result text, searched case-insensitively."""

    __slots__ = ("_digits", "_runs", "_text")

    def __init__(self) -> None:
        self._text = _Corpus()
        self._digits = _Corpus()
        self._runs = _DigitRuns()

    def add(self, text: str) -> None:
        """Record text the agent has been shown."""
        folded = text.casefold()
        digits = _NON_DIGITS.sub("", folded)
        self._text.add(folded)
        self._digits.add(digits)
        self._runs.add(digits)

    def add_value(self, value: Any) -> None:
        """Record a tool result (any JSON-able value)."""
        if value is None:
            return
        self.add(value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False))

    @property
    def size(self) -> int:
        """Number of recorded texts (a position to search up to)."""
        return self._text.size

    def seen(self, value: Any, upto: int | None = None) -> bool:
        """Whether ``value`` appears in the first ``upto`` texts (all by default).

        Phone-number-like strings also match on their digits alone, so '+1 (245) 334-4098'
        grounds '+12453344098'.
        """
        limit = self.size if upto is None else max(0, min(upto, self.size))
        for form in _forms(value):
            # The digit test first: a reformatted phone number is a miss in the text, and a
            # miss costs a scan of the text recorded since the value was last asked about.
            digits = "".join(_DIGITS.findall(form))
            if self._runs.lacks_some(digits):
                continue
            if len(digits) >= 7 and len(digits) >= len(form) - 6 and self._digits.contains(digits, limit):
                return True
            if self._text.contains(form, limit):
                return True
        return False
