"""Extracting and validating a model's JSON answer: fences, prose, empty and malformed answers."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from dynsteer_hook.llm.output import excerpt, extract_json_object, parse_output


class Point(BaseModel):
    x: int
    y: int = 0


@pytest.mark.parametrize(
    "text",
    [
        '{"x": 1}',
        '  \n{"x": 1}\n',
        '```json\n{"x": 1}\n```',
        '```\n{"x": 1}\n```',
        'Here is the graph:\n```json\n{"x": 1}\n```\nHope this helps.',
        'Sure! {"x": 1} is my answer.',
        'Some {braces} first, then {"x": 1}',
    ],
)
def test_the_json_object_is_found_wherever_the_model_put_it(text: str) -> None:
    """Plain, fenced, or embedded in prose: the same object comes out."""
    assert parse_output(text, Point).value == Point(x=1)


def test_an_array_is_not_an_object() -> None:
    """A top-level JSON array does not count as the object asked for."""
    assert extract_json_object("[1, 2]") is None


@pytest.mark.parametrize(
    ("text", "rule"),
    [("", "empty"), ("   \n", "empty"), ("I cannot help with that.", "json"), ('{"x": 1', "json"), ('{"y": 2}', "shape"), ('{"x": "one"}', "shape")],
)
def test_unusable_answers_come_back_with_a_rule_not_an_exception(text: str, rule: str) -> None:
    """Empty, non-JSON and wrong-shape answers are reported, never raised."""
    parsed = parse_output(text, Point)
    assert parsed.value is None and parsed.rule == rule and parsed.error


def test_a_shape_error_names_the_field() -> None:
    """The message says where the JSON departs from the model."""
    parsed = parse_output('{"y": 2}', Point)
    assert parsed.error is not None and "Point at x" in parsed.error


def test_a_truncated_answer_says_so() -> None:
    """A cut-off answer hints at max_tokens."""
    parsed = parse_output('{"x": ', Point, truncated=True)
    assert parsed.error is not None and "max_tokens" in parsed.error


def test_excerpt_is_one_bounded_line() -> None:
    """Excerpts flatten whitespace and stay short."""
    text = "a\n" * 200
    out = excerpt(text, 20)
    assert "\n" not in out and len(out) == 20 and out.endswith("...")
