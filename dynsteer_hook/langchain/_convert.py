"""LangChain's messages, tool calls and tools as DynSTEER's framework-neutral events and tool schemas.

A model turn is one ``AIMessage``: with tool calls, a ``ToolCall`` per call, all of them before any
runs (one action, whatever order the tool node runs them in); without, the agent speaking to the
user (``AgentMessage``). A call the model made to a tool it was not given, and one whose arguments
did not parse (LangChain's ``invalid_tool_calls``), is a rejected call: it never settles a
milestone and counts as malformed; the second never reaches the tool node, so its result (an
error) is fed at once. A ``ToolMessage`` is the result of its call, an error when its status says
so. Everything here is untrusted: text is bounded and nothing raises on an odd message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages import SystemMessage as LCSystemMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from dynsteer_hook.model.blueprint import ToolSpec
from dynsteer_hook.model.events import AgentMessage, Event, SystemMessage, ToolCall, ToolResult, UserMessage

MAX_TEXT = 200_000
"""Characters kept of one message or tool result (a hostile tool may answer with megabytes)."""


def text_of(content: Any) -> str:
    """The plain text of a message's content (a string, or the text of its content blocks), bounded."""
    if isinstance(content, str):
        return content[:MAX_TEXT]
    if isinstance(content, list):
        parts = [b if isinstance(b, str) else b.get("text", "") if isinstance(b, dict) and b.get("type") == "text" else "" for b in content]
        return "\n".join(p for p in parts if isinstance(p, str) and p)[:MAX_TEXT]
    return "" if content is None else str(content)[:MAX_TEXT]


def tool_spec(tool: BaseTool | dict[str, Any]) -> ToolSpec:
    """The agent-facing schema of one tool, as the model receives it (a provider's built-in tool: its name only)."""
    try:
        function = convert_to_openai_tool(tool)["function"]
        return ToolSpec(name=function["name"], description=function.get("description") or "",
                        parameters=function.get("parameters") or {"type": "object", "properties": {}})
    except Exception:  # a provider tool ({"type": "web_search"}) has no function schema
        name = tool.name if isinstance(tool, BaseTool) else str(tool.get("name") or tool.get("type") or "?")
        return ToolSpec(name=name or "?")


def tool_specs(tools: Iterable[BaseTool | dict[str, Any]]) -> tuple[ToolSpec, ...]:
    """The schemas of the offered tools, sorted by name."""
    return tuple(sorted((tool_spec(t) for t in tools), key=lambda s: s.name))


def call_id(call: dict[str, Any], fallback: str) -> str:
    """A tool call's id, or ``fallback`` for a model that gives none."""
    value = call.get("id")
    return str(value) if value else fallback


def turn_events(message: AIMessage, offered: frozenset[str] | None, turn: int) -> list[Event]:
    """The events of one model turn: its calls (then the results of those that can never run), or its words to the user.

    Args:
        message: The model's message.
        offered: Names of the tools the model was given (a call of another name is rejected), or None.
        turn: The turn's number, for the ids of calls that come without one.
    """
    calls: list[Event] = []
    failed: list[Event] = []
    for i, call in enumerate(message.tool_calls or []):
        name = str(call.get("name") or "?")
        args = call.get("args")
        rejected = None if offered is None or name in offered else f"{name[:200]!r} is not an offered tool"
        calls.append(ToolCall(call_id(call, f"turn{turn}-{i}"), name, args if isinstance(args, dict) else None, rejected=rejected))
    for i, bad in enumerate(message.invalid_tool_calls or []):
        cid = call_id(dict(bad), f"turn{turn}-bad{i}")
        raw = bad.get("args")
        reason = f"the arguments did not parse: {text_of(bad.get('error') or 'not a JSON object')[:400]}"
        calls.append(ToolCall(cid, str(bad.get("name") or "?"), None, raw if isinstance(raw, str) else json.dumps(raw, default=str), rejected=reason))
        failed.append(ToolResult(cid, None, reason))
    if calls:
        return calls + failed
    text = text_of(message.content)
    return [AgentMessage(text)] if text.strip() else []


def result_event(cid: str, message: ToolMessage | None) -> ToolResult:
    """The result of a call that ran: the text the model is shown, an error when the message's status says so."""
    if message is None:
        return ToolResult(cid, None)
    text = text_of(message.content)
    return ToolResult(cid, None, text or "error") if message.status == "error" else ToolResult(cid, text)


def conversation_events(message: BaseMessage) -> list[Event]:
    """The events of a message the agent was given (a system or user message); none for the agent's own or tools'."""
    if isinstance(message, HumanMessage):
        return [UserMessage(text_of(message.content))]
    if isinstance(message, LCSystemMessage):
        return [SystemMessage(text_of(message.content))]
    return []
