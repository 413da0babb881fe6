"""The open off-task suspicions of a run, indexed by what would show that their results were used.

A reading no milestone uses stays suspected of being off task until a later call or message uses a value
it made (the same text, or a number within one part in a million), or a later change writes what it read.
Every later call and message is tested against every open suspicion, so the suspicions are indexed: by
text, by number (sorted) and by what they read, and a call costs what its own values cost to look up, not
a pass over every open suspicion. ``CallRules`` (faults.py) decides what is suspected and when.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Iterator
from typing import Generic, TypeVar

READING = "\x00reading"  # stands for a numeric reading without arguments (the clock) that later numeric work may have used
_NEAR = 2e-6  # a search window wider than one part in a million: every close number falls in it, then each is checked

F = TypeVar("F")


def number(text: str) -> float | None:
    """The finite number ``text`` spells, if any."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def close(n: float, m: float) -> bool:
    """Two numbers within one part in a million (an agent may pass on a clock reading it rounded or re-read)."""
    return abs(n - m) <= 1e-6 * max(abs(n), abs(m))


class Made:
    """The values a result made, split once into numbers (parsed) and texts for the tests of their later use."""

    __slots__ = ("numbers", "values", "words")

    def __init__(self, values: set[str]) -> None:
        parsed = [(v, number(v)) for v in values]
        self.values = frozenset(values)
        self.numbers = tuple(n for _, n in parsed if n is not None)
        self.words = tuple(v.casefold() for v, n in parsed if n is None and len(v) >= 4)  # the texts a message can quote


class OpenSuspicions(Generic[F]):
    """Suspicions by key (the call's raw clock), in the order they were opened, each with the action ``t`` of its call,
    what its call made and what it read (its subjects)."""

    __slots__ = ("_by_subject", "_by_value", "_by_word", "_items", "_numbers")

    def __init__(self) -> None:
        self._items: dict[int, tuple[F, int, Made, frozenset[str]]] = {}
        self._by_value: dict[str, set[int]] = {}
        self._by_word: dict[str, set[int]] = {}
        self._by_subject: dict[str, set[int]] = {}
        self._numbers: list[tuple[float, int]] = []  # sorted

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[F]:
        """The suspicions still open, in the order they were opened."""
        return (item[0] for item in self._items.values())

    def add(self, k: int, suspicion: F, t: int, made: Made, read: Collection[str]) -> None:
        """Open the suspicion of the call at raw clock ``k`` (``k`` not open already)."""
        self._items[k] = (suspicion, t, made, frozenset(read))
        for table, keys in ((self._by_value, made.values), (self._by_word, made.words), (self._by_subject, read)):
            for key in keys:
                table.setdefault(key, set()).add(k)
        for n in made.numbers:
            bisect.insort(self._numbers, (n, k))

    def used_by_call(self, given: Collection[str], numeric: bool, before: int, wrote: Collection[str]) -> None:
        """Close the suspicions of calls of actions before ``before`` that a call with argument values ``given`` used: the
        same text, or a number within one part in a million; with ``numeric`` (the call passed numbers on), a numeric
        reading too; and those that read what the call wrote (its subjects ``wrote``)."""
        hits = self._keys(self._by_value, given)
        if numeric:
            hits |= self._by_value.get(READING, set())
        hits |= self._near(n for v in given if (n := number(v)) is not None)
        hits |= self._keys(self._by_subject, wrote)
        self._close_all(k for k in hits if self._items[k][1] < before)

    def used_by_message(self, folded: str, numbers: Iterable[float]) -> None:
        """Close the suspicions whose values a message used: a number among its words (``numbers``), within one part in a
        million, or a text of four characters or more anywhere in it (``folded``: the message casefolded)."""
        hits = self._near(numbers)
        for word, keys in self._by_word.items():
            if not keys <= hits and word in folded:
                hits |= keys
        self._close_all(hits)

    @staticmethod
    def _keys(table: dict[str, set[int]], keys: Iterable[str]) -> set[int]:
        found: set[int] = set()
        for key in keys:
            found |= table.get(key, set())
        return found

    def _near(self, numbers: Iterable[float]) -> set[int]:
        """The keys of suspicions that made a number within one part in a million of one of ``numbers``."""
        found: set[int] = set()
        for m in numbers:
            reach = _NEAR * abs(m)
            at = bisect.bisect_left(self._numbers, m - reach, key=lambda entry: entry[0])
            while at < len(self._numbers) and self._numbers[at][0] <= m + reach:
                n, k = self._numbers[at]
                if close(n, m):
                    found.add(k)
                at += 1
        return found

    def _close_all(self, keys: Iterable[int]) -> None:
        closing = set(keys)
        for k in closing:
            _, _, made, read = self._items.pop(k)
            for table, values in ((self._by_value, made.values), (self._by_word, made.words), (self._by_subject, read)):
                for value in set(values):  # texts that differ only in case make one word
                    left = table[value]
                    left.discard(k)
                    if not left:
                        del table[value]
        if closing:
            self._numbers = [entry for entry in self._numbers if entry[1] not in closing]
