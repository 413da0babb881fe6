"""The milestone index never loses a match: the candidates a call can settle are exactly those a full scan finds."""

from __future__ import annotations

import random
from typing import Any

import pytest

from dynsteer_hook.model.blueprint import Milestone
from dynsteer_hook.model.predicates import ArgPredicate, all_hold
from dynsteer_hook.runtime.matching import MilestoneIndex

TEXTS = ["Alice", " alice ", "ALICE", "Bob", "5", "5.0", "05", "nan", "inf", "", "x y", "ß", "ss"]
VALUES: list[Any] = [*TEXTS, 5, 5.0, 7, True, None, ["Alice"], {"k": "Alice"}]


def _predicate(rng: random.Random, arg: str) -> ArgPredicate:
    op = rng.choice(["eq", "eq", "eq", "contains", "one_of", "ne", "exists", "regex"])
    if op == "one_of":
        return ArgPredicate(arg=arg, op=op, value=rng.sample(VALUES, 2))
    if op == "regex":
        return ArgPredicate(arg=arg, op=op, value=rng.choice(["^a", "b$", "\\d"]))
    return ArgPredicate(arg=arg, op=op, value=rng.choice(VALUES))


def _milestones(seed: int) -> list[Milestone]:
    rng = random.Random(seed)
    out = []
    for i in range(60):
        preds = tuple(_predicate(rng, rng.choice(["x", "y"])) for _ in range(rng.randint(0, 3)))
        out.append(Milestone(id=f"m{i}", tool=rng.choice(["t1", "t2"]), args=preds))
    return out


@pytest.mark.parametrize("seed", range(25))
def test_candidates_keep_every_milestone_a_scan_would_match(seed: int) -> None:
    """For random milestones and calls: matching candidates == matching milestones of the tool, in blueprint order."""
    rng = random.Random(seed)
    ms = _milestones(seed)
    index = MilestoneIndex(ms)
    settled: set[str] = set()
    for _ in range(200):
        tool = rng.choice(["t1", "t2", "t3"])
        args = {a: rng.choice(VALUES) for a in rng.sample(["x", "y", "z"], rng.randint(0, 3))}
        scan = [m for m in ms if m.tool == tool and m.id not in settled and all_hold(m.args, args)]
        found = index.candidates(tool, args)
        assert [m for m in found if all_hold(m.args, args)] == scan
        assert [m.id for m in found] == sorted((m.id for m in found), key=lambda x: int(x[1:]))
        if scan and rng.random() < 0.3:
            settled.add(scan[0].id)
            index.discard(scan[0].id)


def test_text_equality_is_found_through_case_and_spacing() -> None:
    """A milestone filed under 'Alice' is a candidate for ' ALICE ', as eq's normalisation demands."""
    m = Milestone(id="a", tool="t", args=(ArgPredicate(arg="x", op="eq", value="Alice"),))
    assert MilestoneIndex([m]).candidates("t", {"x": " ALICE "}) == [m]


def test_numeric_text_is_not_filed_by_its_spelling() -> None:
    """eq '5' also holds for 5.0 and '05', so such a milestone is checked on every call of its tool."""
    m = Milestone(id="a", tool="t", args=(ArgPredicate(arg="x", op="eq", value="5"),))
    index = MilestoneIndex([m])
    assert index.candidates("t", {"x": 5.0}) == [m] and index.candidates("t", {"x": "05"}) == [m]


def test_a_discarded_milestone_is_no_longer_a_candidate() -> None:
    """Settled milestones leave the index."""
    m = Milestone(id="a", tool="t", args=(ArgPredicate(arg="x", op="eq", value="Alice"),))
    index = MilestoneIndex([m])
    index.discard("a")
    assert index.candidates("t", {"x": "Alice"}) == []
