"""The failing-call counts (runtime/counters.py) name the same most-failed identical call as a pass over every failing call: the
highest count, the earliest to start failing on ties, its latest detail; a success or a settled milestone drops counts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dynsteer_hook.runtime.counters import FailingCalls


class PassOverAll:
    """The reference: the failing calls in a dict, the worst one found by a pass over all of them."""

    def __init__(self) -> None:
        self.failing: dict[bytes, tuple[int, tuple[int, int], str]] = {}

    def outcome(self, sig: bytes, ok: bool, k: int, t: int, detail: str) -> None:
        if ok:
            self.failing.pop(sig, None)
            return
        n, since, _ = self.failing.get(sig, (0, (k, t), ""))
        self.failing[sig] = (n + 1, since, detail)

    def worst(self) -> tuple[int, tuple[int, int], str] | None:
        if not self.failing:
            return None
        return max(self.failing.values(), key=lambda v: (v[0], -v[1][0]))


# A few calls, so that they fail again, succeed, and start failing again; a settled milestone now and then.
STEP = st.one_of(
    st.tuples(st.just("call"), st.sampled_from([b"a", b"b", b"c", b"d", b"e"]), st.booleans(), st.sampled_from(["x", "y"])),
    st.tuples(st.just("settle"), st.just(b""), st.just(False), st.just("")),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, max_size=80))
def test_the_most_failed_call_is_the_one_a_pass_over_all_finds(steps: list[tuple[str, bytes, bool, str]]) -> None:
    """After every step the counters report what the reference reports (or nothing, when no call is failing)."""
    counters, reference = FailingCalls(), PassOverAll()
    for k, (kind, sig, ok, detail) in enumerate(steps, start=1):
        if kind == "settle":
            counters.clear()
            reference.failing.clear()
        else:
            counters.outcome(sig, ok, k, k, detail)
            reference.outcome(sig, ok, k, k, detail)
        assert counters.most_failed() == reference.worst(), (k, steps[:k])


def test_ties_go_to_the_call_that_started_failing_first() -> None:
    counters = FailingCalls()
    for k, sig in enumerate([b"late", b"early", b"late", b"early"], start=1):
        counters.outcome(sig, False, k if sig == b"early" else 10 + k, k, sig.decode())
    worst = counters.most_failed()
    assert worst is not None and worst[1] == (2, 2)
    counters.outcome(b"early", True, 9, 9, "")
    worst = counters.most_failed()
    assert worst is not None and worst[1] == (11, 1)
