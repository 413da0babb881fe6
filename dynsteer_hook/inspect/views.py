"""The public task view of an Inspect sample, and blueprints compiled from it.

What a blueprint compiler may see of a sample (paper eq. 1): the system and user messages
before the agent first acts, and the tools as the agent receives them (name, description,
JSON-Schema parameters from their ``ToolDef``). Inspect samples have no database, so the
view's database headers are empty. Compilation goes through the package's compiler: LLM
candidates (``llm.candidates``) merged by contract validation and strict-majority consensus
(``compile.compiler``); ToolSandbox's deterministic generator does not apply here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageSystem, ChatMessageUser
from inspect_ai.tool import Tool, ToolDef, ToolInfo

from dynsteer_hook.compile.compiler import DEFAULT_CANDIDATES, CandidateSource, compile_blueprint
from dynsteer_hook.inspect.convert import message_text
from dynsteer_hook.model.blueprint import Blueprint, ToolSpec
from dynsteer_hook.model.task_view import PublicMessage, TaskView


def tool_spec(tool: Tool | ToolDef | ToolInfo) -> ToolSpec:
    """The agent-facing schema of one Inspect tool."""
    if isinstance(tool, ToolInfo):
        name, description, params = tool.name, tool.description, tool.parameters
    else:
        tdef = tool if isinstance(tool, ToolDef) else ToolDef(tool)
        name, description, params = tdef.name, tdef.description, tdef.parameters
    schema: dict[str, Any] = params.model_dump(exclude_none=True) if hasattr(params, "model_dump") else dict(params)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return ToolSpec(name=name, description=description or "", parameters=schema)


def tool_specs(tools: Iterable[Tool | ToolDef | ToolInfo]) -> tuple[ToolSpec, ...]:
    """The schemas of the offered tools, sorted by name."""
    return tuple(sorted((tool_spec(t) for t in tools), key=lambda s: s.name))


def public_messages(messages: Sequence[ChatMessage]) -> tuple[PublicMessage, ...]:
    """The system and user messages before the agent's first turn."""
    out: list[PublicMessage] = []
    for m in messages:
        if isinstance(m, ChatMessageAssistant):
            break
        if isinstance(m, ChatMessageSystem):
            out.append(PublicMessage(role="system", content=message_text(m)))
        elif isinstance(m, ChatMessageUser):
            out.append(PublicMessage(role="user", content=message_text(m)))
    return tuple(out)


def sample_view(task: str, messages: Sequence[ChatMessage], tools: Iterable[Tool | ToolDef | ToolInfo]) -> TaskView:
    """The public view of a sample: ``task`` names it (e.g. ``<task>/<sample id>``; the compiler's prompt leaves it out)."""
    return TaskView(task=task, messages=public_messages(messages), tools=tool_specs(tools), databases={})


def compile_view(view: TaskView, sources: Sequence[CandidateSource], n: int = DEFAULT_CANDIDATES, min_valid: int = 1) -> Blueprint:
    """The consensus blueprint of a sample's view from ``sources`` (e.g. ``[llm_source(LLMClient(...))]``).

    Raises:
        ConsensusError: Fewer than ``min_valid`` candidates passed contract validation.
        LLMUsageError, LLMUnavailableError: The model could not be used or reached.
    """
    return compile_blueprint(view, sources=tuple(sources), n=n, min_valid=min_valid)
