"""ToolSandbox's hidden evaluation of a scenario, read as goals a solver must reach.

Each hidden milestone becomes a tuple of goals, all judged by ToolSandbox at one snapshot:

* ``CallGoal``: a tool-result row whose trace names the tool with the given arguments
  (a list of alternative traces, any of which will do), some arguments filled from an
  earlier milestone's result (``tool_trace_dependant_similarity`` with ``fill_to="tool_trace"``);
* ``MessageGoal``: an agent -> user message, said verbatim where ROUGE-L is the measure and
  containing a text where ``column_contains_similarity`` is, possibly a template filled from
  an earlier result;
* ``StateGoal``: a world-state table equal to (SETTING), or grown, shrunk or changed by
  (``addition``/``removal``/``update``) the target rows.

``guards`` are the guardrails ToolSandbox added to the milestone: (reference milestone,
table) pairs whose table must not change between the two snapshots. A constraint of any
other shape makes the task ``unsupported`` with the reason.

Minefields become ``MineCall``: the tool a minefield names (in a call row's content or a
tool trace) and the arguments its trace describes.

``valid_path_tools`` reads the milestones of every scenario at once: the tools some scenario's
traced calls use together with all of a given set of tools (a step of a valid path for a task
of that kind somewhere in ToolSandbox).
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.scenarios import load_scenarios

from tool_sandbox.common.evaluation import SnapshotConstraint
from tool_sandbox.common.execution_context import DatabaseNamespace, RoleType
from tool_sandbox.common.scenario import Scenario

Extractor = Callable[[dict[str, Any]], list[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Fill:
    """Values taken from the result of milestone ``ref``'s call by ToolSandbox's own extractor."""

    ref: int
    extractor: Extractor


@dataclass(frozen=True, slots=True)
class CallGoal:
    """A traced tool call: one of ``alternatives`` (tool, arguments), plus ``fills``."""

    alternatives: tuple[tuple[str, dict[str, Any]], ...]
    fills: tuple[Fill, ...] = ()


@dataclass(frozen=True, slots=True)
class Text:
    """A message text, a ``str.format`` template when ``fill`` is set."""

    text: str
    fill: Fill | None = None


@dataclass(frozen=True, slots=True)
class MessageGoal:
    """An agent -> user message: equal to every ``exact`` text, containing every ``contains`` text."""

    exact: tuple[Text, ...] = ()
    contains: tuple[Text, ...] = ()


@dataclass(frozen=True, slots=True)
class StateGoal:
    """A table equal to the rows (``snapshot``), or with them added, removed or updated."""

    namespace: str
    kind: str
    rows: tuple[dict[str, Any], ...]


Goal = CallGoal | MessageGoal | StateGoal


@dataclass(frozen=True, slots=True)
class HiddenMilestone:
    """One hidden milestone: its goals, the results it reads, its guardrails."""

    index: int
    goals: tuple[Goal, ...]
    refs: tuple[int, ...] = ()
    guards: tuple[tuple[int, str], ...] = ()

    @property
    def changes(self) -> frozenset[str]:
        """Tables this milestone's goals change."""
        return frozenset(g.namespace for g in self.goals if isinstance(g, StateGoal))


@dataclass(frozen=True, slots=True)
class MineCall:
    """A call a hidden minefield forbids."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    on_trace: bool = False  # matched on the call's result trace (only a call that runs), else on the call row

@dataclass(frozen=True, slots=True)
class HiddenTask:
    """Everything the solver reads from a scenario's hidden evaluation."""

    milestones: tuple[HiddenMilestone, ...]
    edges: tuple[tuple[int, int], ...]
    mines: tuple[MineCall, ...]
    unsupported: tuple[str, ...] = ()


def _function_name(c: SnapshotConstraint) -> str:
    fn: Any = c.snapshot_constraint
    return str(getattr(getattr(fn, "func", fn), "__name__", fn))


