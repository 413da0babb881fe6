"""A scratch copy of a scenario's world, where a script's tool calls are tried before it is played.

The generator uses it to learn what a call returns (a holiday's timestamp, a day count),
what a contact or reminder looks like at that point of the script, and whether a call it
builds as faulty really fails, so that a script is checked against the tools themselves
rather than against assumptions about them.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.execution_context import DatabaseNamespace, RoleType, ScenarioCategories, new_context
from tool_sandbox.common.scenario import Scenario

STATE_NAMESPACES = (DatabaseNamespace.SETTING, DatabaseNamespace.CONTACT, DatabaseNamespace.MESSAGING, DatabaseNamespace.REMINDER)
CLOCK_TOOLS = frozenset({"get_current_timestamp"})
# ToolSandbox's RapidAPI tools need a key and the network: offline they always raise.
RAPID_API_MODULE = "tool_sandbox.tools.rapid_api_search_tools"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one call did in the scratch world."""

    result: Any = None
    error: str | None = None  # exception type and message when the call raised
    changed: tuple[str, ...] = ()  # namespaces whose rows changed

    @property
    def ok(self) -> bool:
        """Whether the call returned normally."""
        return self.error is None


def agent_catalog(scenario: Scenario) -> dict[str, str]:
    """Execution-facing -> agent-facing name of every tool the scenario lets its agent call."""
    ctx = scenario.starting_context
    return {
        str(fn.__name__): str(name)
        for name, fn in ctx.get_available_tools(scrambling_allowed=True).items()
        if RoleType.AGENT in getattr(fn, "visible_to", (RoleType.AGENT,))
    }


def is_offline_tool(scenario: Scenario, tool: str) -> bool:
    """Whether a tool works without the network (the RapidAPI search tools do not)."""
    fn = scenario.starting_context.name_to_tool.get(tool)
    return fn is not None and getattr(fn, "__module__", "") != RAPID_API_MODULE


def needs_network(base: Scenario) -> bool:
    """Whether a base scenario's tools (allow minus deny list) hold a RapidAPI tool.

    Pass the base scenario (the variant without distraction tools): the other variants of
    it add distraction tools, RapidAPI ones among them, that the task does not need.
    """
    ctx = base.starting_context
    tools = set(ctx.tool_allow_list or []) - set(ctx.tool_deny_list or [])
    return any(not is_offline_tool(base, t) for t in tools if t in ctx.name_to_tool)


def parameters(scenario: Scenario, tool: str) -> dict[str, inspect.Parameter]:
    """The Python parameters of an execution-facing tool."""
    return dict(inspect.signature(scenario.starting_context.name_to_tool[tool]).parameters)


def required(scenario: Scenario, tool: str) -> list[str]:
    """Names of the parameters a tool cannot be called without."""
    return [n for n, p in parameters(scenario, tool).items() if p.default is inspect.Parameter.empty]


def is_multi_turn(scenario: Scenario) -> bool:
    """Whether the user gives the task over several turns."""
    return ScenarioCategories.MULTIPLE_USER_TURN in scenario.categories


class World:
    """A private deep copy of a scenario's starting world; calls run against it in order."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self._ctx = copy.deepcopy(scenario.starting_context)
        self._ctx.trace_tool = False

    def fork(self) -> World:
        """An independent copy of this world in its current state."""
        other = World.__new__(World)
        other.scenario = self.scenario
        other._ctx = copy.deepcopy(self._ctx)
        return other

    def rows(self, namespace: DatabaseNamespace) -> list[dict[str, Any]]:
        """The current rows of one table."""
        return list(self._ctx.get_database(namespace).to_dicts())

    def _state(self) -> dict[str, str]:
        return {str(ns): json.dumps(self.rows(ns), sort_keys=True, default=str) for ns in STATE_NAMESPACES}

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Outcome:
        """Run an execution-facing tool with keyword arguments; the world keeps its effects."""
        fn = self._ctx.name_to_tool[tool]
        before = self._state()
        with new_context(self._ctx):
            try:
                result = fn(**dict(arguments))
            except Exception as exc:  # a failing call is an outcome, as in ToolSandbox's console
                return Outcome(error=f"{type(exc).__name__}: {exc}")
        after = self._state()
        return Outcome(result=result, changed=tuple(ns for ns in after if after[ns] != before[ns]))

    def probe(self, tool: str, arguments: Mapping[str, Any]) -> Outcome:
        """What a call would do here, leaving this world untouched."""
        return self.fork().call(tool, arguments)
