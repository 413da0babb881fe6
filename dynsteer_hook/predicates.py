"""Argument and state predicates: the semantic conditions phi_m of milestones and minefields.

A predicate names one argument (or, in a state predicate, one column) and an operator.
Evaluation is pure and total: a value of the wrong shape makes the predicate false,
never raises.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

PredicateOp = Literal[
    "exists", "absent", "eq", "ne", "contains", "regex", "one_of", "type",
    "gt", "ge", "lt", "le", "grounded",
]

_JSON_TYPES = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


class ArgPredicate(BaseModel):
    """A condition on one argument of a tool call (or one column of a changed row)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arg: str = Field(min_length=1, description="Argument name as the agent passes it (or column name).")
    op: PredicateOp = Field(
        default="eq",
        description=(
            "exists/absent: presence; eq/ne: normalised equality (case-insensitive strings, "
            "numeric tolerance); contains: case-insensitive substring; regex: re.search; "
            "one_of: equal to one of a list; type: JSON type name; gt/ge/lt/le: numeric order; "
            "grounded: value (true/false) says whether the argument's value was seen earlier "
            "in the conversation or in tool results."
        ),
    )
    value: Any = Field(default=None, description="Operand of the operator; unused by exists/absent.")


class Grounding(Protocol):
    """What the agent could have observed so far: used by the ``grounded`` operator."""

    def seen(self, value: Any) -> bool:
        """Whether ``value`` appeared in earlier user, system or tool-result text."""
        ...


class NoGrounding:
    """A grounding that has seen nothing (for contexts without history)."""

    def seen(self, value: Any) -> bool:
        return False


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def values_equal(actual: Any, expected: Any) -> bool:
    """Normalised equality: numbers within tolerance, strings case- and space-insensitive."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(actual, bool) and isinstance(expected, bool) and actual == expected
    a_num, e_num = _as_number(actual), _as_number(expected)
    if a_num is not None and e_num is not None:
        return math.isclose(a_num, e_num, rel_tol=1e-9, abs_tol=1e-6)
    if isinstance(actual, str) and isinstance(expected, str):
        return actual.strip().casefold() == expected.strip().casefold()
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        return len(actual) == len(expected) and all(values_equal(a, e) for a, e in zip(actual, expected, strict=False))
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return actual.keys() == expected.keys() and all(values_equal(actual[k], expected[k]) for k in actual)
    return bool(actual == expected)


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _order(actual: Any, expected: Any, op: str) -> bool:
    a, e = _as_number(actual), _as_number(expected)
    if a is None or e is None:
        return False
    return {"gt": a > e, "ge": a >= e, "lt": a < e, "le": a <= e}[op]


def predicate_holds(pred: ArgPredicate, values: Mapping[str, Any], grounding: Grounding | None = None) -> bool:
    """Whether ``pred`` holds for the argument mapping ``values``."""
    present = pred.arg in values and values[pred.arg] is not None
    if pred.op == "exists":
        return present
    if pred.op == "absent":
        return not present
    if not present:
        return False
    actual = values[pred.arg]
    op = pred.op
    if op == "eq":
        return values_equal(actual, pred.value)
    if op == "ne":
        return not values_equal(actual, pred.value)
    if op == "contains":
        return str(pred.value).casefold() in str(actual).casefold()
    if op == "regex":
        pattern = _compiled(str(pred.value))
        return pattern is not None and pattern.search(str(actual)) is not None
    if op == "one_of":
        options = pred.value if isinstance(pred.value, (list, tuple)) else [pred.value]
        return any(values_equal(actual, option) for option in options)
    if op == "type":
        kinds = _JSON_TYPES.get(str(pred.value))
        if kinds is None:
            return False
        if pred.value in ("number", "integer") and isinstance(actual, bool):
            return False
        return isinstance(actual, kinds)
    if op in ("gt", "ge", "lt", "le"):
        return _order(actual, pred.value, op)
    if op == "grounded":
        seen = (grounding or NoGrounding()).seen(actual)
        return seen is bool(pred.value)
    return False  # pragma: no cover - PredicateOp is closed


def all_hold(preds: tuple[ArgPredicate, ...], values: Mapping[str, Any], grounding: Grounding | None = None) -> bool:
    """Whether every predicate holds (an empty tuple holds)."""
    return all(predicate_holds(p, values, grounding) for p in preds)


def count_holding(preds: tuple[ArgPredicate, ...], values: Mapping[str, Any], grounding: Grounding | None = None) -> int:
    """How many predicates hold; used to rank matches and to detect near misses."""
    return sum(1 for p in preds if predicate_holds(p, values, grounding))


def describe(pred: ArgPredicate) -> str:
    """A short human reading of a predicate, for prompts and reports."""
    if pred.op in ("exists", "absent"):
        return f"{pred.arg} {pred.op}"
    return f"{pred.arg} {pred.op} {pred.value!r}"
