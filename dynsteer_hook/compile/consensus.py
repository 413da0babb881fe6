"""Strict-majority consensus over candidate graphs (paper eq. 3 and Appendix B.2).

Nodes are equivalent when their canonical tool operation (tool name, role) matches
(eq. 11); a candidate holding the same operation twice contributes its first, second, ...
occurrence as distinct nodes, in topological order. A node, a precedence relation, a
binding or a minefield is kept when its support reaches ceil((C_valid + 1) / 2).
Precedence is aggregated over each candidate's transitive closure (a candidate saying
a < b < c also says a < c), majority cycles are broken by dropping their weakest edge,
and the result is transitively reduced. The output depends only on the set of
candidates: any order gives a byte-identical blueprint.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import networkx as nx
from pydantic import ValidationError

from dynsteer_hook.model.blueprint import (
    Binding,
    Blueprint,
    Edge,
    Milestone,
    MilestoneEvidence,
    Minefield,
    Provenance,
    PrunedCandidate,
    StatePredicate,
    ValuePin,
)
from dynsteer_hook.model.catalog import ToolCatalog
from dynsteer_hook.model.contract import validate_blueprint
from dynsteer_hook.model.errors import ConsensusError, validation_problem
from dynsteer_hook.model.graph import ancestor_sets, find_cycle, milestone_graph, transitive_reduction
from dynsteer_hook.model.predicates import ArgPredicate

NodeKey = tuple[str, str, int]  # (tool, role, occurrence)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate plan: a parsed graph, or the raw text that failed to parse.

    Attributes:
        name: Unique among the candidates of one compile.
        blueprint: The graph, or None when the source could not produce one.
        error: Why there is no graph (becomes the pruned candidate's message).
        generator: The source that made it (recorded in provenance).
        model: The model that made it (recorded in provenance).
        rule: The pruning rule when there is no graph: ``parse``, ``empty``, ``json``, ``shape`` or ``timeout``.
        raw: The text the graph was read from, kept for the audit when it could not be.
        tokens: Tokens the candidate cost (None: no language model involved).
        cost_usd: What the candidate cost in US dollars (None: unknown or no model).
    """

    name: str
    blueprint: Blueprint | None
    error: str | None = None
    generator: str = ""
    model: str = ""
    rule: str = "parse"
    raw: str | None = None
    tokens: int | None = None
    cost_usd: float | None = None

    @classmethod
    def from_text(cls, name: str, text: str, *, generator: str = "", model: str = "") -> Candidate:
        """Parse LLM or file text; a parse failure becomes a candidate that will be pruned."""
        try:
            return cls(name, Blueprint.model_validate_json(text), generator=generator, model=model)
        except ValidationError as exc:
            return cls(name, None, f"not a blueprint graph at {validation_problem(exc)}", generator, model, raw=text)


@dataclass(frozen=True, slots=True)
class ConsensusResult:
    """The merged blueprint plus the audit of how it was reached."""

    blueprint: Blueprint
    valid: tuple[str, ...]
    pruned: tuple[PrunedCandidate, ...]
    support: dict[str, int]


def support_threshold(c_valid: int) -> int:
    """ceil((C_valid + 1) / 2): the strict-majority support (eq. 3)."""
    return c_valid // 2 + 1


