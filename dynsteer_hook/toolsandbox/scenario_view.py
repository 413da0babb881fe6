"""The public task view V_public = (x, A, I_0) of a ToolSandbox scenario (paper eq. 1).

Only what the agent itself is shown: the messages addressed to it before it first acts,
the tool schemas exactly as it receives them (distraction tools, scrambled names,
descriptions and argument types included), and the headers of the initial databases.
Never the milestones, minefields, evaluation, categories or the user simulator's
instructions: this module reads none of them.
"""

from __future__ import annotations

from typing import Any

from dynsteer_hook.model.blueprint import ToolSpec
from dynsteer_hook.model.task_view import PublicMessage, TaskView
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.execution_context import (
    DatabaseNamespace,
    ExecutionContext,
    RoleType,
    get_current_context,
    new_context,
)
from tool_sandbox.common.scenario import Scenario
from tool_sandbox.common.tool_conversion import convert_to_openai_tools


def _agent_messages(ctx: ExecutionContext) -> list[PublicMessage]:
    db = ctx.get_database(DatabaseNamespace.SANDBOX, get_all_history_snapshots=True, drop_sandbox_message_index=False)
    out: list[PublicMessage] = []
    for row in db.iter_rows(named=True):
        visible = row.get("visible_to")
        if visible is not None and str(RoleType.AGENT) not in map(str, visible):
            continue
        if str(row["recipient"]) != RoleType.AGENT:
            continue
        sender = str(row["sender"])
        if sender == RoleType.SYSTEM:
            out.append(PublicMessage(role="system", content=row["content"]))
        elif sender == RoleType.USER:
            out.append(PublicMessage(role="user", content=row["content"]))
    return out


def agent_tool_specs(ctx: ExecutionContext) -> list[ToolSpec]:
    """The agent's tools as ToolSandbox's agents send them to a model (context must be current)."""
    name_to_tool = ctx.get_available_tools(scrambling_allowed=True)
    visible = {
        name: tool for name, tool in name_to_tool.items() if RoleType.AGENT in getattr(tool, "visible_to", (RoleType.AGENT,))
    }
    specs = []
    for entry in convert_to_openai_tools(visible):
        fn: dict[str, Any] = entry["function"]
        specs.append(ToolSpec(name=fn["name"], description=fn.get("description") or "", parameters=fn.get("parameters") or {}))
    return sorted(specs, key=lambda s: s.name)


def _database_headers(ctx: ExecutionContext) -> dict[str, dict[str, str]]:
    headers: dict[str, dict[str, str]] = {}
    for ns in (DatabaseNamespace.SETTING, DatabaseNamespace.CONTACT, DatabaseNamespace.MESSAGING, DatabaseNamespace.REMINDER):
        schema = ctx.dbs_schemas[ns]
        headers[str(ns)] = {col: str(dtype) for col, dtype in schema.items() if col != "sandbox_message_index"}
    return headers


def public_view(name: str, scenario: Scenario) -> TaskView:
    """Extract the public view of a scenario without playing it."""
    ctx = scenario.starting_context  # only read: no copy needed
    # Scrambled descriptions and argument types are computed from the current context.
    with new_context(ctx):
        tools = agent_tool_specs(get_current_context())
    return TaskView(task=name, messages=tuple(_agent_messages(ctx)), tools=tuple(tools), databases=_database_headers(ctx))
