"""Inspect's messages as DynSTEER events: each call and result once, refused calls malformed, hostile text bounded."""

from __future__ import annotations

from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall as InspectCall
from inspect_ai.tool import ToolCallError

from dynsteer_hook.inspect.convert import MAX_TEXT, SampleFeed
from dynsteer_hook.model.events import AgentMessage, SystemMessage, ToolCall, ToolResult, UserMessage


def test_a_conversation_becomes_events_with_one_action_per_assistant_turn() -> None:
    """The calls of one assistant message come together before any result; text beside calls is not a message."""
    calls = [InspectCall(id="a", function="find_contact", arguments={"name": "Al"}),
             InspectCall(id="b", function="send_email", arguments={"to": "x", "body": "y"})]
    messages = [ChatMessageSystem(content="sys"), ChatMessageUser(content="hi"),
                ChatMessageAssistant(content="let me look", tool_calls=calls),
                ChatMessageTool(content="addr", tool_call_id="a", function="find_contact"),
                ChatMessageTool(content="", tool_call_id="b", function="send_email", error=ToolCallError("unknown", "boom")),
                ChatMessageAssistant(content="done")]
    feed = SampleFeed({"find_contact", "send_email"})
    events = list(feed.messages(messages))
    assert events == [SystemMessage("sys"), UserMessage("hi"), ToolCall("a", "find_contact", {"name": "Al"}),
                      ToolCall("b", "send_email", {"to": "x", "body": "y"}), ToolResult("a", "addr", None),
                      ToolResult("b", "", "unknown: boom"), AgentMessage("done")]
    assert feed.turns == 2
    assert list(feed.messages(messages)) == []  # read once
    assert feed.result("a", "again", None) is None  # a result fed once


def test_refused_calls_are_rejected_and_hostile_text_is_bounded() -> None:
    """Arguments that did not parse and tools not offered are rejected calls; a huge result is cut."""
    calls = [InspectCall(id="p", function="find_contact", arguments={}, parse_error="Expecting value"),
             InspectCall(id="u", function="rm_rf", arguments={"path": "/"})]
    feed = SampleFeed({"find_contact"})
    events = list(feed.messages([ChatMessageUser(content="x" * (MAX_TEXT + 10)), ChatMessageAssistant(content="", tool_calls=calls)]))
    user, parsed, unknown = events
    assert isinstance(user, UserMessage) and len(user.content) == MAX_TEXT
    assert isinstance(parsed, ToolCall) and parsed.arguments is None and parsed.rejected and "did not parse" in parsed.rejected
    assert isinstance(unknown, ToolCall) and unknown.rejected == "'rm_rf' is not an offered tool"
    big = feed.result("u", "y" * (MAX_TEXT * 2), None)
    assert big is not None and len(big.result) == MAX_TEXT