def _measure(c: SnapshotConstraint, column: str) -> str:
    fn: Any = (c.column_similarity_measure or {}).get(column)
    return str(getattr(getattr(fn, "func", fn), "__name__", fn))


def _traces(raw: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    value = json.loads(raw)
    items = value if isinstance(value, list) else [value]
    return tuple((str(t["tool_name"]), dict(t.get("arguments") or {})) for t in items)


def _fill(c: SnapshotConstraint) -> Fill | None:
    keywords = getattr(c.snapshot_constraint, "keywords", {})
    if "extractor" not in keywords or c.reference_milestone_node_index is None:
        return None
    return Fill(int(c.reference_milestone_node_index), keywords["extractor"])


def _goal(c: SnapshotConstraint) -> Goal | str:
    """The goal one constraint sets, or why it is not one this solver knows."""
    kind = _function_name(c).removesuffix("_similarity")
    ns = str(c.database_namespace)
    rows = tuple(c.target_dataframe.to_dicts()) if c.target_dataframe is not None else ()
    if c.database_namespace != DatabaseNamespace.SANDBOX:
        if kind in {"snapshot", "addition", "removal", "update"} and rows:
            return StateGoal(ns, kind, rows)
        return f"a {kind} constraint on {ns}"
    fill = _fill(c)
    dependant = kind == "tool_trace_dependant"
    if kind not in {"snapshot", "tool_trace_dependant"} or len(rows) != 1 or (dependant and fill is None):
        return f"a {kind} constraint on SANDBOX with {len(rows)} rows"
    row = rows[0]
    sender, recipient = str(row.get("sender")), str(row.get("recipient"))
    if sender == RoleType.EXECUTION_ENVIRONMENT and recipient == RoleType.AGENT and row.get("tool_trace"):
        return CallGoal(_traces(row["tool_trace"]), (fill,) if fill else ())
    if sender == RoleType.AGENT and recipient == RoleType.USER and row.get("content") is not None:
        text = Text(str(row["content"]), fill)
        if _measure(c, "content") == "column_contains_similarity":
            return MessageGoal(contains=(text,))
        return MessageGoal(exact=(text,))
    return f"a SANDBOX constraint on a {sender} -> {recipient} row"


def _merge(goals: list[Goal]) -> tuple[tuple[Goal, ...], str | None]:
    """Goals judged on the same SANDBOX row merged into one (a row is one call or one message)."""
    calls = [g for g in goals if isinstance(g, CallGoal)]
    messages = [g for g in goals if isinstance(g, MessageGoal)]
    states = [g for g in goals if isinstance(g, StateGoal)]
    if calls and messages:
        return (), "one milestone asks for a tool result and a message in the same row"
    merged: list[Goal] = list(states)
    if calls:
        common = {t for t, _ in calls[0].alternatives}
        for g in calls[1:]:
            common &= {t for t, _ in g.alternatives}
        if not common:
            return (), "one milestone asks for traces of different tools in the same row"
        alternatives: list[tuple[str, dict[str, Any]]] = []
        for tool, args in calls[0].alternatives:
            if tool in common:
                for g in calls[1:]:  # the other constraints' arguments hold in the same row
                    for other_tool, other_args in g.alternatives:
                        if other_tool == tool:
                            args = {**other_args, **args}
                            break
                alternatives.append((tool, args))
        merged.append(CallGoal(tuple(alternatives), tuple(f for g in calls for f in g.fills)))
    if messages:
        merged.append(MessageGoal(tuple(t for g in messages for t in g.exact), tuple(t for g in messages for t in g.contains)))
    return tuple(merged), None


def _milestones(scenario: Scenario) -> Iterator[tuple[HiddenMilestone | None, str | None]]:
    for i, m in enumerate(scenario.evaluation.milestone_matcher.milestones):
        goals: list[Goal] = []
        guards: list[tuple[int, str]] = []
        for c in m.snapshot_constraints:
            if _function_name(c) == "guardrail_similarity":
                guards.append((int(c.reference_milestone_node_index), str(c.database_namespace)))
                continue
            goal = _goal(c)
            if isinstance(goal, str):
                yield None, f"milestone {i} has {goal}"
                return
            goals.append(goal)
        merged, why = _merge(goals)
        if why:
            yield None, f"milestone {i}: {why}"
            return
        refs = sorted({f.ref for g in merged for f in _fills(g)} | {r for r, _ in guards if r >= 0} - {i})
        yield HiddenMilestone(i, merged, tuple(refs), tuple(guards)), None


def _fills(goal: Goal) -> tuple[Fill, ...]:
    if isinstance(goal, CallGoal):
        return goal.fills
    if isinstance(goal, MessageGoal):
        return tuple(t.fill for t in (*goal.exact, *goal.contains) if t.fill is not None)
    return ()


def fill_refs(m: HiddenMilestone) -> set[int]:
    """Milestones whose call results this milestone's goals read."""
    return {f.ref for g in m.goals for f in _fills(g)}


def _mine(c: SnapshotConstraint, known: set[str]) -> MineCall | None:
    rows = c.target_dataframe.to_dicts() if c.target_dataframe is not None else []
    for row in rows:
        if row.get("tool_trace"):
            tool, args = _traces(row["tool_trace"])[0]
            return MineCall(tool, args, on_trace=True)
        content = str(row.get("content") or "")
        if str(row.get("recipient")) == RoleType.EXECUTION_ENVIRONMENT:
            named = [t for t in known if t in content]
            if named:
                return MineCall(max(named, key=len))
    return None


def read_hidden(scenario: Scenario) -> HiddenTask:
    """The hidden goals, milestone order and minefields of a scenario."""
    matcher = scenario.evaluation.milestone_matcher
    milestones: list[HiddenMilestone] = []
    unsupported: list[str] = []
    for m, why in _milestones(scenario):
        if why:
            unsupported.append(why)
        elif m is not None:
            milestones.append(m)
    known = set(scenario.starting_context.name_to_tool)
    mines = []
    for f in scenario.evaluation.minefield_matcher.milestones:
        for c in f.snapshot_constraints:
            if _function_name(c) != "guardrail_similarity" and (mine := _mine(c, known)) is not None:
                mines.append(mine)
    edges = tuple((int(u), int(v)) for u, v in matcher.milestone_dag.edges)
    return HiddenTask(tuple(milestones), edges, tuple(mines), tuple(unsupported))


def milestone_tools(task: HiddenTask) -> frozenset[str]:
    """Tools the traced calls of a task's hidden milestones name (every alternative trace)."""
    return frozenset(tool for m in task.milestones for g in m.goals if isinstance(g, CallGoal) for tool, _ in g.alternatives)


@functools.cache
def _milestone_tool_sets() -> frozenset[frozenset[str]]:
    """The distinct ``milestone_tools`` of all of ToolSandbox's scenarios, read once per process."""
    state = random.getstate()  # loading restores ToolSandbox's seeded state: the caller's is kept
    try:
        everything = load_scenarios(None)
    finally:
        random.setstate(state)
    return frozenset(milestone_tools(read_hidden(s)) for s in everything.values())


def valid_path_tools(needed: Iterable[str]) -> frozenset[str]:
    """Tools other than ``needed`` that some scenario's hidden milestones use together with all of ``needed``.

    Each is a step of a valid path, by ToolSandbox's own ground truth, for a task that needs
    these tools (a clock read before a timestamp search: ``search_message_with_recency_oldest``
    requires ``get_current_timestamp`` with ``search_messages``). Empty when nothing is needed.
    """
    need = frozenset(needed)
    if not need:
        return frozenset()
    return frozenset().union(*(tools for tools in _milestone_tool_sets() if need <= tools)) - need
