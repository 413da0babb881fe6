"""Event records: JSONL parsing at the trust boundary, clear errors, and the round trip back to records."""

from __future__ import annotations

import json

import pytest

from dynsteer_hook.model.errors import EventFileError
from dynsteer_hook.model.events import (
    AgentMessage,
    Event,
    StateChange,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
    event_to_record,
    parse_event_line,
)


def parse(obj: object, lineno: int = 1) -> Event | None:
    return parse_event_line(json.dumps(obj), lineno=lineno, source="trace.jsonl")


@pytest.mark.parametrize(
    ("record", "event"),
    [
        ({"kind": "system_message", "content": "be nice"}, SystemMessage("be nice")),
        ({"kind": "user_message", "content": "hi"}, UserMessage("hi")),
        ({"kind": "agent_message", "content": "done"}, AgentMessage("done")),
        ({"kind": "tool_call", "call_id": "1", "tool": "t", "arguments": {"a": 1}}, ToolCall("1", "t", {"a": 1})),
        (
            {"kind": "tool_call", "call_id": "1", "tool": "t", "arguments": {}, "canonical_tool": "real_t", "actor": "user"},
            ToolCall("1", "t", {}, None, "real_t", "user"),
        ),
        ({"kind": "tool_result", "call_id": "1", "result": [1, 2]}, ToolResult("1", [1, 2])),
        ({"kind": "tool_result", "call_id": "1", "exception": "KeyError: x"}, ToolResult("1", None, "KeyError: x")),
    ],
)
def test_each_kind_parses_to_its_event(record: dict[str, object], event: Event) -> None:
    """Every record kind becomes the matching frozen event."""
    assert parse(record) == event


def test_state_changes_parse() -> None:
    """State changes keep added, removed and updated rows per namespace."""
    rec = {
        "kind": "tool_result",
        "call_id": "1",
        "state_changes": [
            {"namespace": "CONTACT", "added": [{"name": "a"}], "updated": [{"before": {"n": 1}, "after": {"n": 2}}]}
        ],
    }
    ev = parse(rec)
    assert isinstance(ev, ToolResult)
    (change,) = ev.state_changes
    assert change == StateChange("CONTACT", ({"name": "a"},), (), (({"n": 1}, {"n": 2}),))
    assert not change.empty and StateChange("X").empty


def test_string_arguments_holding_an_object_are_parsed() -> None:
    """Arguments given as JSON text of an object are parsed into a mapping."""
    ev = parse({"kind": "tool_call", "call_id": "1", "tool": "t", "arguments": '{"a": 1}'})
    assert isinstance(ev, ToolCall) and ev.arguments == {"a": 1} and ev.raw_arguments is None


@pytest.mark.parametrize("payload", ["{broken", "[1, 2]", "plain text"])
def test_unparseable_arguments_are_kept_raw(payload: str) -> None:
    """Arguments that are not a JSON object leave arguments None and keep the raw payload."""
    ev = parse({"kind": "tool_call", "call_id": "1", "tool": "t", "arguments": payload})
    assert isinstance(ev, ToolCall) and ev.arguments is None and ev.raw_arguments == payload


@pytest.mark.parametrize("line", ["", "   ", "\n"])
def test_blank_lines_are_skipped(line: str) -> None:
    """Blank lines yield no event."""
    assert parse_event_line(line, lineno=3, source="f") is None


def test_meta_records_are_skipped() -> None:
    """Meta records carry file information, not events."""
    assert parse({"kind": "meta", "task": "x", "format": "dynsteer-events", "version": 1}) is None


def test_invalid_json_line_names_file_and_line() -> None:
    """A line that is not JSON is one sentence naming the file and the line number."""
    with pytest.raises(EventFileError, match=r"^trace\.jsonl line 7 is not valid JSON \(.*\); each line must be one JSON object$"):
        parse_event_line("{oops", lineno=7, source="trace.jsonl")


@pytest.mark.parametrize("obj", [[1], {"content": "x"}, "text"])
def test_line_without_kind_is_rejected(obj: object) -> None:
    """A JSON value that is not an object with a kind is rejected naming the line."""
    with pytest.raises(EventFileError, match=r"trace\.jsonl line 4 has no 'kind'"):
        parse(obj, lineno=4)


@pytest.mark.parametrize(
    ("record", "where"),
    [
        ({"kind": "tool_call", "tool": "t", "arguments": {}}, "call_id"),
        ({"kind": "tool_call", "call_id": "1", "tool": "t", "arguments": 5}, "arguments"),
        ({"kind": "tool_call", "call_id": "1", "tool": "t", "arguments": {}, "actor": "robot"}, "actor"),
        ({"kind": "user_message", "content": "x", "extra": 1}, "extra"),
        ({"kind": "tool_result", "call_id": ""}, "call_id"),
    ],
)
def test_malformed_record_names_line_and_field(record: dict[str, object], where: str) -> None:
    """A record of the wrong shape is rejected naming the line, its kind and the offending field."""
    with pytest.raises(EventFileError) as exc:
        parse(record, lineno=12)
    msg = str(exc.value)
    assert msg.startswith(f"trace.jsonl line 12 ({record['kind']!r}) is malformed at {where}")
    assert "\n" not in msg


def test_unknown_kind_is_rejected() -> None:
    """An unknown kind is rejected naming the line."""
    with pytest.raises(EventFileError, match=r"line 2 \('thought'\) is malformed"):
        parse({"kind": "thought", "content": "hmm"}, lineno=2)


@pytest.mark.parametrize(
    "event",
    [
        SystemMessage("s"),
        UserMessage("u"),
        AgentMessage("a"),
        ToolCall("1", "t", {"a": [1, 2]}),
        ToolCall("1", "t", None, "{bad"),
        ToolCall("1", "t", {}, None, "canon", "user"),
        ToolResult("1", {"r": 1}),
        ToolResult("1", None, "boom"),
        ToolResult("1", "ok", None, (StateChange("DB", ({"a": 1},), ({"b": 2},), (({"c": 1}, {"c": 2}),)),)),
    ],
)
def test_event_record_round_trip(event: Event) -> None:
    """event_to_record and parse_event_line are inverse for every event kind."""
    line = json.dumps(event_to_record(event))
    assert parse_event_line(line, lineno=1, source="f") == event


def test_non_json_results_are_stored_as_repr() -> None:
    """A tool result that JSON cannot hold is recorded as its repr instead of failing."""
    rec = event_to_record(ToolResult("1", {1, 2}))
    assert rec["result"] == repr({1, 2})
    json.dumps(rec)
