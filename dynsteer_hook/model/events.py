"""The framework-neutral event model and its JSONL file format.

Inside the process, events are frozen dataclasses. In files, each line is one JSON
object with a ``kind`` (see ``EVENT_RECORD_SCHEMA``); pydantic checks those records at
the boundary. Any agent loop that can write these lines can feed the evaluator.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from dynsteer_hook.model.errors import EventFileError, validation_problem
from dynsteer_hook.model.json_text import JsonTextError, loads

Actor = Literal["agent", "user"]


@dataclass(frozen=True, slots=True)
class StateChange:
    """Rows one tool call added, removed or updated in one namespace (table)."""

    namespace: str
    added: tuple[Mapping[str, Any], ...] = ()
    removed: tuple[Mapping[str, Any], ...] = ()
    updated: tuple[tuple[Mapping[str, Any], Mapping[str, Any]], ...] = ()

    @property
    def empty(self) -> bool:
        """Whether nothing changed."""
        return not (self.added or self.removed or self.updated)


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """A system instruction visible to the agent."""

    content: str


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A user utterance addressed to the agent."""

    content: str


@dataclass(frozen=True, slots=True)
class AgentMessage:
    """An agent utterance addressed to the user: the agent yields control."""

    content: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call, before it executes.

    Attributes:
        call_id: Links the call to its result.
        tool: Tool name as the caller used it (agent-facing, possibly scrambled).
        arguments: Parsed arguments, or ``None`` when the payload was not a JSON object.
        raw_arguments: The unparsed payload when ``arguments`` is ``None``.
        canonical_tool: Execution-facing tool name when it differs from ``tool``.
        actor: Who called: the agent, or the user (e.g. ending the conversation).
        rejected: Why the call was refused before it could execute (a name that is not an
            offered tool, arguments that are not a JSON object), or ``None``. A rejected call
            never settles a milestone; it is a malformed call.
        suspected_tools: For a rejected call, the offered tools its text names (in any
            spelling); minefield interception screens them as if the call had named them.
    """

    call_id: str
    tool: str
    arguments: Mapping[str, Any] | None
    raw_arguments: str | None = None
    canonical_tool: str | None = None
    actor: Actor = "agent"
    rejected: str | None = None
    suspected_tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The execution result of a call, with the database change it caused."""

    call_id: str
    result: Any = None
    exception: str | None = None
    state_changes: tuple[StateChange, ...] = field(default_factory=tuple)


Event = SystemMessage | UserMessage | AgentMessage | ToolCall | ToolResult


# ---- file records (trust boundary) -------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UpdatedRow(_Record):
    before: dict[str, Any]
    after: dict[str, Any]


class StateChangeRecord(_Record):
    namespace: str = Field(min_length=1)
    added: list[dict[str, Any]] = Field(default_factory=list)
    removed: list[dict[str, Any]] = Field(default_factory=list)
    updated: list[UpdatedRow] = Field(default_factory=list)


class MetaRecord(_Record):
    kind: Literal["meta"]
    task: str | None = None
    format: str | None = None
    version: int | None = None
    info: dict[str, Any] = Field(default_factory=dict)


class SystemMessageRecord(_Record):
    kind: Literal["system_message"]
    content: str


class UserMessageRecord(_Record):
    kind: Literal["user_message"]
    content: str


class AgentMessageRecord(_Record):
    kind: Literal["agent_message"]
    content: str


class ToolCallRecord(_Record):
    kind: Literal["tool_call"]
    call_id: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(description="A JSON object, or the raw payload text when it is not one.")
    canonical_tool: str | None = None
    actor: Actor = "agent"
    rejected: str | None = Field(default=None, description="Why the call was refused before it could execute, if it was.")
    suspected_tools: list[str] = Field(default_factory=list, description="For a rejected call: offered tools its text names.")


class ToolResultRecord(_Record):
    kind: Literal["tool_result"]
    call_id: str = Field(min_length=1)
    result: Any = None
    exception: str | None = None
    state_changes: list[StateChangeRecord] = Field(default_factory=list)


