"""Inspect AI's messages, tool calls and tool events as DynSTEER's framework-neutral events.

One converter, ``SampleFeed``, serves the live adapter and the replay of ``.eval`` logs alike,
so a log replayed reaches the evaluator as the live sample did. It reads a sample's
conversation incrementally: system and user messages become ``SystemMessage`` and
``UserMessage``; an assistant message without tool calls is the agent speaking to the user
(``AgentMessage``); an assistant message with tool calls yields a ``ToolCall`` per call, all of
the message's calls at once (one action, whatever order Inspect runs them in); a tool message
yields the ``ToolResult`` of its call unless the result came in already (live, from the
reviewer; in replay, from the sample's ``ToolEvent``). Every call and result is fed once.

A call Inspect refuses before it runs (arguments that did not parse, a tool that is not
offered) is a rejected call: it never settles a milestone and counts as malformed.
Everything here is hostile input: text is bounded, and nothing raises on an odd message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from inspect_ai.event import ApprovalEvent, ToolEvent
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolCallError

from dynsteer_hook.model.events import AgentMessage, Event, SystemMessage, ToolCall, ToolResult, UserMessage

MAX_TEXT = 200_000
"""Characters kept of one message or tool result (the rest is cut: a hostile tool may answer with megabytes)."""


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text[:MAX_TEXT]


def message_text(message: ChatMessage) -> str:
    """The plain text of a message (its text parts joined), bounded."""
    try:
        return _text(message.text)
    except Exception:  # a content part of a shape this version does not know
        return ""


def tool_call_event(call: InspectToolCall, offered: frozenset[str] | None) -> ToolCall:
    """The event of one tool call as the agent issued it.

    Args:
        call: Inspect's tool call.
        offered: Names of the tools the agent was offered (None: not known, no name check).
    """
    function = call.function if isinstance(call.function, str) and call.function else "?"
    arguments: dict[str, Any] | None = call.arguments if isinstance(call.arguments, dict) else None
    rejected: str | None = None
    raw: str | None = None
    if call.parse_error:
        rejected = f"the arguments did not parse: {_text(call.parse_error)[:400]}"
        arguments = None
        raw = ""
    elif arguments is None:
        rejected = "the arguments are not a JSON object"
        raw = _text(json.dumps(call.arguments, default=str))
    elif offered is not None and function not in offered:
        rejected = f"{function[:200]!r} is not an offered tool"
    return ToolCall(str(call.id), function, arguments, raw, rejected=rejected)


def _error_text(error: ToolCallError | None) -> str | None:
    if error is None:
        return None
    return f"{error.type}: {_text(error.message)[:2000]}"


def tool_result_event(call_id: str, result: Any, error: ToolCallError | None) -> ToolResult:
    """The event of a call's result (the text the model was shown, the error it raised)."""
    text = result if isinstance(result, str) else _result_text(result)
    return ToolResult(str(call_id), _text(text), _error_text(error))


def _result_text(result: Any) -> str:
    if isinstance(result, list):  # content parts: the text ones, in order
        return "\n".join(str(getattr(p, "text", "")) for p in result if getattr(p, "text", None))
    return str(result)


class SampleFeed:
    """Turns one sample's conversation into events, each call and result once.

    Args:
        offered: Names of the offered tools (a call of another name is rejected), or None.
        results: Results to use for calls instead of the tool messages (replay: from the
            sample's ``ToolEvent``s, which hold the results of calls whose message never came,
            such as the last call of a terminated sample).
    """

    def __init__(self, offered: Iterable[str] | None = None, results: dict[str, ToolResult] | None = None) -> None:
        self._offered = frozenset(offered) if offered is not None else None
        self._consumed = 0
        self._calls: set[str] = set()
        self._results: set[str] = set()
        self._known = results or {}
        self.turns = 0
        """Agent turns (assistant messages) seen so far: the execution batches of a replay."""

    def call(self, call: InspectToolCall) -> ToolCall | None:
        """The event of a call outside the conversation read so far, or None when it was fed already."""
        if str(call.id) in self._calls:
            return None
        self._calls.add(str(call.id))
        return tool_call_event(call, self._offered)

    def result(self, call_id: str, result: Any, error: ToolCallError | None) -> ToolResult | None:
        """The result event of a call that ran, or None when it was fed already (or its call never was)."""
        if call_id in self._results or call_id not in self._calls:
            return None
        self._results.add(call_id)
        return tool_result_event(call_id, result, error)

    def messages(self, messages: Sequence[ChatMessage]) -> Iterator[Event]:
        """The events of the messages not read yet (the conversation only grows; a shorter one is read from its start
        again, its calls and results still fed once)."""
        if len(messages) < self._consumed:
            self._consumed = 0
        new = messages[self._consumed:]
        self._consumed = len(messages)
        for message in new:
            yield from self._message(message)

    def _message(self, message: ChatMessage) -> Iterator[Event]:
        if isinstance(message, ChatMessageSystem):
            yield SystemMessage(message_text(message))
        elif isinstance(message, ChatMessageUser):
            yield UserMessage(message_text(message))
        elif isinstance(message, ChatMessageAssistant):
            self.turns += 1
            calls = [c for c in message.tool_calls or [] if str(c.id) not in self._calls]
            if not message.tool_calls:
                text = message_text(message)
                if text.strip():
                    yield AgentMessage(text)
            for call in calls:
                self._calls.add(str(call.id))
                yield tool_call_event(call, self._offered)
            for call in calls:  # replay: the results the log holds, as soon as the calls were issued
                known = self._known.get(str(call.id))
                if known is not None and str(call.id) not in self._results:
                    self._results.add(str(call.id))
                    yield known
        elif isinstance(message, ChatMessageTool):
            call_id = str(message.tool_call_id or "")
            event = self.result(call_id, message.content if not isinstance(message.content, str) else message.text, message.error)
            if event is not None:
                yield event


def tool_event_results(events: Iterable[Any]) -> dict[str, ToolResult]:
    """The result of every call a sample's ``ToolEvent``s record as run: not a pending call, nor one an approver
    rejected or terminated (its event holds no result the agent was shown)."""
    events = list(events)
    refused = {str(e.call.id) for e in events if isinstance(e, ApprovalEvent) and e.decision in ("reject", "terminate")}
    out: dict[str, ToolResult] = {}
    for e in events:
        if not isinstance(e, ToolEvent) or e.pending or e.id in refused or e.id in out:
            continue
        if e.error is None and not e.result and (e.failed or e.completed is None):
            continue  # started and never finished, or failed before it returned anything
        out[e.id] = tool_result_event(e.id, e.result, e.error)
    return out
