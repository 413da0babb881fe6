"""The index of open off-task suspicions (runtime/suspicions.py) closes exactly the suspicions a pass over every one of
them closes: the same text, a number within one part in a million, a numeric reading, a subject written, a text quoted."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dynsteer_hook.runtime.suspicions import READING, Made, OpenSuspicions, close, number

TOKEN = re.compile(r"[^\s,;:!?()\[\]{}\"']+")
# Few values, so that calls and messages meet what readings made: texts short and long, numbers equal, close, far, zero.
VALUES = ["abcd", "ab", "Person 7", "person 7", "+1 (415) 555-0100", "+1(415)555-0100", "3", "3.0", "3.000002", "3.00001",
          "-2", "-2.0000001", "0", "0.0", "1e6", "1000000.5", "1000002", "12.5", READING]
SUBJECTS = ["wifi_status", "contact", "message"]


class PassOverAll:
    """The reference: every call and message tested against every open suspicion, as one pass."""

    def __init__(self) -> None:
        self.open: dict[int, tuple[int, Made, frozenset[str]]] = {}

    def add(self, k: int, t: int, made: Made, read: frozenset[str]) -> None:
        self.open[k] = (t, made, read)

    def used_by_call(self, given: set[str], numeric: bool, before: int, wrote: set[str]) -> None:
        numbers = [n for v in given if (n := number(v)) is not None]

        def used(made: Made) -> bool:
            if not made.values.isdisjoint(given) or (numeric and READING in made.values):
                return True
            return any(close(n, m) for n in made.numbers for m in numbers)

        for k in [k for k, (t, made, read) in self.open.items() if t < before and (used(made) or not read.isdisjoint(wrote))]:
            del self.open[k]

    def used_by_message(self, text: str) -> None:
        numbers = [n for w in TOKEN.findall(text) if (n := number(w.rstrip("."))) is not None]
        folded = text.casefold()
        for k in [k for k, (_, made, _) in self.open.items()
                  if any(close(n, m) for n in made.numbers for m in numbers) or any(w in folded for w in made.words)]:
            del self.open[k]


values = st.sets(st.sampled_from(VALUES), max_size=4)
subjects = st.sets(st.sampled_from(SUBJECTS), max_size=2)
operations = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 6), values, subjects),
    st.tuples(st.just("call"), st.sets(st.sampled_from(VALUES[:-1]), max_size=3), st.booleans(), st.integers(0, 7), subjects),
    st.tuples(st.just("message"), st.lists(st.sampled_from([*VALUES[:-1], "done", "about", "."]), max_size=5)),
), max_size=40)


@settings(max_examples=400, deadline=None)
@given(operations)
def test_the_index_closes_what_a_pass_over_every_suspicion_closes(ops: list[tuple[Any, ...]]) -> None:
    index: OpenSuspicions[str] = OpenSuspicions()
    reference = PassOverAll()
    for k, op in enumerate(ops):
        if op[0] == "add":
            _, t, made, read = op
            index.add(k, f"suspicion {k}", t, Made(set(made)), read)
            reference.add(k, t, Made(set(made)), frozenset(read))
        elif op[0] == "call":
            _, given_values, numeric, before, wrote = op
            index.used_by_call(given_values, numeric, before, wrote)
            reference.used_by_call(given_values, numeric, before, wrote)
        else:
            text = " ".join(op[1])
            index.used_by_message(text.casefold(), [n for w in TOKEN.findall(text) if (n := number(w.rstrip("."))) is not None])
            reference.used_by_message(text)
        assert list(index) == [f"suspicion {k}" for k in reference.open]
        assert len(index) == len(reference.open)


def test_close_numbers_are_found_on_both_sides_and_far_ones_are_not() -> None:
    """A number within one part in a million of a made one, above or below it, uses it; one just outside does not."""
    index: OpenSuspicions[str] = OpenSuspicions()
    index.add(1, "big", 0, Made({"1000000"}), ())
    index.add(2, "negative", 0, Made({"-250"}), ())
    index.add(3, "zero", 0, Made({"0.0"}), ())
    index.used_by_call({"1000001.5"}, True, 5, ())  # 1.5 parts in a million away
    index.used_by_call({"-250.0003"}, True, 5, ())  # 1.2 parts in a million away
    assert list(index) == ["big", "negative", "zero"]
    index.used_by_call({"999999.1"}, True, 5, ())  # 0.9 parts in a million below
    index.used_by_message("it was -250.0002 and 0", [-250.0002, 0.0])
    assert list(index) == []