EventRecord = Annotated[
    MetaRecord | SystemMessageRecord | UserMessageRecord | AgentMessageRecord | ToolCallRecord | ToolResultRecord,
    Field(discriminator="kind"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(EventRecord)


def event_record_schema() -> dict[str, Any]:
    """JSON Schema of one line of an event file."""
    schema = _ADAPTER.json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "DynSTEER event record (one JSON object per line)"
    return schema


def _parse_arguments(value: dict[str, Any] | str) -> tuple[Mapping[str, Any] | None, str | None]:
    if isinstance(value, dict):
        return value, None
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):  # not JSON, an integer Python will not parse, too deep
        return None, value
    return (parsed, None) if isinstance(parsed, dict) else (None, value)


def record_to_event(rec: Any) -> Event | None:
    """The in-process event of a validated record (``None`` for meta records)."""
    if isinstance(rec, MetaRecord):
        return None
    if isinstance(rec, SystemMessageRecord):
        return SystemMessage(rec.content)
    if isinstance(rec, UserMessageRecord):
        return UserMessage(rec.content)
    if isinstance(rec, AgentMessageRecord):
        return AgentMessage(rec.content)
    if isinstance(rec, ToolCallRecord):
        args, raw = _parse_arguments(rec.arguments)
        return ToolCall(rec.call_id, rec.tool, args, raw, rec.canonical_tool, rec.actor, rec.rejected, tuple(rec.suspected_tools))
    if isinstance(rec, ToolResultRecord):
        changes = tuple(
            StateChange(
                c.namespace,
                tuple(c.added),
                tuple(c.removed),
                tuple((u.before, u.after) for u in c.updated),
            )
            for c in rec.state_changes
        )
        return ToolResult(rec.call_id, rec.result, rec.exception, changes)
    raise TypeError(f"unknown record {type(rec).__name__}")  # pragma: no cover


def parse_event_line(line: str, *, lineno: int, source: str) -> Event | None:
    """Parse one JSONL line into an event (``None`` for meta records and blank lines).

    Raises:
        EventFileError: One sentence naming the file, the line and what is wrong.
    """
    if not line.strip():
        return None
    try:
        data = loads(line)
    except JsonTextError as exc:
        raise EventFileError(f"{source} line {lineno} {exc}; each line must be one JSON object") from None
    if not isinstance(data, dict) or "kind" not in data:
        raise EventFileError(f"{source} line {lineno} has no 'kind'; each line must be an object with a kind such as 'tool_call'")
    try:
        rec = _ADAPTER.validate_python(data)
    except ValidationError as exc:
        # The first part of the location is the union's tag (the kind), already named in the message.
        raise EventFileError(
            f"{source} line {lineno} ({data.get('kind')!r}) is malformed at {validation_problem(exc, skip=1, top='record')}; "
            "see the event schema (dynsteer schema events)"
        ) from None
    return record_to_event(rec)


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def event_to_record(event: Event) -> dict[str, Any]:
    """The JSON record of an event (the inverse of ``parse_event_line``)."""
    if isinstance(event, SystemMessage):
        return {"kind": "system_message", "content": event.content}
    if isinstance(event, UserMessage):
        return {"kind": "user_message", "content": event.content}
    if isinstance(event, AgentMessage):
        return {"kind": "agent_message", "content": event.content}
    if isinstance(event, ToolCall):
        rec: dict[str, Any] = {
            "kind": "tool_call",
            "call_id": event.call_id,
            "tool": event.tool,
            "arguments": dict(event.arguments) if event.arguments is not None else (event.raw_arguments or ""),
        }
        if event.canonical_tool is not None:
            rec["canonical_tool"] = event.canonical_tool
        if event.actor != "agent":
            rec["actor"] = event.actor
        if event.rejected is not None:
            rec["rejected"] = event.rejected
        if event.suspected_tools:
            rec["suspected_tools"] = list(event.suspected_tools)
        return _jsonable(rec)  # type: ignore[no-any-return]
    rec = {"kind": "tool_result", "call_id": event.call_id, "result": _jsonable(event.result), "exception": event.exception}
    if event.state_changes:
        rec["state_changes"] = [
            {
                "namespace": c.namespace,
                "added": [_jsonable(dict(r)) for r in c.added],
                "removed": [_jsonable(dict(r)) for r in c.removed],
                "updated": [{"before": _jsonable(dict(b)), "after": _jsonable(dict(a))} for b, a in c.updated],
            }
            for c in event.state_changes
        ]
    return rec
