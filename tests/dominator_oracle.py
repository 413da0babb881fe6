"""The networkx dominators of the s0-augmented milestone graph: the oracle the package's one dominator
implementation (``dynsteer_hook.model.dominators.DominatorTree``) is checked against.

networkx before 3.6 maps the start node to itself and 3.6 and later leave it out; these
functions return the same mapping under both.
"""

from __future__ import annotations

import networkx as nx

from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.dominators import START
from dynsteer_hook.model.graph import milestone_graph


def augmented(g: nx.DiGraph, start: str = START) -> nx.DiGraph:
    """A copy of ``g`` with entry ``start`` linked to every node without predecessors."""
    if start in g:
        raise ValueError(f"graph already has a node named {start!r}")
    h = nx.DiGraph(g)
    h.add_node(start)
    for n in list(g.nodes):
        if g.in_degree(n) == 0:
            h.add_edge(start, n)
    return h


def immediate_dominators(g: nx.DiGraph, start: str = START) -> dict[str, str]:
    """idom(n) for every node reachable from ``start`` except ``start`` itself.

    networkx before 3.6 maps ``start`` to itself and 3.6 and later leave it out; this
    function returns the same mapping under both.
    """
    if start not in g:
        raise ValueError(f"start node {start!r} is not in the graph")
    raw = nx.immediate_dominators(g, start)
    return {n: d for n, d in raw.items() if n != start}


def dominator_map(bp: Blueprint) -> dict[str, str]:
    """idom of every milestone in the s0-augmented blueprint graph (s0 appears as ``START``)."""
    g = milestone_graph(bp)
    if not nx.is_directed_acyclic_graph(g):
        raise ValueError("blueprint graph has a cycle; validate it before computing dominators")
    return immediate_dominators(augmented(g))
