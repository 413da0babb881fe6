"""Argument predicates: every operator, normalised equality, and totality on bad shapes."""

from __future__ import annotations

import pytest

from dynsteer_hook.model.predicates import ArgPredicate, NoGrounding, all_hold, count_holding, describe, predicate_holds, values_equal


class SeenOnly:
    """A grounding that has seen exactly the given values."""

    def __init__(self, *values: object) -> None:
        self.values = values

    def seen(self, value: object) -> bool:
        return value in self.values


def P(arg: str, op: str, value: object = None) -> ArgPredicate:
    return ArgPredicate(arg=arg, op=op, value=value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pred", "values", "expected"),
    [
        (P("x", "exists"), {"x": 1}, True),
        (P("x", "exists"), {"x": None}, False),
        (P("x", "exists"), {}, False),
        (P("x", "absent"), {}, True),
        (P("x", "absent"), {"x": None}, True),
        (P("x", "absent"), {"x": 0}, False),
        (P("x", "eq", "Alice"), {"x": "  alice "}, True),
        (P("x", "eq", "Alice"), {"x": "Bob"}, False),
        (P("x", "eq", 3), {"x": "3.0"}, True),
        (P("x", "ne", "Alice"), {"x": "Bob"}, True),
        (P("x", "ne", "Alice"), {"x": "ALICE"}, False),
        (P("x", "contains", "li"), {"x": "ALICE"}, True),
        (P("x", "contains", "zz"), {"x": "ALICE"}, False),
        (P("x", "regex", r"^\+1\d{3}$"), {"x": "+1555"}, True),
        (P("x", "regex", r"^\d+$"), {"x": "12a"}, False),
        (P("x", "one_of", ["a", "b"]), {"x": "B"}, True),
        (P("x", "one_of", ["a", "b"]), {"x": "c"}, False),
        (P("x", "one_of", "a"), {"x": "A"}, True),
        (P("x", "type", "string"), {"x": "s"}, True),
        (P("x", "type", "integer"), {"x": 2}, True),
        (P("x", "type", "number"), {"x": 2.5}, True),
        (P("x", "type", "array"), {"x": [1]}, True),
        (P("x", "type", "object"), {"x": {}}, True),
        (P("x", "type", "boolean"), {"x": True}, True),
        (P("x", "type", "string"), {"x": 1}, False),
        (P("x", "gt", 2), {"x": 3}, True),
        (P("x", "gt", 3), {"x": 3}, False),
        (P("x", "ge", 3), {"x": "3"}, True),
        (P("x", "lt", 3), {"x": 2.5}, True),
        (P("x", "le", 3), {"x": 4}, False),
    ],
)
def test_operator_truth_table(pred: ArgPredicate, values: dict[str, object], expected: bool) -> None:
    """Each operator holds exactly on the values its documentation describes."""
    assert predicate_holds(pred, values) is expected


@pytest.mark.parametrize("op", ["eq", "ne", "contains", "regex", "one_of", "type", "gt", "ge", "lt", "le", "grounded"])
def test_missing_argument_makes_value_operators_false(op: str) -> None:
    """Every operator other than exists/absent is false when the argument is missing."""
    assert predicate_holds(P("x", op, 1), {"y": 1}) is False


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("kind", ["integer", "number"])
def test_booleans_are_not_numbers(kind: str, value: bool) -> None:
    """JSON booleans do not satisfy the integer or number type test."""
    assert predicate_holds(P("x", "type", kind), {"x": value}) is False


def test_unknown_type_name_is_false() -> None:
    """A type operand that names no JSON type makes the predicate false instead of raising."""
    assert predicate_holds(P("x", "type", "uuid"), {"x": "abc"}) is False


def test_invalid_regex_is_false_not_an_error() -> None:
    """A regex operand that does not compile makes the predicate false instead of raising."""
    assert predicate_holds(P("x", "regex", "(unclosed"), {"x": "(unclosed"}) is False


@pytest.mark.parametrize("actual", ["abc", None, [1], {"a": 1}, True, "nan", "inf"])
def test_order_operators_on_non_numbers_are_false(actual: object) -> None:
    """Numeric comparisons on values that are not finite numbers are false."""
    assert predicate_holds(P("x", "gt", 0), {"x": actual}) is False


def test_grounded_uses_the_grounding() -> None:
    """grounded=true holds for seen values and grounded=false for unseen ones."""
    g = SeenOnly("555-1234")
    assert predicate_holds(P("x", "grounded", True), {"x": "555-1234"}, g) is True
    assert predicate_holds(P("x", "grounded", True), {"x": "999"}, g) is False
    assert predicate_holds(P("x", "grounded", False), {"x": "999"}, g) is True


def test_grounded_without_grounding_has_seen_nothing() -> None:
    """Without a grounding nothing counts as seen."""
    assert NoGrounding().seen("x") is False
    assert predicate_holds(P("x", "grounded", False), {"x": "v"}) is True


@pytest.mark.parametrize(
    ("actual", "expected", "equal"),
    [
        (1, 1.0000000001, True),
        ("1e3", 1000, True),
        (" Hello ", "hello", True),
        ([1, "A"], [1.0, "a"], True),
        ([1, 2], [1, 2, 3], False),
        ({"a": "X"}, {"a": "x"}, True),
        ({"a": 1}, {"b": 1}, False),
        (True, 1, False),
        (True, True, True),
        (None, None, True),
        (None, "None", False),
    ],
)
def test_values_equal_normalises(actual: object, expected: object, equal: bool) -> None:
    """Equality tolerates case, surrounding space and float noise, recursing into lists and mappings, but never equates bool with number."""
    assert values_equal(actual, expected) is equal


def test_all_hold_and_count_holding() -> None:
    """all_hold needs every predicate; count_holding counts them; an empty tuple holds."""
    preds = (P("a", "eq", 1), P("b", "eq", 2), P("c", "exists"))
    values = {"a": 1, "b": 3}
    assert all_hold(preds, values) is False
    assert count_holding(preds, values) == 1
    assert all_hold((), values) is True


@pytest.mark.parametrize(
    ("pred", "text"),
    [(P("x", "exists"), "x exists"), (P("x", "eq", "a"), "x eq 'a'"), (P("n", "gt", 2), "n gt 2")],
)
def test_describe_reads_like_the_condition(pred: ArgPredicate, text: str) -> None:
    """describe renders argument, operator and operand."""
    assert describe(pred) == text


def test_predicate_rejects_unknown_operator() -> None:
    """An operator outside the closed set is rejected at the boundary."""
    with pytest.raises(ValueError, match="op"):
        ArgPredicate(arg="x", op="startswith", value="a")  # type: ignore[arg-type]
