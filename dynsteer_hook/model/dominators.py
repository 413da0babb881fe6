"""Dominator tree of the s0-augmented milestone DAG, with constant-time dominance and exact reachability.

The evaluator asks, at every judged stage, which milestones dominate, precede or share a
branch with the settled one. Answering by materialising every node's ancestor set costs
quadratic time and memory on a long chain; this index is built in near-linear time and
answers:

* ``idom(n)``: immediate dominator in the graph where s0 precedes every root (paper §3.3);
* ``dominates(a, b)``: an O(1) interval test on the dominator tree;
* ``reaches(a, b)``: whether a path leads from ``a`` to ``b``, exact, settled by order and
  dominance where they decide and by a search confined to one dominator subtree elsewhere;
* ``region(m)``: the ancestors of ``m`` strictly dominated by ``idom(m)``, the only ancestors
  of ``m`` that can settle after its window's anchor.

For a DAG visited in topological order, idom(v) is the nearest common dominator-tree
ancestor of v's predecessors (s0 for a root), found with binary lifting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

START = "<s0>"
"""The augmented entry node s0 (cannot collide with milestone ids, which exclude '<')."""


class DominatorTree:
    """Dominators and reachability of a DAG given by its nodes and edges.

    Args:
        nodes: Node ids; their order breaks ties in the topological order.
        edges: (source, target) pairs between those nodes.

    Raises:
        ValueError: The edges form a cycle or name an unknown node.
    """

    __slots__ = ("_children", "_depth", "_idom", "_index", "_memo", "_names", "_post", "_pre", "_preds", "_succs", "_topo", "_up")

    def __init__(self, nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> None:
        self._names: list[str] = [START, *nodes]  # index 0 is s0
        self._index: dict[str, int] = {n: i for i, n in enumerate(self._names)}
        n = len(self._names)
        self._preds: list[list[int]] = [[] for _ in range(n)]
        self._succs: list[list[int]] = [[] for _ in range(n)]
        for source, target in edges:
            if source not in self._index or target not in self._index:
                raise ValueError(f"edge {source!r} -> {target!r} names a node outside the graph")
            a, b = self._index[source], self._index[target]
            self._preds[b].append(a)
            self._succs[a].append(b)
        for i in range(1, n):
            if not self._preds[i]:
                self._preds[i].append(0)
                self._succs[0].append(i)
        self._topo = self._topological_positions()
        self._idom = [0] * n
        self._depth = [0] * n
        self._up: list[list[int]] = [[0] * n]  # _up[j][v]: the 2**j-th dominator-tree ancestor of v
        for v in sorted(range(1, n), key=self._topo.__getitem__):
            d = self._preds[v][0]
            for p in self._preds[v][1:]:
                d = self._nca(d, p)
            self._attach(v, d)
        self._children: list[list[int]] = [[] for _ in range(n)]
        for v in range(1, n):
            self._children[self._idom[v]].append(v)
        self._pre, self._post = self._intervals()
        self._memo: dict[tuple[int, int], bool] = {}

    def _topological_positions(self) -> list[int]:
        n = len(self._names)
        waiting = [len(p) for p in self._preds]
        ready = [0]
        position = [-1] * n
        seen = 0
        while ready:
            v = ready.pop()
            position[v] = seen
            seen += 1
            for s in self._succs[v]:
                waiting[s] -= 1
                if waiting[s] == 0:
                    ready.append(s)
        if seen != n:
            raise ValueError("the graph has a cycle; validate it before computing dominators")
        return position

    def _attach(self, v: int, parent: int) -> None:
        self._idom[v] = parent
        self._depth[v] = self._depth[parent] + 1
        self._up[0][v] = parent
        for j in range(1, len(self._up)):
            self._up[j][v] = self._up[j - 1][self._up[j - 1][v]]
        if (1 << len(self._up)) <= self._depth[v]:  # one more level of lifting is needed from now on
            row = [self._up[-1][self._up[-1][u]] for u in range(len(self._names))]
            self._up.append(row)

    def _nca(self, a: int, b: int) -> int:
        if self._depth[a] < self._depth[b]:
            a, b = b, a
        gap = self._depth[a] - self._depth[b]
        j = 0
        while gap:
            if gap & 1:
                a = self._up[j][a]
            gap >>= 1
            j += 1
        if a == b:
            return a
        for j in range(len(self._up) - 1, -1, -1):
            if self._up[j][a] != self._up[j][b]:
                a, b = self._up[j][a], self._up[j][b]
        return self._up[0][a]

    def _intervals(self) -> tuple[list[int], list[int]]:
        n = len(self._names)
        pre, post = [0] * n, [0] * n
        clock = 0
        stack: list[tuple[int, bool]] = [(0, False)]
        while stack:
            v, leaving = stack.pop()
            if leaving:
                post[v] = clock
                clock += 1
                continue
            pre[v] = clock
            clock += 1
            stack.append((v, True))
            stack.extend((c, False) for c in reversed(self._children[v]))
        return pre, post

    # -- queries ---------------------------------------------------------------------

    def idom(self, node: str) -> str:
        """The immediate dominator of a milestone (``START`` for one only s0 dominates)."""
        return self._names[self._idom[self._index[node]]]

    def idom_map(self) -> dict[str, str]:
        """idom of every milestone, the start node ``START`` left out (as networkx 3.6 and later give it)."""
        return {self._names[v]: self._names[self._idom[v]] for v in range(1, len(self._names))}

    def children(self, node: str) -> list[str]:
        """Milestones whose immediate dominator is ``node`` (``START`` for s0), in blueprint order."""
        return [self._names[c] for c in self._children[self._index[node]]]

    def _dom(self, a: int, b: int) -> bool:
        return self._pre[a] <= self._pre[b] and self._post[b] <= self._post[a]

    def dominates(self, a: str, b: str) -> bool:
        """Whether every path from s0 to ``b`` passes through ``a`` (a node dominates itself)."""
        return self._dom(self._index[a], self._index[b])

    def reaches(self, a: str, b: str) -> bool:
        """Whether ``a`` is ``b`` or a path leads from ``a`` to ``b``."""
        return self._reaches(self._index[a], self._index[b])

    def _reaches(self, a: int, b: int) -> bool:
        if a == b or self._dom(a, b):
            return True
        if self._topo[a] >= self._topo[b]:
            return False
        key = (a, b)
        known = self._memo.get(key)
        if known is not None:
            return known
        # Every node on a path from a to b is dominated by their nearest common dominator,
        # so the search stays inside that subtree and before b in topological order.
        top = self._nca(a, b)
        limit = self._topo[b]
        seen = {a}
        stack = [a]
        found = False
        while stack and not found:
            v = stack.pop()
            for s in self._succs[v]:
                if s == b or self._dom(s, b):
                    found = True
                    break
                if s not in seen and self._topo[s] < limit and self._dom(top, s):
                    seen.add(s)
                    stack.append(s)
        self._memo[key] = found
        return found

    def region(self, node: str) -> list[str]:
        """Ancestors of ``node`` strictly dominated by its immediate dominator.

        Every other ancestor is the immediate dominator or one of its ancestors, so under
        frontier settlement it settles no later than the window's anchor.
        """
        v = self._index[node]
        top = self._idom[v]
        found: list[str] = []
        seen = {v}
        stack = [v]
        while stack:
            for p in self._preds[stack.pop()]:
                if p != top and p not in seen and self._dom(top, p):
                    seen.add(p)
                    found.append(self._names[p])
                    stack.append(p)
        return found
