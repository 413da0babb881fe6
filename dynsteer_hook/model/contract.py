"""Contract validation of a candidate graph (paper eq. 2).

Valid(G_c) = NonEmpty(M_c) and SchemaCheck(M_c, A) and Acyclic(E_c) and
BindingConsistency(K_c), plus two rules of this implementation: NonEmpty (a graph without
milestones asks nothing of the agent, so every run, even one where the agent did nothing,
would count as complete) and every ``regex`` operand compiles on RE2 (linear-time matching).
Every violation names the candidate, the node and the rule, so a pruned candidate can be
audited.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL, Blueprint, reference_errors
from dynsteer_hook.model.catalog import ToolCatalog, type_fits
from dynsteer_hook.model.dominators import DominatorTree
from dynsteer_hook.model.graph import edge_cycle
from dynsteer_hook.model.predicates import ArgPredicate, regex_error

if TYPE_CHECKING:
    import networkx as nx

EMPTY_MESSAGE = (
    "the blueprint has no milestones, so any run would count as complete; add at least one milestone saying what the "
    f"agent must do (for a task that cannot be done, an {AGENT_MESSAGE_TOOL!r} milestone whose 'content' predicate "
    "matches asking the user for what is missing or declining)"
)

_VALUE_TYPED_OPS = {"eq", "ne"}
_NUMERIC_OPS = {"gt", "ge", "lt", "le"}


@dataclass(frozen=True, slots=True)
class ContractViolation:
    """One broken contract rule."""

    candidate: str
    node: str | None
    rule: str
    message: str

    def __str__(self) -> str:
        where = f"node {self.node!r}" if self.node else "graph"
        return f"candidate {self.candidate!r}, {where}, rule {self.rule}: {self.message}"


def _predicate_issues(tool: str, preds: tuple[ArgPredicate, ...], catalog: ToolCatalog) -> list[str]:
    if tool == AGENT_MESSAGE_TOOL:
        return [f"{AGENT_MESSAGE_TOOL} predicates may only test 'content', not {p.arg!r}" for p in preds if p.arg != "content"]
    props = catalog.properties(tool)
    issues: list[str] = []
    for p in preds:
        if p.arg not in props:
            issues.append(f"tool {tool!r} has no argument {p.arg!r}")
            continue
        prop = props[p.arg]
        if p.op in _VALUE_TYPED_OPS and p.value is not None and not type_fits(prop, p.value):
            issues.append(f"value {p.value!r} does not fit the type {prop.get('type')!r} of argument {p.arg!r}")
        if p.op == "one_of" and isinstance(p.value, list) and not all(type_fits(prop, v) for v in p.value):
            issues.append(f"an option of {p.value!r} does not fit the type {prop.get('type')!r} of argument {p.arg!r}")
        if p.op in _NUMERIC_OPS and prop.get("type") not in (None, "number", "integer"):
            issues.append(f"numeric comparison {p.op} on non-numeric argument {p.arg!r}")
    return issues


def schema_violations(bp: Blueprint, catalog: ToolCatalog, candidate: str) -> list[ContractViolation]:
    """SchemaCheck(M_c, A): tools exist, predicate arguments and types fit their schema."""
    out: list[ContractViolation] = []
    for m in bp.milestones:
        if m.tool != AGENT_MESSAGE_TOOL and m.tool not in catalog:
            out.append(ContractViolation(candidate, m.id, "schema", f"tool {m.tool!r} is not in the tool catalog"))
            continue
        out.extend(ContractViolation(candidate, m.id, "schema", msg) for msg in _predicate_issues(m.tool, m.args, catalog))
        if m.tool != AGENT_MESSAGE_TOOL:
            known = catalog.properties(m.tool)
            out.extend(ContractViolation(candidate, m.id, "schema", f"value pin on unknown argument {v.arg!r} of {m.tool!r}")
                       for v in m.values if v.arg not in known)
    for f in bp.minefields:
        if f.tool not in catalog:
            out.append(ContractViolation(candidate, f.id, "schema", f"minefield tool {f.tool!r} is not in the tool catalog"))
            continue
        out.extend(ContractViolation(candidate, f.id, "schema", msg) for msg in _predicate_issues(f.tool, f.args, catalog))
    by_id = {m.id: m for m in bp.milestones}
    for b in bp.bindings:
        consumer = by_id.get(b.consumer)
        if consumer is None or consumer.tool == AGENT_MESSAGE_TOOL:
            continue
        if consumer.tool in catalog and b.arg not in catalog.properties(consumer.tool):
            out.append(
                ContractViolation(candidate, b.consumer, "binding", f"binding {b.name!r} feeds unknown argument {b.arg!r} of {consumer.tool!r}")
            )
    return out


def pattern_violations(bp: Blueprint, candidate: str) -> list[ContractViolation]:
    """Every ``regex`` operand compiles on RE2, the linear-time engine the predicates run on."""
    owners: list[tuple[str, str, tuple[ArgPredicate, ...]]] = []
    for m in bp.milestones:
        owners.append(("milestone", m.id, m.args))
        if m.state is not None:
            owners.append(("milestone state", m.id, m.state.where))
    owners += [("minefield", f.id, f.args) for f in bp.minefields]
    out: list[ContractViolation] = []
    for kind, node, preds in owners:
        for p in preds:
            reason = regex_error(p.value) if p.op == "regex" else None
            if reason is not None:
                shown = repr(p.value) if len(repr(p.value)) <= 80 else repr(p.value)[:77] + "..."
                out.append(ContractViolation(
                    candidate, node, "regex",
                    f"the {kind} predicate on {p.arg!r} has the pattern {shown}, which RE2 cannot run ({reason}); "
                    "write it in RE2 syntax, without backreferences or lookarounds",
                ))
    return out


def _has_path(edges: list[tuple[str, str]], a: str, b: str) -> bool:
    """Whether ``b`` is reachable from ``a`` (breadth first; for graphs with a cycle, where the index does not apply)."""
    succs: dict[str, list[str]] = {}
    for u, v in edges:
        succs.setdefault(u, []).append(v)
    seen, todo = {a}, deque([a])
    while todo:
        for s in succs.get(todo.popleft(), ()):
            if s == b:
                return True
            if s not in seen:
                seen.add(s)
                todo.append(s)
    return a == b


def binding_violations(bp: Blueprint, g: nx.DiGraph | None, candidate: str) -> list[ContractViolation]:
    """BindingConsistency(K_c): each consumed binding is produced by a strict ancestor.

    ``g`` is the blueprint's graph when the caller has it; without it the blueprint's own
    milestones and edges are used (no networkx needed).
    """
    out: list[ContractViolation] = []
    nodes = [str(n) for n in g.nodes] if g is not None else [m.id for m in bp.milestones]
    edges = [(str(u), str(v)) for u, v in g.edges] if g is not None else [(e.source, e.target) for e in bp.edges]
    known = set(nodes)
    # One path search per binding is quadratic on a long chain with many bindings; the
    # dominator index answers in near-constant time (it needs a DAG: cycles are reported apart).
    try:
        index = DominatorTree(nodes, edges) if bp.bindings else None
    except ValueError:
        index = None
    for b in bp.bindings:
        if b.producer not in known or b.consumer not in known:
            continue  # reported as a reference error
        reaches = index.reaches(b.producer, b.consumer) if index is not None else _has_path(edges, b.producer, b.consumer)
        if b.producer == b.consumer or not reaches:
            out.append(
                ContractViolation(
                    candidate, b.consumer, "binding",
                    f"binding {b.name!r} is consumed by {b.consumer!r} but produced by {b.producer!r}, which is not its ancestor",
                )
            )
    return out


def validate_blueprint(bp: Blueprint, catalog: ToolCatalog | None = None, candidate: str = "blueprint") -> list[ContractViolation]:
    """All contract violations of ``bp``; an empty list means Valid(G_c).

    Args:
        bp: The candidate graph.
        catalog: Tool catalog for SchemaCheck; defaults to the blueprint's own catalog.
            When neither has tools, SchemaCheck is skipped.
        candidate: Name used in every violation.
    """
    out: list[ContractViolation] = [] if bp.milestones else [ContractViolation(candidate, None, "non-empty", EMPTY_MESSAGE)]
    references = [ContractViolation(candidate, node, rule, msg) for node, rule, msg in reference_errors(bp)]
    if references:
        return out + references
    cycle = edge_cycle([m.id for m in bp.milestones], [(e.source, e.target) for e in bp.edges])
    if cycle is not None:
        out.append(ContractViolation(candidate, cycle[0], "acyclic", "precedence cycle " + " -> ".join([*cycle, cycle[0]])))
    cat = catalog if catalog is not None and len(catalog) else ToolCatalog(bp.catalog)
    if len(cat):
        out.extend(schema_violations(bp, cat, candidate))
    out.extend(pattern_violations(bp, candidate))
    if cycle is None:
        out.extend(binding_violations(bp, None, candidate))
    return out
