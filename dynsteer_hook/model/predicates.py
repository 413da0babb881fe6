"""Argument and state predicates: the semantic conditions phi_m of milestones and minefields.

A predicate names one argument (or, in a state predicate, one column) and an operator.
Evaluation is pure and total: a value of the wrong shape makes the predicate false,
never raises.

Patterns of the ``regex`` operator come from blueprints, which come from files and from
language models, so they run on RE2: matching takes time linear in the input whatever the
pattern. A pattern RE2 cannot compile (backreferences, lookarounds, a program too large
for its memory budget) is a contract violation that ``contract`` reports before a run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Literal, Protocol

import re2
from pydantic import BaseModel, ConfigDict, Field

from dynsteer_hook.model.json_types import is_json_type

PredicateOp = Literal[
    "exists", "absent", "eq", "ne", "contains", "regex", "one_of", "type",
    "gt", "ge", "lt", "le", "grounded",
]


class ArgPredicate(BaseModel):
    """A condition on one argument of a tool call (or one column of a changed row)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arg: str = Field(min_length=1, description="Argument name as the agent passes it (or column name).")
    op: PredicateOp = Field(
        default="eq",
        description=(
            "exists/absent: presence; eq/ne: normalised equality (case-insensitive strings, "
            "numeric tolerance); contains: case-insensitive substring; regex: search with an RE2 pattern "
            "(no backreferences or lookarounds); "
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


def numeric_value(value: Any) -> float | None:
    """The finite number a value stands for (a number, or text that parses as one), else None."""
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
    a_num, e_num = numeric_value(actual), numeric_value(expected)
    if a_num is not None and e_num is not None:
        return math.isclose(a_num, e_num, rel_tol=1e-9, abs_tol=1e-6)
    if isinstance(actual, str) and isinstance(expected, str):
        return actual.strip().casefold() == expected.strip().casefold()
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        return len(actual) == len(expected) and all(values_equal(a, e) for a, e in zip(actual, expected, strict=False))
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return actual.keys() == expected.keys() and all(values_equal(actual[k], expected[k]) for k in actual)
    return bool(actual == expected)


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every rejected pattern to stderr
    return options


_RE2_OPTIONS = _re2_options()


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> tuple[Any, str | None]:
    """The compiled RE2 program of ``pattern``, or None and RE2's reason."""
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS), None
    except UnicodeEncodeError:
        return None, "the pattern is not valid Unicode text (it holds a lone surrogate)"
    except re2.error as exc:
        raw = exc.args[0] if exc.args else exc
        reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        # RE2 says "<what is wrong>: <the part of the pattern at fault>"; that part can be the whole pattern.
        what, _, where = reason.partition(": ")
        return None, reason if len(where) <= 40 else f"{what}: {where[:37]}..."


def _valid_unicode(text: str) -> str:
    # RE2 reads UTF-8; a lone surrogate (JSON allows "\ud800") cannot be encoded, so it reads as U+FFFD.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _search(program: Any, text: str) -> bool:
    try:
        return program.search(text) is not None
    except UnicodeEncodeError:
        return program.search(_valid_unicode(text)) is not None


def regex_error(pattern: object) -> str | None:
    """Why ``pattern`` cannot be a ``regex`` operand (None when RE2 compiles it)."""
    if not isinstance(pattern, str):
        return f"the pattern must be a string, not {type(pattern).__name__}"
    return _compile(pattern)[1]


def _order(actual: Any, expected: Any, op: str) -> bool:
    a, e = numeric_value(actual), numeric_value(expected)
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
        program, _ = _compile(str(pred.value))
        return program is not None and _search(program, str(actual))
    if op == "one_of":
        options = pred.value if isinstance(pred.value, (list, tuple)) else [pred.value]
        return any(values_equal(actual, option) for option in options)
    if op == "type":
        return is_json_type(actual, pred.value) is True
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
