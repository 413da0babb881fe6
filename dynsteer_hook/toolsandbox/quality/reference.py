"""Expert reference graphs for measuring compiled blueprints (paper Table 2).

The reference of a scenario is read from ToolSandbox's hidden evaluation data, which the
blueprint compiler never sees; only the metric code (``blueprint_eval``) imports this
module. It is derived as follows.

Milestone nodes. Every hidden milestone (``scenario.evaluation.milestone_matcher.milestones``)
yields the distinct tool operations its snapshot constraints name, in constraint order
(guardrail constraints, which ToolSandbox adds itself, are skipped):

* a SANDBOX constraint with a ``tool_trace`` target names the traced tool (a list of
  alternative traces names each tool it lists);
* a SANDBOX constraint on an AGENT -> USER row is the reserved operation ``@agent_message``;
* a SANDBOX constraint on an AGENT -> EXECUTION_ENVIRONMENT row whose ``content`` names a
  tool names that tool;
* a database constraint names the tool that causes it: a SETTING column is set by its
  ``set_<column>_status`` tool (``cellular`` by ``set_cellular_service_status``), and an
  addition, removal or update of CONTACT, MESSAGING or REMINDER rows is caused by
  ``add_contact``/``remove_contact``/``modify_contact``, ``send_message_with_phone_number``,
  ``add_reminder``/``remove_reminder``/``modify_reminder`` (``_STATE_TOOLS``).

A milestone naming two operations becomes two unordered nodes; one naming none is
contracted (its predecessors are linked to its successors) and listed in ``notes``.

Edges are ToolSandbox's milestone ``edge_list`` (a chain when it is ``None``), carried over
to the nodes, so the reference says "a before b" exactly where ToolSandbox does.

Fatal minefields. Every hidden minefield (``minefield_matcher``) voids the whole trajectory
in ToolSandbox, so each is fatal; the tools it names (by the same rules: a ``content``
constraint that *contains* a tool name, or a ``tool_trace``) are the fatal minefield tools.

Necessary tools. Each scenario belongs to a base scenario (the variant without distraction
tools, category NO_DISTRACTION_TOOLS); that variant's ``tool_allow_list`` minus its deny list
and minus tools the agent never sees (``end_conversation``) is the base's set of necessary
tools. A state-changing tool named by a database constraint must be one of them (otherwise
a note records the mismatch).

Names. Operations are stated as the agent sees them: under TOOL_NAME_SCRAMBLED the
execution-facing name is mapped with ``ExecutionContext.get_agent_facing_tool_name`` of the
scenario's starting context; ``canonical`` keeps the execution-facing name so that metrics
can pool the eight variants of a tool. An operation or minefield on a tool the agent
cannot call in that variant (not in its agent-facing catalog, for example a denied tool)
cannot belong to any valid completion or be stepped on, so it is dropped and noted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL
from dynsteer_hook.toolsandbox.quality.split import base_scenario_name

from tool_sandbox.common.evaluation import Milestone as TSMilestone
from tool_sandbox.common.evaluation import SnapshotConstraint, guardrail_similarity
from tool_sandbox.common.execution_context import DatabaseNamespace, RoleType, ScenarioCategories
from tool_sandbox.common.scenario import Scenario

_SETTING_TOOLS = {
    "cellular": "set_cellular_service_status",
    "wifi": "set_wifi_status",
    "location_service": "set_location_service_status",
    "low_battery_mode": "set_low_battery_mode_status",
}

_STATE_TOOLS = {
    ("CONTACT", "addition"): "add_contact",
    ("CONTACT", "removal"): "remove_contact",
    ("CONTACT", "update"): "modify_contact",
    ("MESSAGING", "addition"): "send_message_with_phone_number",
    ("REMINDER", "addition"): "add_reminder",
    ("REMINDER", "removal"): "remove_reminder",
    ("REMINDER", "update"): "modify_reminder",
}

_USER_ONLY_TOOLS = frozenset({"end_conversation"})



@dataclass(frozen=True, slots=True)
class RefNode:
    """One reference tool operation."""

    id: str
    tool: str  # agent-facing name, or @agent_message
    canonical: str  # execution-facing name, or @agent_message
    milestone: int
    source: str


@dataclass(frozen=True, slots=True)
class ReferenceGraph:
    """The expert reference of one scenario."""

    scenario: str
    base: str
    categories: tuple[str, ...]
    nodes: tuple[RefNode, ...]
    edges: tuple[tuple[str, str], ...]
    fatal_minefields: tuple[str, ...]  # agent-facing tool names
    necessary_tools: tuple[str, ...]  # agent-facing names
    canonical: Mapping[str, str] = field(default_factory=dict)  # agent-facing -> execution-facing
    notes: tuple[str, ...] = ()

    def canonical_name(self, tool: str) -> str:
        """The execution-facing name of an agent-facing tool name (itself when unknown)."""
        return self.canonical.get(tool, tool)


def _function_name(constraint: SnapshotConstraint) -> str:
    fn: Any = constraint.snapshot_constraint
    fn = getattr(fn, "func", fn)  # functools.partial
    return str(getattr(fn, "__name__", fn))


def _trace_tools(raw: str) -> list[str]:
    trace = json.loads(raw)
    traces = trace if isinstance(trace, list) else [trace]
    return [str(t["tool_name"]) for t in traces if isinstance(t, dict) and "tool_name" in t]


def _constraint_ops(c: SnapshotConstraint, known_tools: set[str]) -> list[tuple[str, str]]:
    """(execution-facing tool or @agent_message, source) pairs one constraint names."""
    if c.snapshot_constraint is guardrail_similarity or _function_name(c) == "guardrail_similarity":
        return []
    if c.target_dataframe is None:
        return []
    ns = str(c.database_namespace)
    rows = c.target_dataframe.to_dicts()
    out: list[tuple[str, str]] = []
    if c.database_namespace == DatabaseNamespace.SANDBOX:
        for row in rows:
            if row.get("tool_trace"):
                out += [(t, "tool_trace") for t in _trace_tools(row["tool_trace"])]
            elif str(row.get("sender")) == RoleType.AGENT and str(row.get("recipient")) == RoleType.USER:
                out.append((AGENT_MESSAGE_TOOL, "agent_message"))
            elif str(row.get("recipient")) == RoleType.EXECUTION_ENVIRONMENT and row.get("content") in known_tools:
                out.append((str(row["content"]), "call_content"))
        return out
    if c.database_namespace == DatabaseNamespace.SETTING:
        for row in rows:
            out += [(_SETTING_TOOLS[col], f"database:SETTING.{col}") for col in row if col in _SETTING_TOOLS]
        return out
    kind = _function_name(c).removesuffix("_similarity")
    tool = _STATE_TOOLS.get((ns, kind))
    return [(tool, f"database:{ns}.{kind}")] if tool else []


def _unique(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    out = []
    for tool, source in items:
        if tool not in seen:
            seen.add(tool)
            out.append((tool, source))
    return out


def necessary_tools(base: Scenario) -> list[str]:
    """Execution-facing names of the tools a base scenario allows its agent (sorted)."""
    ctx = base.starting_context
    allowed = set(ctx.tool_allow_list or [])
    denied = set(ctx.tool_deny_list or [])
    return sorted(allowed - denied - _USER_ONLY_TOOLS)


def _agent_catalog(scenario: Scenario) -> dict[str, str]:
    """Execution-facing -> agent-facing name of every tool the agent can call."""
    ctx = scenario.starting_context
    out: dict[str, str] = {}
    for agent_name, fn in ctx.get_available_tools(scrambling_allowed=True).items():
        visible = getattr(fn, "visible_to", (RoleType.AGENT,))
        if RoleType.AGENT in visible:
            out[str(fn.__name__)] = str(agent_name)
    return out


def _contract(n_milestones: int, edges: list[tuple[int, int]], empty: set[int]) -> list[tuple[int, int]]:
    """Edges with milestones in ``empty`` contracted away (their predecessors linked to their successors)."""
    current = set(edges)
    for m in sorted(empty):
        preds = {u for u, v in current if v == m}
        succs = {v for u, v in current if u == m}
        current = {(u, v) for u, v in current if m not in (u, v)}
        current |= {(u, v) for u in preds for v in succs if u != v}
    return sorted(current)


def reference_graph(name: str, scenario: Scenario, base: Scenario) -> ReferenceGraph:
    """The reference graph of scenario ``name``; ``base`` is its variant without distraction tools."""
    catalog = _agent_catalog(scenario)
    known = set(scenario.starting_context.name_to_tool)
    necessary = necessary_tools(base)
    notes: list[str] = []

    matcher = scenario.evaluation.milestone_matcher
    hidden: list[TSMilestone] = list(matcher.milestones)
    raw_edges = matcher.edge_list if matcher.edge_list is not None else [(i, i + 1) for i in range(len(hidden) - 1)]
    per_milestone: list[list[RefNode]] = []
    for i, m in enumerate(hidden):
        nodes: list[RefNode] = []
        for tool, source in _unique(op for c in m.snapshot_constraints for op in _constraint_ops(c, known)):
            if source.startswith("database:") and tool not in necessary:
                notes.append(f"milestone {i}: {tool} causes {source[9:]} but is not a necessary tool of the base")
            if tool != AGENT_MESSAGE_TOOL and tool not in catalog:
                notes.append(f"milestone {i}: {tool} is not callable by the agent in this variant; dropped")
                continue
            agent_name = tool if tool == AGENT_MESSAGE_TOOL else catalog[tool]
            nodes.append(RefNode(f"m{i}.{len(nodes)}", agent_name, tool, i, source))
        if not nodes:
            notes.append(f"milestone {i} names no callable tool operation; contracted")
        per_milestone.append(nodes)
    empty = {i for i, ns in enumerate(per_milestone) if not ns}
    edges = sorted(
        {(a.id, b.id) for u, v in _contract(len(hidden), [(int(u), int(v)) for u, v in raw_edges], empty)
         for a in per_milestone[u] for b in per_milestone[v]}
    )

    fatal: list[str] = []
    for j, f in enumerate(scenario.evaluation.minefield_matcher.milestones):
        for tool, _source in _unique(op for c in f.snapshot_constraints for op in _constraint_ops(c, known)):
            if tool == AGENT_MESSAGE_TOOL:
                notes.append(f"minefield {j} forbids a message to the user; not a tool minefield")
            elif tool not in catalog:
                notes.append(f"minefield {j}: {tool} is not callable by the agent in this variant; dropped")
            elif catalog[tool] not in fatal:
                fatal.append(catalog[tool])

    return ReferenceGraph(
        scenario=name,
        base=base_scenario_name(name),
        categories=tuple(str(c) for c in scenario.categories),
        nodes=tuple(n for ns in per_milestone for n in ns),
        edges=tuple(edges),
        fatal_minefields=tuple(sorted(fatal)),
        necessary_tools=tuple(sorted(catalog.get(t, t) for t in necessary)),
        canonical={agent: execution for execution, agent in catalog.items()},
        notes=tuple(notes),
    )


def reference_graphs(scenarios: Mapping[str, Scenario]) -> dict[str, ReferenceGraph]:
    """Reference graphs of every scenario whose base variant is also in ``scenarios``."""
    out: dict[str, ReferenceGraph] = {}
    for name, scenario in scenarios.items():
        base_name = base_scenario_name(name)
        base = scenarios.get(base_name)
        if base is None or ScenarioCategories.NO_DISTRACTION_TOOLS not in base.categories:
            continue
        out[name] = reference_graph(name, scenario, base)
    return out
