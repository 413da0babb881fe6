"""What the agent has been shown: the text corpus behind the `grounded` predicate and evidence rules."""

from __future__ import annotations

import pytest

from dynsteer_hook.grounding import TextGrounding


def corpus(*texts: str) -> TextGrounding:
    g = TextGrounding()
    for t in texts:
        g.add(t)
    return g


def test_strings_match_case_insensitively() -> None:
    """A string value is seen when it occurs in any recorded text, ignoring case and surrounding space."""
    g = corpus("Please call ALICE Smith")
    assert g.seen(" alice smith ") and not g.seen("bob")


def test_phone_numbers_match_on_digits() -> None:
    """A phone-like value is seen when its digits appear, whatever the formatting."""
    g = corpus("Her number is +1 (245) 334-4098.")
    assert g.seen("+12453344098")
    assert not g.seen("+12453344099")


@pytest.mark.parametrize(("value", "seen"), [(42, True), (3.5, True), (3.0, True), (True, False), (None, False), ("", False)])
def test_numbers_and_non_values(value: object, seen: bool) -> None:
    """Numbers match their printed forms; booleans, None and empty strings are never 'seen'."""
    g = corpus("answer 42, ratio 3.5, count 3")
    assert g.seen(value) is seen


def test_tool_results_are_recorded_as_json() -> None:
    """Structured tool results are searchable by their values."""
    g = TextGrounding()
    g.add_value({"id": "C-123", "name": "Ann"})
    g.add_value(None)
    assert g.size == 1 and g.seen("c-123")


def test_upto_limits_the_search_to_earlier_texts() -> None:
    """seen(value, upto=n) only searches the first n texts: what the agent had seen at that point."""
    g = corpus("first", "second secret")
    assert not g.seen("secret", upto=1) and g.seen("secret", upto=2) and g.seen("secret")