def _canonical(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def _pred_key(p: ArgPredicate) -> str:
    return _canonical(p.model_dump())


_SLUG = re.compile(r"[^A-Za-z0-9_.:\-+@]")


@lru_cache(maxsize=4096)  # called for every closure pair; a run has few distinct keys
def node_id(key: NodeKey) -> str:
    """Canonical milestone id of an equivalence class."""
    tool, role, occ = key
    base = f"{_SLUG.sub('_', tool)}[{_SLUG.sub('_', role)}]"
    return base if occ == 0 else f"{base}#{occ + 1}"


def _node_keys(bp: Blueprint) -> dict[str, NodeKey]:
    """Map each milestone id of a candidate to its (tool, role, occurrence) key."""
    g = milestone_graph(bp)
    by_id = {m.id: m for m in bp.milestones}
    repeated = {op for op, n in Counter(m.operation for m in bp.milestones).items() if n > 1}

    def sort_key(mid: str) -> tuple[str, str, str, str]:
        m = by_id[mid]
        # Predicates only break ties within one operation; skip encoding them elsewhere.
        preds = _canonical([p.model_dump() for p in m.args]) if m.operation in repeated else ""
        return (m.tool, m.role, preds, mid)

    seen: Counter[tuple[str, str]] = Counter()
    keys: dict[str, NodeKey] = {}
    for mid in nx.lexicographical_topological_sort(g, key=sort_key):
        op = by_id[mid].operation
        keys[mid] = (op[0], op[1], seen[op])
        seen[op] += 1
    return keys


def _majority_predicates(groups: list[tuple[ArgPredicate, ...]]) -> tuple[ArgPredicate, ...]:
    need = support_threshold(len(groups))
    counts: Counter[str] = Counter()
    example: dict[str, ArgPredicate] = {}
    for preds in groups:
        keyed = [(_pred_key(p), p) for p in preds]
        counts.update({k for k, _ in keyed})
        for k, p in keyed:
            example.setdefault(k, p)
    kept = sorted(k for k, c in counts.items() if c >= need)
    return tuple(example[k] for k in kept)


def _majority_values(groups: list[tuple[ValuePin, ...]]) -> tuple[ValuePin, ...]:
    """Value pins a strict majority of the milestone's proposers agree on (same argument, kind and words)."""
    need = support_threshold(len(groups))
    counts: Counter[ValuePin] = Counter(p for pins in groups for p in set(pins))
    return tuple(sorted((p for p, c in counts.items() if c >= need), key=lambda p: (p.arg, p.kind, p.words)))


def _most_common_text(texts: list[str]) -> str:
    counts = Counter(texts)
    best = max(counts.values()) if counts else 0
    return min((t for t, c in counts.items() if c == best), default="")


def _majority_state(states: list[StatePredicate | None]) -> StatePredicate | None:
    need = support_threshold(len(states))
    counts = Counter(_canonical(s.model_dump()) if s else "null" for s in states)
    for text, c in sorted(counts.items()):
        if c >= need and text != "null":
            return StatePredicate.model_validate_json(text)
    return None


def _merged_evidence(ms: list[Milestone], proposers: list[str], c_valid: int, need: int) -> tuple[MilestoneEvidence, ...]:
    """Every reason a supporting candidate gave (sorted, each once), then who proposed the node."""
    order = {"instruction": 0, "schema": 1, "data_flow": 2, "rule": 3}
    reasons = sorted({(e.kind, e.detail) for m in ms for e in m.evidence if e.kind != "consensus"}, key=lambda r: (order.get(r[0], 9), r))
    by_source = Counter(proposers)
    who = ", ".join(f"{src} ({n})" for src, n in sorted(by_source.items()))
    support = MilestoneEvidence(kind="consensus", detail=f"proposed by {len(ms)} of {c_valid} valid candidates (majority {need}): {who}"[:2000])
    return (*(MilestoneEvidence(kind=k, detail=d) for k, d in reasons), support)


def _merge_milestones(
    admitted: list[NodeKey], members: dict[NodeKey, list[Milestone]], proposers: dict[NodeKey, list[str]], c_valid: int, need: int,
) -> dict[NodeKey, Milestone]:
    merged: dict[NodeKey, Milestone] = {}
    for key in admitted:
        ms = members[key]
        merged[key] = Milestone(
            id=node_id(key),
            tool=key[0],
            role=key[1],
            args=_majority_predicates([m.args for m in ms]),
            state=_majority_state([m.state for m in ms]),
            values=_majority_values([m.values for m in ms]),
            description=_most_common_text([m.description for m in ms if m.description]),
            evidence=_merged_evidence(ms, proposers[key], c_valid, need),
        )
    return merged


def _break_cycles(g: nx.DiGraph) -> list[str]:
    dropped: list[str] = []
    while True:
        cycle = find_cycle(g)
        if cycle is None:
            return dropped
        pairs = list(zip(cycle, cycle[1:] + cycle[:1], strict=False))
        weakest = min(pairs, key=lambda e: (g.edges[e]["support"], e))
        dropped.append(f"{weakest[0]}->{weakest[1]} (support {g.edges[weakest]['support']}, broke a majority cycle)")
        g.remove_edge(*weakest)


def screen_candidates(
    candidates: Sequence[Candidate], catalog: ToolCatalog
) -> tuple[list[tuple[str, Blueprint]], list[PrunedCandidate]]:
    """Contract validation (eq. 2): the valid candidates' graphs, and the pruned ones with their first reason, by name."""
    pruned: list[PrunedCandidate] = []
    valid: list[tuple[str, Blueprint]] = []
    for cand in sorted(candidates, key=lambda c: c.name):
        if cand.blueprint is None:
            pruned.append(PrunedCandidate(candidate=cand.name, rule=cand.rule or "parse", message=cand.error or "unparseable"))
            continue
        violations = validate_blueprint(cand.blueprint, catalog, cand.name)
        if violations:
            first = violations[0]
            more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
            pruned.append(PrunedCandidate(candidate=cand.name, rule=first.rule, node=first.node, message=first.message + more))
        else:
            valid.append((cand.name, cand.blueprint))
    return valid, pruned


def _usage(candidates: Sequence[Candidate]) -> tuple[int | None, float | None]:
    """Tokens and cost summed over the candidates that used a model (None, None when none did)."""
    # Summed in name order: float addition must not depend on the candidates' order.
    metered = sorted((c for c in candidates if c.tokens is not None or c.cost_usd is not None), key=lambda c: c.name)
    if not metered:
        return None, None
    return sum(c.tokens or 0 for c in metered), sum(c.cost_usd or 0.0 for c in metered)


def build_consensus(
    candidates: Sequence[Candidate],
    catalog: ToolCatalog,
    *,
    task: str = "",
    min_valid: int = 1,
    public_view_hash: str | None = None,
) -> ConsensusResult:
    """Validate candidates, prune the invalid ones, and merge the rest by strict majority.

    Raises:
        ConsensusError: Duplicate candidate names, or fewer than ``min_valid`` valid candidates.
    """
    names = [c.name for c in candidates]
    if len(set(names)) != len(names):
        dupes = sorted(n for n, k in Counter(names).items() if k > 1)
        raise ConsensusError(f"candidate names must be unique; {dupes} appear more than once")
    valid, pruned = screen_candidates(candidates, catalog)
    if len(valid) < max(min_valid, 1):
        reasons = "; ".join(f"{p.candidate}: {p.rule}: {p.message}" for p in pruned[:3])
        raise ConsensusError(
            f"only {len(valid)} of {len(candidates)} candidates are valid, fewer than the minimum {max(min_valid, 1)}"
            + (f" ({reasons})" if reasons else "")
        )
    need = support_threshold(len(valid))
    source = {c.name: c.model if c.model and c.model != "none" else (c.generator or "candidate") for c in candidates}
    keymaps, members, proposers = _node_members(valid, source)
    support = {k: len(v) for k, v in members.items()}
    admitted = sorted(k for k, s in support.items() if s >= need)
    if not admitted:  # the merged graph would ask nothing of the agent (the non-empty contract)
        raise ConsensusError(
            f"no milestone reached the majority support of {need} among the {len(valid)} valid candidates, so the "
            "blueprint would ask nothing of the agent; sample more candidates or add the deterministic generator"
        )
    merged = _merge_milestones(admitted, members, proposers, len(valid), need)
    reduced, dropped = _majority_edges(keymaps, admitted, support, need)
    bindings = _majority_bindings(keymaps, set(admitted), reduced, need, dropped)
    order = list(nx.lexicographical_topological_sort(reduced))
    by_id = {node_id(k): m for k, m in merged.items()}
    all_cands = list(candidates)
    tokens, cost = _usage(all_cands)
    bp_out = Blueprint(
        task=task,
        milestones=tuple(by_id[i] for i in order),
        edges=tuple(Edge(source=u, target=v) for u, v in sorted(reduced.edges)),
        bindings=tuple(sorted(bindings, key=lambda b: b.name)),
        minefields=tuple(_majority_minefields(keymaps, need)),
        catalog=tuple(sorted(catalog.specs(), key=lambda s: s.name)),
        provenance=Provenance(
            generators=tuple(sorted({c.generator for c in all_cands if c.generator})),
            models=tuple(sorted({c.model for c in all_cands if c.model})),
            candidates=len(all_cands),
            valid_candidates=len(valid),
            support_threshold=need,
            pruned=tuple(pruned),
            dropped_edges=tuple(sorted(dropped)),
            public_view_hash=public_view_hash,
            scenario=task or None,
            tokens=tokens,
            cost_usd=cost,
        ),
    )
    return ConsensusResult(
        blueprint=bp_out,
        valid=tuple(n for n, _ in valid),
        pruned=tuple(pruned),
        support={node_id(k): support[k] for k in admitted},
    )


_KeyMaps = list[tuple[Blueprint, dict[str, NodeKey]]]


def _node_members(valid: Sequence[tuple[str, Blueprint]], source: Mapping[str, str]
                  ) -> tuple[_KeyMaps, dict[NodeKey, list[Milestone]], dict[NodeKey, list[str]]]:
    """Each valid candidate's node keys, and per key the milestones that propose it and who proposed them."""
    members: dict[NodeKey, list[Milestone]] = defaultdict(list)
    proposers: dict[NodeKey, list[str]] = defaultdict(list)
    keymaps: _KeyMaps = []
    for name, bp in valid:
        keys = _node_keys(bp)
        keymaps.append((bp, keys))
        for m in bp.milestones:
            members[keys[m.id]].append(m)
            proposers[keys[m.id]].append(source[name])
    return keymaps, members, proposers


def _majority_edges(keymaps: _KeyMaps, admitted: Sequence[NodeKey], support: Mapping[NodeKey, int], need: int) -> tuple[nx.DiGraph, list[str]]:
    """Precedence over transitive closures (u < v when u is an ancestor of v), restricted to admitted nodes, kept where a
    majority agrees, cycles broken and transitively reduced; with what was dropped."""
    admitted_set = set(admitted)
    edge_support: Counter[tuple[NodeKey, NodeKey]] = Counter()
    for bp, keys in keymaps:
        ancestors = ancestor_sets(milestone_graph(bp))
        pairs = {(keys[u], keys[v]) for v, anc in ancestors.items() for u in anc}
        edge_support.update(p for p in pairs if p[0] in admitted_set and p[1] in admitted_set)
    g = nx.DiGraph()
    for k in admitted:
        g.add_node(node_id(k), support=support[k])
    for (u, v), s in sorted(edge_support.items()):
        if s >= need:
            g.add_edge(node_id(u), node_id(v), support=s)
    dropped = _break_cycles(g)
    return transitive_reduction(g), dropped


def _majority_bindings(keymaps: _KeyMaps, admitted: set[NodeKey], reduced: nx.DiGraph, need: int, dropped: list[str]) -> list[Binding]:
    """Bindings a majority agrees on: same producer, consumer and argument (one whose producer is no longer an ancestor is dropped)."""
    bind_support: dict[tuple[NodeKey, NodeKey, str], list[Binding]] = defaultdict(list)
    for bp, keys in keymaps:
        for b in bp.bindings:
            bind_support[(keys[b.producer], keys[b.consumer], b.arg)].append(b)
    bindings: list[Binding] = []
    for (pk, ck, arg), bs in sorted(bind_support.items()):
        if len(bs) < need or pk not in admitted or ck not in admitted:
            continue
        pid, cid = node_id(pk), node_id(ck)
        if not nx.has_path(reduced, pid, cid):
            dropped.append(f"binding {pid}->{cid}.{arg} (producer no longer an ancestor)")
            continue
        bindings.append(Binding(name=f"{pid}->{cid}.{arg}", producer=pid, consumer=cid, arg=arg, path=_most_common_text([b.path for b in bs])))
    return bindings


def _majority_minefields(keymaps: _KeyMaps, need: int) -> list[Minefield]:
    """Minefields a majority agrees on: equivalent when they guard the same tool with the same severity."""
    mine_groups: dict[tuple[str, bool], list[tuple[Minefield, ...]]] = defaultdict(list)
    for bp, _ in keymaps:
        per_key: dict[tuple[str, bool], list[Minefield]] = defaultdict(list)
        for f in bp.minefields:
            per_key[(f.tool, f.fatal)].append(f)
        for key, fs in per_key.items():
            mine_groups[key].append(tuple(fs))
    minefields: list[Minefield] = []
    for (tool, fatal), groups in sorted(mine_groups.items()):
        if len(groups) < need:
            continue
        preds = _majority_predicates([tuple(p for f in fs for p in f.args) for fs in groups])
        reason = _most_common_text([f.reason for fs in groups for f in fs if f.reason])
        prefix = "mf" if fatal else "warn"
        read_only = all(f.read_only for fs in groups for f in fs)  # a stricter proposal wins
        voted: Counter[str] = Counter(a for fs in groups for a in {a for f in fs for a in f.any_args})
        any_args = tuple(sorted(a for a, n in voted.items() if n >= support_threshold(len(groups)))) if read_only else ()
        minefields.append(Minefield(id=f"{prefix}:{_SLUG.sub('_', tool)}", tool=tool, args=preds, reason=reason, fatal=fatal,
                                    read_only=read_only, any_args=any_args))
    return minefields
