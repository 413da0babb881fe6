"""Annotated steps: structural failure detection and the anchor marker."""

from __future__ import annotations

import pytest

from dynsteer_hook.judges.steps import CallFacts, Step, is_structural_exception
from dynsteer_hook.model.catalog import ArgIssue
from dynsteer_hook.model.events import StateChange


@pytest.mark.parametrize(
    ("text", "structural"),
    [
        ("TypeError: f() got an unexpected keyword argument 'y'", True),
        ("f() missing 1 required positional argument: 'x'", True),
        ("json.decoder.JSONDecodeError: Expecting value", True),
        ("RuntimeError: contact not found", False),
        ("", False),
        (None, False),
    ],
)
def test_structural_exceptions(text: str | None, structural: bool) -> None:
    """Exceptions saying the call was malformed are structural; runtime failures are not."""
    assert is_structural_exception(text) is structural


def _facts(**over: object) -> CallFacts:
    base: dict[str, object] = {
        "k_call": 1, "k_result": 2, "tool": "t", "canonical_tool": None, "arguments": {}, "raw_arguments": None,
        "result": None, "exception": None, "issues": (), "fatal_near": (), "warnings": (), "repeated_of": None,
        "state_changes": (), "settled": None, "out_of_order": (),
    }
    base.update(over)
    return CallFacts(**base)  # type: ignore[arg-type]


def test_call_facts_flags() -> None:
    """ok, structural and mutated read the call's result, issues and state changes."""
    assert _facts().ok and not _facts().structural and not _facts().mutated
    assert not _facts(k_result=None).ok and not _facts(exception="boom").ok
    assert _facts(issues=(ArgIssue("type", "x", "bad"),)).structural
    assert _facts(exception="TypeError: nope").structural
    assert _facts(state_changes=(StateChange("DB", ({"a": 1},)),)).mutated
    assert not _facts(state_changes=(StateChange("DB"),)).mutated


def test_as_anchor_marks_a_copy() -> None:
    """as_anchor returns the same step flagged as the window's anchor, leaving the original alone."""
    s = Step(3, 5, 6, "tool", (_facts(),), None, ("a",))
    a = s.as_anchor()
    assert a.anchor and not s.anchor and (a.t, a.calls, a.settled) == (s.t, s.calls, s.settled)
