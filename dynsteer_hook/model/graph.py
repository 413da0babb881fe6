"""Graph algorithms on the milestone DAG: the graph itself, cycles, reduction, ancestors, the ready frontier.

Pure functions in the networkx manner: they check preconditions first and never mutate
their input. ``FrontierTracker`` is the one stateful helper, owned by the evaluator.
Dominators have one implementation, ``dominators.DominatorTree`` (networkx's, on the
s0-augmented graph, is the tests' oracle for it).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from dynsteer_hook.model.blueprint import Blueprint

if TYPE_CHECKING:  # networkx costs a third of a second to import: the checks of `validate` do without it
    import networkx as nx


def milestone_graph(bp: Blueprint) -> nx.DiGraph:
    """The precedence DAG of a blueprint: one node per milestone, edges from ``bp.edges``."""
    import networkx as nx

    g = nx.DiGraph()
    for m in bp.milestones:
        g.add_node(m.id)
    for e in bp.edges:
        g.add_edge(e.source, e.target)
    return g


def find_cycle(g: nx.DiGraph) -> list[str] | None:
    """Nodes of one directed cycle, or ``None`` for a DAG."""
    # nx.find_cycle re-walks the edges reachable from every start node, which is slow on
    # the dense closure graphs of consensus; the linear-time DAG check settles the usual case.
    import networkx as nx

    if nx.is_directed_acyclic_graph(g):
        return None
    try:
        edges = nx.find_cycle(g, orientation="original")
    except nx.NetworkXNoCycle:
        return None
    return [str(u) for u, *_ in edges]


def transitive_reduction(g: nx.DiGraph) -> nx.DiGraph:
    """Transitive reduction of a DAG that keeps node and edge attributes.

    ``networkx.transitive_reduction`` returns a graph without data; the data is copied back.
    """
    import networkx as nx

    if not nx.is_directed_acyclic_graph(g):
        raise ValueError("transitive reduction needs a DAG")
    tr = nx.transitive_reduction(g)
    tr.add_nodes_from(g.nodes(data=True))
    tr.add_edges_from((u, v, g.edges[u, v]) for u, v in tr.edges)
    return tr


def strict_ancestors(g: nx.DiGraph, node: str) -> set[str]:
    """Nodes with a path to ``node`` (not ``node`` itself)."""
    import networkx as nx

    return set(nx.ancestors(g, node))


def edge_cycle(nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> list[str] | None:
    """Nodes of one directed cycle of the graph given by ``nodes`` and ``edges``, or ``None``.

    The same cycle ``find_cycle`` reports (a depth-first search from each node in order,
    following edges in the order given), without building a networkx graph. Iterative, so a
    chain of any length is fine.
    """
    succs: dict[str, list[str]] = {n: [] for n in nodes}
    for u, v in edges:
        succs.setdefault(u, []).append(v)
        succs.setdefault(v, [])
    done: set[str] = set()
    for start in succs:
        if start in done:
            continue
        path: list[str] = [start]
        on_path: dict[str, int] = {start: 0}
        nexts = [iter(succs[start])]
        while nexts:
            nxt = next(nexts[-1], None)
            if nxt is None:
                finished = path.pop()
                del on_path[finished]
                done.add(finished)
                nexts.pop()
            elif nxt in on_path:
                return path[on_path[nxt]:]
            elif nxt not in done:
                on_path[nxt] = len(path)
                path.append(nxt)
                nexts.append(iter(succs[nxt]))
    return None


class FrontierTracker:
    """The ready frontier F_t (eq. 4), updated incrementally as milestones settle.

    The frontier is kept sorted by blueprint order, so reading it costs a copy, not a sort:
    a blueprint with thousands of parallel branches has a frontier that large at every
    closed action.
    """

    __slots__ = ("_frontier", "_keys", "_order", "_preds", "_ready", "_settled", "_snapshot", "_succs", "_waiting")

    def __init__(self, order: Iterable[str], edges: Iterable[tuple[str, str]]) -> None:
        self._order: dict[str, int] = {m: i for i, m in enumerate(order)}
        self._preds: dict[str, set[str]] = {m: set() for m in self._order}
        self._succs: dict[str, set[str]] = {m: set() for m in self._order}
        for u, v in edges:
            self._preds[v].add(u)
            self._succs[u].add(v)
        self._waiting: dict[str, int] = {m: len(p) for m, p in self._preds.items()}
        self._settled: set[str] = set()
        self._frontier: set[str] = {m for m, w in self._waiting.items() if w == 0}
        self._ready: list[str] = sorted(self._frontier, key=self._order.__getitem__)
        self._keys: list[int] = [self._order[m] for m in self._ready]
        self._snapshot: tuple[str, ...] | None = None

    @classmethod
    def for_blueprint(cls, bp: Blueprint) -> FrontierTracker:
        """A tracker over the blueprint's milestones and edges."""
        return cls((m.id for m in bp.milestones), ((e.source, e.target) for e in bp.edges))

    def frontier(self) -> list[str]:
        """Ready milestones in blueprint order."""
        return list(self._ready)

    def snapshot(self) -> tuple[str, ...]:
        """The frontier as a tuple, shared until the next settlement."""
        if self._snapshot is None:
            self._snapshot = tuple(self._ready)
        return self._snapshot

    def has_ready(self) -> bool:
        """Whether any milestone is ready."""
        return bool(self._frontier)

    def is_ready(self, milestone: str) -> bool:
        """Whether ``milestone`` is on the frontier."""
        return milestone in self._frontier

    @property
    def settled(self) -> frozenset[str]:
        """Milestones settled so far."""
        return frozenset(self._settled)

    def predecessors(self, milestone: str) -> set[str]:
        """Direct predecessors of ``milestone``."""
        return set(self._preds[milestone])

    def settle(self, milestone: str) -> None:
        """Mark a ready milestone settled and release its successors."""
        if milestone not in self._frontier:
            raise ValueError(f"milestone {milestone!r} is not on the ready frontier")
        self._frontier.discard(milestone)
        i = bisect.bisect_left(self._keys, self._order[milestone])
        del self._keys[i], self._ready[i]
        self._settled.add(milestone)
        for s in self._succs[milestone]:
            self._waiting[s] -= 1
            if self._waiting[s] == 0:
                self._frontier.add(s)
                i = bisect.bisect_left(self._keys, self._order[s])
                self._keys.insert(i, self._order[s])
                self._ready.insert(i, s)
        self._snapshot = None

    def done(self) -> bool:
        """Whether every milestone is settled."""
        return len(self._settled) == len(self._order)


def ancestor_sets(g: nx.DiGraph) -> Mapping[str, frozenset[str]]:
    """Strict ancestors of every node of a DAG, computed once.

    Quadratic in time and memory on a long chain: fine for the small candidate graphs of
    consensus; the evaluator asks ``dominators.DominatorTree`` instead.
    """
    result: dict[str, frozenset[str]] = {}
    import networkx as nx

    for n in nx.topological_sort(g):
        acc: set[str] = set()
        for p in g.predecessors(n):
            acc.add(p)
            acc |= result[p]
        result[n] = frozenset(acc)
    return result
