"""Row-to-event mapping, call parsing and state deltas of the ToolSandbox middleware."""

from __future__ import annotations

import json

import polars as pl
import pytest

from dynsteer_hook.model.events import AgentMessage, SystemMessage, ToolCall, ToolResult, UserMessage
from dynsteer_hook.toolsandbox.live.adapter import RowMapper, _table_change, parse_call_code

pytestmark = pytest.mark.toolsandbox


def test_call_code_is_parsed_into_name_and_arguments() -> None:
    """ToolSandbox's three-line call code yields the execution-facing name and the argument dict."""
    code = "call_1_0_parameters = {'name': 'Fredrik', 'is_self': False}\ncall_1_0_response = search_contacts(**call_1_0_parameters)\nprint(repr(call_1_0_response))"
    assert parse_call_code(code) == ("search_contacts", {"name": "Fredrik", "is_self": False}, None)


def test_a_payload_that_is_not_an_object_is_kept_raw() -> None:
    """A string payload is not arguments: it is reported raw (an unparseable call)."""
    code = "c_parameters = 'on: false'\nc_response = set_wifi_status(**c_parameters)\nprint(repr(c_response))"
    assert parse_call_code(code) == ("set_wifi_status", None, "on: false")


def test_code_that_is_not_a_call_is_kept_raw() -> None:
    """Arbitrary text yields no name and the whole text as raw payload."""
    assert parse_call_code("print('hi')") == (None, None, "print('hi')")


def _row(sender: str, recipient: str, content: str = "", **extra: object) -> dict[str, object]:
    return {"sender": sender, "recipient": recipient, "content": content, "visible_to": None, "sandbox_message_index": 1, **extra}


def test_rows_map_to_events_by_sender_and_recipient() -> None:
    """Each conversational row becomes the matching event; user-simulator rows are dropped."""
    m = RowMapper()
    assert m.map(_row("SYSTEM", "AGENT", "be careful")) == SystemMessage("be careful")
    assert m.map(_row("SYSTEM", "USER", "secret instructions")) is None
    assert m.map(_row("SYSTEM", "EXECUTION_ENVIRONMENT", "import json")) is None
    assert m.map(_row("USER", "AGENT", "hi", visible_to=["USER"])) is None
    assert m.map(_row("USER", "AGENT", "hi")) == UserMessage("hi")
    assert m.map(_row("AGENT", "USER", "done")) == AgentMessage("done")


def test_agent_call_row_carries_agent_facing_and_execution_facing_names() -> None:
    """A scrambled call keeps the name the agent used and the name that executes."""
    code = "call_1_0_parameters = {'on': True}\ncall_1_0_response = set_cellular_service_status(**call_1_0_parameters)\nprint(repr(call_1_0_response))"
    event = RowMapper().map(_row("AGENT", "EXECUTION_ENVIRONMENT", code, openai_tool_call_id="call_1_0", openai_function_name="setting_5"))
    assert event == ToolCall("call_1_0", "setting_5", {"on": True}, None, "set_cellular_service_status", "agent")


def test_result_row_takes_the_value_from_the_tool_trace() -> None:
    """The result value comes from the tool trace, the exception from the exception column."""
    trace = [json.dumps({"tool_name": "search_contacts", "arguments": {}, "result": [{"name": "A"}]})]
    event = RowMapper().map(_row("EXECUTION_ENVIRONMENT", "AGENT", "[{'name': 'A'}]", openai_tool_call_id="c", tool_trace=trace, tool_call_exception=None))
    assert event == ToolResult("c", [{"name": "A"}], None, ())
    failed = RowMapper().map(_row("EXECUTION_ENVIRONMENT", "AGENT", "TypeError: bad", openai_tool_call_id="c", tool_trace=None, tool_call_exception="TypeError: bad"))
    assert isinstance(failed, ToolResult) and failed.exception == "TypeError: bad" and failed.result is None


def test_user_tool_calls_are_user_actor_events() -> None:
    """The user's end_conversation call is a user-actor call, answered by the next result row."""
    m = RowMapper()
    code = "user_end_parameters = {}\nuser_end_response = end_conversation(**user_end_parameters)\nprint(repr(user_end_response))"
    call = m.map(_row("USER", "EXECUTION_ENVIRONMENT", code))
    assert isinstance(call, ToolCall) and call.actor == "user" and call.tool == "end_conversation"
    result = m.map(_row("EXECUTION_ENVIRONMENT", "USER", "None", tool_trace=None, tool_call_exception=None))
    assert isinstance(result, ToolResult) and result.call_id == call.call_id


def test_table_change_reports_added_removed_and_updated_rows_by_key() -> None:
    """Rows are matched on the table's first column (its id)."""
    before = pl.DataFrame({"person_id": ["a", "b"], "name": ["Ann", "Bob"]})
    after = pl.DataFrame({"person_id": ["b", "c"], "name": ["Bobby", "Cy"]})
    change = _table_change("CONTACT", before, after)
    assert change is not None
    assert change.added == ({"person_id": "c", "name": "Cy"},)
    assert change.removed == ({"person_id": "a", "name": "Ann"},)
    assert change.updated == (({"person_id": "b", "name": "Bob"}, {"person_id": "b", "name": "Bobby"}),)


def test_table_change_with_duplicate_ids_falls_back_to_whole_rows() -> None:
    """Duplicate ids (ToolSandbox's messages have some) give a multiset difference of rows."""
    before = pl.DataFrame({"message_id": ["m", "m"], "content": ["x", "y"]})
    after = pl.DataFrame({"message_id": ["m", "m", "n"], "content": ["x", "y", "z"]})
    change = _table_change("MESSAGING", before, after)
    assert change is not None and change.added == ({"message_id": "n", "content": "z"},) and not change.removed


def test_unchanged_table_has_no_change() -> None:
    """Equal frames produce no change record."""
    frame = pl.DataFrame({"device_id": ["d"], "wifi": [True]})
    assert _table_change("SETTING", frame, frame.clone()) is None
