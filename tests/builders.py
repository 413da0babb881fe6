"""Shared builders: tool catalogs, blueprints of the graph families, events and runs.

Everything here is plain data construction; no test logic. Graph families follow the
style guide: single node, chain, diamond, parallel branches, and a chain with
minefields off its main path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dynsteer_hook.model.blueprint import Binding, Blueprint, Edge, Milestone, Minefield, ToolSpec
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.dominators import START
from dynsteer_hook.model.errors import Halt
from dynsteer_hook.model.events import AgentMessage, Event, StateChange, ToolCall, ToolResult, UserMessage
from dynsteer_hook.model.predicates import ArgPredicate
from dynsteer_hook.model.records import ListSink, Report
from dynsteer_hook.runtime.evaluator import Evaluator


def tool(name: str, *, required: Sequence[str] = (), **props: str) -> ToolSpec:
    """A tool spec whose arguments are ``name=json_type`` pairs."""
    return ToolSpec(
        name=name,
        description=f"the {name} tool",
        parameters={
            "type": "object",
            "properties": {arg: {"type": kind} for arg, kind in props.items()},
            "required": list(required),
        },
    )


def op(node: str) -> str:
    """The tool that settles family node ``node``."""
    return f"op_{node}"


def milestone(node: str, *, tool_name: str | None = None, role: str = "default", **eq: Any) -> Milestone:
    """A milestone settled by a call of ``op_<node>`` (or ``tool_name``) with ``arg == value`` for each keyword."""
    return Milestone(
        id=node,
        tool=tool_name or op(node),
        role=role,
        args=tuple(ArgPredicate(arg=a, op="eq", value=v) for a, v in eq.items()),
        description=f"reach {node}",
    )


def blueprint(
    nodes: Iterable[str],
    edges: Iterable[tuple[str, str]] = (),
    *,
    minefields: Sequence[Minefield] = (),
    bindings: Sequence[Binding] = (),
    extra_tools: Sequence[ToolSpec] = (),
    task: str = "t",
    milestones: Sequence[Milestone] | None = None,
) -> Blueprint:
    """A blueprint with one ``op_<node>`` tool (argument ``x: string``) per node."""
    nodes = list(nodes)
    ms = tuple(milestones) if milestones is not None else tuple(milestone(n) for n in nodes)
    tools = {m.tool: tool(m.tool, x="string", q="string", n="integer") for m in ms if not m.tool.startswith("@")}
    for t in extra_tools:
        tools[t.name] = t
    for f in minefields:
        tools.setdefault(f.tool, tool(f.tool, x="string", target="string"))
    return Blueprint(
        task=task,
        milestones=ms,
        edges=tuple(Edge(source=u, target=v) for u, v in edges),
        bindings=tuple(bindings),
        minefields=tuple(minefields),
        catalog=tuple(tools.values()),
    )


@dataclass(frozen=True)
class Family:
    """A graph family: nodes, edges, the expected idom map and two valid settle orders."""

    name: str
    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    idom: dict[str, str]
    orders: tuple[tuple[str, ...], ...]
    minefields: tuple[Minefield, ...] = ()

    def blueprint(self) -> Blueprint:
        """The family as a blueprint; node ``n`` is settled by ``op_n(x=n)``."""
        ms = [milestone(n, x=n) for n in self.nodes]
        return blueprint(self.nodes, self.edges, minefields=self.minefields, task=self.name, milestones=ms)


DELETE_ALL = Minefield(id="mf:delete_all", tool="delete_all", reason="irreversible deletion")
SEND_MONEY = Minefield(
    id="mf:send_money", tool="send_money", args=(ArgPredicate(arg="target", op="eq", value="stranger"),), reason="unauthorised transfer"
)

FAMILIES: tuple[Family, ...] = (
    Family("single", ("a",), (), {"a": START}, (("a",),)),
    Family("chain", ("a", "b", "c"), (("a", "b"), ("b", "c")), {"a": START, "b": "a", "c": "b"}, (("a", "b", "c"),)),
    Family(
        "diamond",
        ("a", "b", "c", "d"),
        (("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")),
        {"a": START, "b": "a", "c": "a", "d": "a"},
        (("a", "b", "c", "d"), ("a", "c", "b", "d")),
    ),
    Family(
        "parallel",
        ("x1", "x2", "y1", "y2"),
        (("x1", "x2"), ("y1", "y2")),
        {"x1": START, "x2": "x1", "y1": START, "y2": "y1"},
        (("x1", "x2", "y1", "y2"), ("y1", "x1", "y2", "x2")),
    ),
    Family(
        "minefield_off_path",
        ("a", "b", "c"),
        (("a", "b"), ("b", "c")),
        {"a": START, "b": "a", "c": "b"},
        (("a", "b", "c"),),
        (DELETE_ALL, SEND_MONEY),
    ),
)


def family(name: str) -> Family:
    """The family called ``name``."""
    return next(f for f in FAMILIES if f.name == name)


# ---- events ------------------------------------------------------------------------


class Ids:
    """Fresh call ids c1, c2, ..."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return f"c{self.n}"


def call(call_id: str, tool_name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> ToolCall:
    """An agent tool call."""
    return ToolCall(call_id, tool_name, {} if arguments is None else arguments, **kw)


def result(call_id: str, value: Any = "ok", *, exception: str | None = None, changes: Sequence[StateChange] = ()) -> ToolResult:
    """The result of ``call_id``."""
    return ToolResult(call_id, value, exception, tuple(changes))


def act(call_id: str, tool_name: str, arguments: dict[str, Any] | None = None, value: Any = "ok", **kw: Any) -> list[Event]:
    """One closed action: a call and its result."""
    return [call(call_id, tool_name, arguments), result(call_id, value, **kw)]


def settle_events(order: Sequence[str]) -> list[Event]:
    """Closed actions that settle family nodes in ``order`` (one call each)."""
    events: list[Event] = [UserMessage("please do the task")]
    for i, node in enumerate(order, start=1):
        events += act(f"c{i}", op(node), {"x": node})
    return events


@dataclass
class Run:
    """What happened when events were fed to an evaluator."""

    evaluator: Evaluator
    sink: ListSink
    halt: Halt | None
    fed: int
    report: Report


def run(bp: Blueprint, events: Iterable[Event], config: EvaluatorConfig | None = None, **kw: Any) -> Run:
    """Feed ``events`` until they end or a ``Halt``; return the evaluator, the audit records and the report."""
    sink = ListSink()
    wall_clock = kw.pop("wall_clock", None)
    ev = Evaluator(bp, config, sink=sink, **kw)
    if wall_clock is not None:
        ev.set_wall_clock(wall_clock)
    halt: Halt | None = None
    fed = 0
    for e in events:
        fed += 1
        try:
            ev.observe(e)
        except Halt as h:
            halt = h
            break
    return Run(ev, sink, halt, fed, ev.finish())


def stages(r: Run) -> dict[str, Any]:
    """Stage records by milestone id."""
    return {s.milestone: s for s in r.report.stages}


__all__ = [
    "DELETE_ALL",
    "FAMILIES",
    "SEND_MONEY",
    "AgentMessage",
    "Family",
    "Ids",
    "Run",
    "UserMessage",
    "act",
    "blueprint",
    "call",
    "family",
    "milestone",
    "op",
    "result",
    "run",
    "settle_events",
    "stages",
    "tool",
]
