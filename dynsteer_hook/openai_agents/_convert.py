"""The OpenAI Agents SDK's model output items, input items and tools as DynSTEER's events and tool schemas.

A model turn is the output of one model call: its function calls become a ``ToolCall`` each, all
of them before any runs (one action, whatever order the SDK runs them in); without calls, the
text of its messages is the agent speaking to the user (``AgentMessage``). Arguments that are not
a JSON object, and a name the agent does not offer, make a rejected call: it never settles a
milestone and counts as malformed. Reasoning items and hosted tools' calls are not the agent's
actions on the task's tools and are left out. Everything here is untrusted: text is bounded and
nothing raises on an odd item.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from agents import FunctionTool, Tool

from dynsteer_hook.model.blueprint import ToolSpec
from dynsteer_hook.model.events import AgentMessage, Event, ToolCall, UserMessage

MAX_TEXT = 200_000
"""Characters kept of one message or tool result (a hostile tool may answer with megabytes)."""


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def text_of(value: Any) -> str:
    """The plain text of a message's content (a string, or its text parts), or of a tool's output, bounded."""
    if isinstance(value, str):
        return value[:MAX_TEXT]
    if isinstance(value, list):
        parts = [_get(p, "text") for p in value]
        return "\n".join(p for p in parts if isinstance(p, str) and p)[:MAX_TEXT]
    if value is None:
        return ""
    try:
        return json.dumps(value, default=str, ensure_ascii=False)[:MAX_TEXT]
    except (TypeError, ValueError, RecursionError):
        return str(value)[:MAX_TEXT]


def tool_spec(tool: Tool) -> ToolSpec:
    """The agent-facing schema of one tool (a hosted tool: its name only)."""
    if isinstance(tool, FunctionTool):
        return ToolSpec(name=tool.name, description=tool.description or "",
                        parameters=tool.params_json_schema or {"type": "object", "properties": {}})
    return ToolSpec(name=str(getattr(tool, "name", None) or type(tool).__name__))


def tool_specs(tools: Iterable[Tool]) -> tuple[ToolSpec, ...]:
    """The schemas of the offered tools, sorted by name."""
    return tuple(sorted((tool_spec(t) for t in tools), key=lambda s: s.name))


def call_event(call_id: str, name: str, arguments: Any, offered: frozenset[str] | None) -> ToolCall:
    """The event of one function call as the model issued it (its arguments as the JSON text the model wrote)."""
    args: dict[str, Any] | None = None
    raw: str | None = None
    rejected: str | None = None
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            args = parsed
        else:
            raw, rejected = arguments[:MAX_TEXT], "the arguments are not a JSON object"
    elif isinstance(arguments, dict):
        args = arguments
    else:
        raw, rejected = text_of(arguments), "the arguments are not a JSON object"
    if rejected is None and offered is not None and name not in offered:
        rejected = f"{name[:200]!r} is not an offered tool"
    return ToolCall(call_id, name, args, raw, rejected=rejected)


def turn_events(output: Sequence[Any], offered: frozenset[str] | None) -> list[Event]:
    """The events of one model turn: its function calls, or the text it says to the user."""
    calls: list[Event] = []
    texts: list[str] = []
    for item in output:
        kind = _get(item, "type")
        if kind == "function_call":
            calls.append(call_event(str(_get(item, "call_id") or _get(item, "id") or "?"), str(_get(item, "name") or "?"),
                                    _get(item, "arguments"), offered))
        elif kind == "message":
            texts.append(text_of(_get(item, "content")))
    if calls:
        return calls
    text = "\n".join(t for t in texts if t)
    return [AgentMessage(text)] if text.strip() else []


def user_messages(items: str | Sequence[Any]) -> list[UserMessage]:
    """The user's messages among a model call's input items, in order."""
    if isinstance(items, str):
        return [UserMessage(items[:MAX_TEXT])]
    return [UserMessage(text_of(_get(i, "content"))) for i in items
            if _get(i, "role") == "user" and _get(i, "type") in (None, "message")]
