"""What the agent has been shown: the text corpus behind the `grounded` predicate and evidence rules."""

from __future__ import annotations

import pytest

from dynsteer_hook.runtime import grounding
from dynsteer_hook.runtime.grounding import TextGrounding, _forms


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


def _naive_seen(texts: list[str], value: object, upto: int) -> bool:
    """The simple definition: scan the first ``upto`` texts for each form, then for its digits."""
    import re

    folded = [t.casefold() for t in texts[:upto]]
    digits = ["".join(re.findall(r"\d", t)) for t in folded]
    for form in _forms(value):
        if any(form in t for t in folded):
            return True
        d = "".join(re.findall(r"\d", form))
        if len(d) >= 7 and len(d) >= len(form) - 6 and any(d in x for x in digits):
            return True
    return False


WORDS = ["ann", "Ann Lee", "+1 (245) 334-4098", "12453344098", "c-123", "x\x00y", "\x00", "a", "ab", "ba", "42", "3.5", "zz",
         "id 24533440", "1234567", "\u0661\u0662\u0663\u0664\u0665\u0666\u0667"]


@pytest.mark.parametrize("seed", range(12))
def test_search_answers_as_a_scan_of_every_text(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Packed chunks, newest-first search and remembered answers give the scan's answer for every value and
    position, including separators inside texts and values, and matches near chunk edges."""
    import random

    monkeypatch.setattr(grounding, "_CHUNK_TEXTS", random.Random(seed).choice([1, 2, 3, 7]))
    monkeypatch.setattr(grounding, "_CHUNK_CHARS", random.Random(seed).choice([4, 16, 1 << 16]))
    rng = random.Random(seed)
    g = TextGrounding()
    texts: list[str] = []
    for _ in range(60):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 3)))
        g.add(text)
        texts.append(text)
        for _ in range(4):
            value = rng.choice([*WORDS, "ann lee +1", "y a", "nothing", 42, 3.5, 2453344098, ["ann"], "\x00y",
                                "+1 245 334 4099", "ref 3344098", "x12453344098x", "9" * 12])
            upto = rng.randint(0, len(texts) + 1)
            assert g.seen(value, upto) is _naive_seen(texts, value, upto), (value, upto)
            assert g.seen(value) is _naive_seen(texts, value, len(texts)), value


def test_a_value_never_shown_is_answered_again_without_rescanning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking about the same absent value twice searches only the text recorded in between."""
    g = corpus(*[f"record {i}" for i in range(1000)])
    assert not g.seen("absent-value")
    searched: list[tuple[int, int]] = []
    original = grounding._Corpus._find_last

    def spy(self: grounding._Corpus, needle: str, lo: int, hi: int) -> int | None:
        searched.append((lo, hi))
        return original(self, needle, lo, hi)

    monkeypatch.setattr(grounding._Corpus, "_find_last", spy)
    g.add("a new record")
    assert not g.seen("absent-value")
    assert searched == [(1000, 1001)]


def test_a_fresh_number_is_known_absent_without_a_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value whose seven-digit runs were never recorded is answered from the digit bitmap, with no text search."""
    g = corpus(*[f"contact {i}: +1 (415) 555-{i:04d}" for i in range(500)])
    monkeypatch.setattr(grounding._Corpus, "_find_last", lambda *a: pytest.fail("searched the text"))
    assert not g.seen("+19990001234") and not g.seen("id-77777777")


def test_the_digit_bitmap_never_hides_a_value_that_was_shown() -> None:
    """Digits that run across formatting still ground the value through the digit corpus."""
    g = corpus("call +1 (999) 000-1234 now", "ref\u0661\u0662\u0663\u0664\u0665\u0666\u0667")
    assert g.seen("+19990001234") and g.seen("+1 (999) 000-1234") and g.seen("\u0661\u0662\u0663\u0664\u0665\u0666\u0667")
