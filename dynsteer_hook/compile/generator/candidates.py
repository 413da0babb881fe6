"""Deterministic candidate generator: C candidate graphs from one public view, no LLM.

It plays the role Prompt Template 1 gives a sampled LLM: each candidate is a hypothesis
about which operations every valid completion must reach, under one *focus code*. The
candidates share one necessity plan (``planner.plan_task``) and differ in how much
evidence they ask before they commit to an operation, an order or a minefield, and in
which kind of hypothesis they favour:

* ``direct`` - direct lookups: the shortest path from the request to its goal;
* ``hierarchical`` - look entities up before acting on them, even when an identifier is given;
* ``reordered`` - alternative precedence: also orders that are natural but not forced;
* ``liberal`` - speculative prerequisites and minefields on weaker evidence;
* ``conservative`` - only what the request and the data flow state outright.

Thresholds are spread around 0.5, so strict-majority consensus keeps exactly what the plan
supports with evidence of at least one half, whatever the candidate count. Works from the
public view only: no file I/O, no model, no ToolSandbox import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import networkx as nx

from dynsteer_hook.compile.consensus import Candidate
from dynsteer_hook.compile.generator.necessity_plan import Plan, PlanOp
from dynsteer_hook.compile.generator.planner import plan_task
from dynsteer_hook.model.blueprint import Binding, Blueprint, Edge, Milestone, MilestoneEvidence, Minefield
from dynsteer_hook.model.task_view import TaskView

GENERATOR = "dynsteer-rules@4"
"""Generator name recorded in blueprint provenance; bump the version when the rules change, so
that ``scripts/build_blueprints.py`` recompiles stored blueprints."""

MODEL = "none"
"""Model name recorded in provenance: this generator uses no language model."""

_FOCUS_BONUS = 0.2


@dataclass(frozen=True, slots=True)
class Focus:
    """One candidate's exploration heuristic (Prompt Template 1's focus code and instruction)."""

    code: str
    instruction: str
    threshold: float  # evidence an operation or an order needs
    mine_threshold: float  # evidence a fatal minefield needs


FOCUS_CODES: tuple[Focus, ...] = (
    Focus("direct", "direct lookups: the shortest path from the request to its goal", 0.5, 0.5),
    Focus("hierarchical", "hierarchical filtering: look entities up before acting on them", 0.4, 0.5),
    Focus("reordered", "alternative precedence orders: natural orders as well as forced ones", 0.55, 0.5),
    Focus("liberal", "liberal: speculative prerequisites and minefields on weaker evidence", 0.3, 0.35),
    Focus("conservative", "conservative: only what the request and the data flow state outright", 0.7, 0.7),
)

_SLUG = re.compile(r"[^A-Za-z0-9_.:\-+@]")


def _mid(tool: str) -> str:
    return _SLUG.sub("_", tool)[:200]


def _evidence(op: PlanOp) -> tuple[MilestoneEvidence, ...]:
    """The plan's reasons for an operation, and how sure the plan is of it."""
    items = [MilestoneEvidence(kind=k, detail=d[:2000]) for k, d in op.why if d]
    items.append(MilestoneEvidence(kind="rule", detail=f"plan evidence {op.evidence:.2f}" + ("" if op.core else " (speculative prerequisite)")))
    return tuple(items)


def candidate_blueprint(view: TaskView, plan: Plan, focus: Focus) -> Blueprint:
    """The candidate graph one focus code draws from a plan."""

    def bonus(tag: str) -> float:
        return _FOCUS_BONUS if tag and tag == focus.code else 0.0

    kept = [o for o in plan.ops if o.evidence + bonus(o.focus) >= focus.threshold]
    names = {o.tool for o in kept}
    order = nx.DiGraph()
    order.add_nodes_from(o.tool for o in plan.ops)
    order.add_edges_from((e.source, e.target) for e in plan.edges if e.evidence + bonus(e.focus) >= focus.threshold)
    # Orders through a dropped operation still hold between the operations kept.
    closure = nx.transitive_closure_dag(order)
    edges = sorted((u, v) for u, v in closure.edges if u in names and v in names)
    linked = set(edges)
    bindings = [b for b in plan.bindings if (b.producer, b.consumer) in linked]
    mines = [m for m in plan.minefields if m.evidence >= focus.mine_threshold]
    pins = dict(plan.pins)
    return Blueprint(
        task=view.task,
        milestones=tuple(Milestone(id=_mid(o.tool), tool=o.tool, args=o.args, values=pins.get(o.tool, ()), description=o.description,
                                   evidence=_evidence(o)) for o in kept),
        edges=tuple(Edge(source=_mid(u), target=_mid(v)) for u, v in edges),
        bindings=tuple(
            Binding(name=f"{_mid(b.producer)}->{_mid(b.consumer)}.{b.arg}", producer=_mid(b.producer), consumer=_mid(b.consumer), arg=b.arg, path=b.path)
            for b in bindings
        ),
        minefields=tuple(Minefield(id=f"mf:{_mid(m.tool)}", tool=m.tool, reason=m.reason, fatal=True, read_only=m.read_only,
                                   any_args=m.any_args if m.read_only else ()) for m in mines),
        catalog=tuple(sorted(view.tools, key=lambda s: s.name)),
    )


def generate_candidates(view: TaskView, n: int = 5) -> list[Candidate]:
    """``n`` deterministic candidates, cycling through the focus codes.

    Raises:
        ValueError: ``n`` is below 1.
    """
    if n < 1:
        raise ValueError(f"candidate count must be at least 1, got {n}")
    plan = plan_task(view)
    out = []
    for i in range(n):
        focus = FOCUS_CODES[i % len(FOCUS_CODES)]
        out.append(Candidate(f"{GENERATOR}#{i}:{focus.code}", candidate_blueprint(view, plan, focus), generator=GENERATOR, model=MODEL))
    return out


def deterministic_source(view: TaskView, n: int) -> list[Candidate]:
    """The generator as a candidate source (the ``CandidateSource`` signature of ``compiler``)."""
    return generate_candidates(view, n)
