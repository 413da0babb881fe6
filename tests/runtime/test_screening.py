"""Minefield screening reads a pending call leniently (any tool it could mean, argument names in
any case, an object sent as a JSON string), while settlement stays exact and a refused call
never settles anything."""

from __future__ import annotations

import json

import pytest
from builders import blueprint

from dynsteer_hook.model.blueprint import Minefield
from dynsteer_hook.model.errors import Halt
from dynsteer_hook.model.events import ToolCall, ToolResult, event_to_record, parse_event_line
from dynsteer_hook.model.predicates import ArgPredicate
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.runtime.screening import FoldedArguments, screened_tools, screening_arguments

MINE = Minefield(id="mf", tool="op_danger", args=(ArgPredicate(arg="target", op="eq", value="+15550001"),), reason="forbidden")


def _evaluator() -> Evaluator:
    return Evaluator(blueprint(["a"], minefields=[MINE]))


def test_folded_arguments_find_names_in_any_case_or_width() -> None:
    """Lookup ignores case and Unicode width; the first of two spellings wins."""
    args = FoldedArguments({"Target": 1, "ＴＡＲＧＥＴ": 2, "x": 3})
    assert "target" in args and args["TARGET"] == 1 and len(args) == 2


@pytest.mark.parametrize(
    ("call", "halts"),
    [
        (ToolCall("c", "op_danger", {"target": "+15550001"}), True),
        (ToolCall("c", "op_danger", {"TARGET": " +15550001 "}), True),
        (ToolCall("c", "op_danger", {"target": 15550001}), True),
        (ToolCall("c", "op_danger", None, json.dumps({"target": "+15550001"})), True),
        (ToolCall("c", "op_danger", None, json.dumps(json.dumps({"target": "+15550001"}))), True),
        (ToolCall("c", "(op_danger)", {"target": "+15550001"}, rejected="unknown tool", suspected_tools=("op_danger",)), True),
        (ToolCall("c", "x", {"target": "+15550001"}, canonical_tool="op_danger"), True),
        (ToolCall("c", "op_danger", {"target": "+15550002"}), False),
        # A refused call is read for the minefield tools its name spells, suspects listed or not.
        (ToolCall("c", "(op_danger)", {"target": "+15550001"}, rejected="unknown tool"), True),
        (ToolCall("c", "op_safe", {"target": "+15550001"}, rejected="unknown tool"), False),
        (ToolCall("c", "op_danger", {"target": "+15550001"}, actor="user"), False),
    ],
)
def test_fatal_minefields_are_screened_on_every_tool_the_call_could_mean(call: ToolCall, halts: bool) -> None:
    """A fatal minefield halts on its tool under any name the call resolves to or names, and on its
    arguments in any casing or encoding; other values and user calls pass."""
    ev = _evaluator()
    assert (ev.screen(call) is not None) is halts
    if halts:
        with pytest.raises(Halt) as stop:
            ev.observe(call)
        assert stop.value.stop.reason == "fatal_minefield" and stop.value.stop.tool == "op_danger"
    else:
        assert ev.observe(call) is None


def test_a_refused_call_never_settles_and_counts_as_malformed() -> None:
    """Even with a successful result, a call refused before it ran settles nothing and is structural."""
    ev = _evaluator()
    ev.observe(ToolCall("c", "op_a", {"x": "1"}, rejected="unknown tool 'op_a '"))
    ev.observe(ToolResult("c", "ok"))
    report = ev.finish()
    assert report.settled == [] and report.steps[0].structural == 1


def test_rejected_calls_round_trip_through_event_files() -> None:
    """The refusal and the suspected tools survive writing and reading an event file."""
    call = ToolCall("c", "(op_danger)", {"a": 1}, rejected="unknown tool", suspected_tools=("op_danger",))
    line = json.dumps(event_to_record(call))
    assert parse_event_line(line, lineno=1, source="t") == call


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (ToolCall("c", "a", {}), ("a",)),
        (ToolCall("c", "a", {}, canonical_tool="b"), ("a", "b")),
        (ToolCall("c", "a", {}, canonical_tool="a", suspected_tools=("a", "c")), ("a", "c")),
    ],
)
def test_screened_tools_lists_each_name_once(call: ToolCall, expected: tuple[str, ...]) -> None:
    """Names are screened once each, the called name first."""
    assert screened_tools(call) == expected


@pytest.mark.parametrize("raw", ["not json", "[1]", '"text"', "{" * 10_000, "x" * 300_000])
def test_unreadable_payloads_are_not_screened(raw: str) -> None:
    """A payload holding no object gives nothing to screen (and never raises)."""
    assert screening_arguments(ToolCall("c", "a", None, raw)) is None


