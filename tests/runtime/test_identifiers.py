"""Which argument values count as identifiers, and which of them a call invented.

Table-driven: add a row to add a value shape.
"""

from __future__ import annotations

from typing import Any

import pytest

from dynsteer_hook.runtime.grounding import TextGrounding
from dynsteer_hook.runtime.identifiers import looks_like_identifier, ungrounded_values, user_requested

IDENTIFIERS = [
    "+12453344098", "+1 (245) 334-4098", "245-334-4098", "9e137f06-916a-5310-8174-cf0b7e9f7054", "bob@example.com",
    "2024-05-03", "2024-05-03T17:00:00", "2024-05-03 17:00", "2024-05-03T17:00:00Z", "5/3/2024", "ORD-99881", "msg_12345",
    "cntct:000017", "a1b2c3d4e5f6a7b8c9",
]
NOT_IDENTIFIERS = [
    "", "   ", "Fredrik Thordendal", "How's the new album coming along", "Meet me at 10:30 on 2024-05-03 please",
    "call 555 at noon", "12:30", "v1.2.3", "wifi", "cellular", "Room 101", "x" * 300, 12453344098, 1692345600.0, True, None,
    ["+12453344098"],
]


@pytest.mark.parametrize("value", IDENTIFIERS)
def test_identifier_shapes_are_recognised(value: str) -> None:
    """A whole value shaped like a phone number, id, e-mail address or date is identifier-like."""
    assert looks_like_identifier(value)


@pytest.mark.parametrize("value", NOT_IDENTIFIERS, ids=repr)
def test_free_text_numbers_and_short_tokens_are_not(value: Any) -> None:
    """Free text, small tokens, numbers and non-strings are not identifiers (agents compose and compute those)."""
    assert not looks_like_identifier(value)


def _seen(*texts: str) -> TextGrounding:
    g = TextGrounding()
    for t in texts:
        g.add(t)
    return g


@pytest.mark.parametrize(("shown", "arguments", "enum", "expected"), [
    (["send to +1 (245) 334-4098"], {"phone": "+12453344098"}, (), ()),
    (["send to Fredrik"], {"phone": "+12453344098"}, (), ("phone='+12453344098'",)),
    (["send to Fredrik"], {"phone": "+12453344098"}, ("phone",), ()),
    (["hi"], {"to": {"numbers": ["+15555550123", "Bob"]}}, (), ("to.numbers[0]='+15555550123'",)),
    (["hi"], {"body": "call +15555550123 now"}, (), ()),
    (["id 9E137F06-916A-5310-8174-CF0B7E9F7054"], {"id": "9e137f06-916a-5310-8174-cf0b7e9f7054"}, (), ()),
])
def test_ungrounded_values_names_what_nobody_showed(shown: list[str], arguments: dict[str, Any], enum: tuple[str, ...],
                                                    expected: tuple[str, ...]) -> None:
    """Identifier-like values (nested ones too) not seen before are named arg=value; enum arguments and free text never are."""
    assert ungrounded_values(arguments, _seen(*shown).seen, frozenset(enum)) == expected


def test_unparseable_arguments_have_nothing_to_check() -> None:
    """A call whose arguments could not be decoded has no values to blame."""
    assert ungrounded_values(None, _seen().seen) == ()


def test_the_work_per_call_is_bounded() -> None:
    """A call with thousands of values is inspected for a bounded number of them."""
    args = {f"a{i}": f"+1555000{i:04d}" for i in range(5000)}
    assert len(ungrounded_values(args, _seen().seen)) == 50


@pytest.mark.parametrize(("arguments", "requested"), [
    ({"person_id": "9e137f06-916a-5310-8174-cf0b7e9f7054", "relationship": "enemy"}, True),
    ({"relationship": "enemy", "note": "x" * 1_000_000}, False),  # a megabyte of text nobody said
    ({f"a{i}": "enemy" for i in range(200_000)}, True),  # only the first values are read
    ({"nested": [[[[["enemy"]]]]]}, False),  # deeper than the leaves read: no word, no request
    ({"relationship": "ENEMY\u200b"}, False),  # an invisible character makes another word
    ({"id": "9e137f06-916a-5310-8174-cf0b7e9f7054"}, False),  # identifiers alone are never a request
    (None, False),
])
def test_a_request_in_the_users_words_reads_hostile_arguments_safely(arguments: Any, requested: bool) -> None:
    """Huge, deep and odd argument shapes give a plain answer, reading a bounded number of values."""
    assert user_requested(arguments, lambda v: str(v).casefold() == "enemy") is requested
