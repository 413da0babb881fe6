"""The dominator tree index answers exactly as the simple definitions, on every graph family and on random DAGs.

The simple definitions: idom from networkx on the s0-augmented graph (itself checked by brute
force in test_graph), dominance by walking the idom chain, reachability from
networkx's search (``networkx.descendants``), and the region of m as the ancestors of m strictly dominated by idom(m).
"""

from __future__ import annotations

import random

import networkx as nx
import pytest
from builders import FAMILIES, Family, blueprint
from dominator_oracle import augmented, immediate_dominators

from dynsteer_hook.model.blueprint import Binding
from dynsteer_hook.model.contract import binding_violations
from dynsteer_hook.model.dominators import START, DominatorTree


def _random_dag(seed: int) -> tuple[list[str], list[tuple[str, str]]]:
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    p = rng.choice([0.05, 0.15, 0.3, 0.6])
    nodes = [f"n{i}" for i in range(n)]
    rng.shuffle(nodes)  # blueprint order need not be a topological order
    order = sorted(nodes, key=lambda x: int(x[1:]))
    edges = [(order[i], order[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    return nodes, edges


def _ladder(n: int) -> tuple[list[str], list[tuple[str, str]]]:
    """Two chains with cross links at every rung: every node's region is everything below it."""
    nodes = [f"{side}{i}" for i in range(n) for side in "ab"]
    edges = []
    for i in range(n - 1):
        edges += [(f"a{i}", f"a{i + 1}"), (f"b{i}", f"b{i + 1}"), (f"a{i}", f"b{i + 1}"), (f"b{i}", f"a{i + 1}")]
    return nodes, edges


def _long_chain_with_skips(n: int) -> tuple[list[str], list[tuple[str, str]]]:
    """A chain whose every node also hangs off the first: idom climbs far (binary lifting at work)."""
    nodes = [f"c{i}" for i in range(n)]
    edges = [(f"c{i}", f"c{i + 1}") for i in range(n - 1)] + [("c0", f"c{i}") for i in range(2, n)]
    return nodes, edges


def _cases() -> list[tuple[str, list[str], list[tuple[str, str]]]]:
    cases = [(f.name, list(f.nodes), list(f.edges)) for f in FAMILIES]
    cases += [(f"random-{s}", *_random_dag(s)) for s in range(40)]
    cases += [("ladder", *_ladder(12)), ("chain-with-skips", *_long_chain_with_skips(70)), ("chain-300", [f"m{i}" for i in range(300)],
              [(f"m{i}", f"m{i + 1}") for i in range(299)])]
    return cases


CASES = _cases()


def _reference(nodes: list[str], edges: list[tuple[str, str]]) -> tuple[nx.DiGraph, dict[str, str]]:
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    return g, immediate_dominators(augmented(g))


def _dominates(idom: dict[str, str], a: str, b: str) -> bool:
    while True:
        if a == b:
            return True
        if b == START:
            return False
        b = idom[b]


@pytest.mark.parametrize(("name", "nodes", "edges"), CASES, ids=[c[0] for c in CASES])
def test_idom_matches_networkx(name: str, nodes: list[str], edges: list[tuple[str, str]]) -> None:
    """Binary-lifting idom in topological order equals networkx's on the augmented graph."""
    _, idom = _reference(nodes, edges)
    tree = DominatorTree(nodes, edges)
    assert tree.idom_map() == idom
    assert all(tree.idom(n) == idom[n] for n in nodes)


@pytest.mark.parametrize(("name", "nodes", "edges"), CASES, ids=[c[0] for c in CASES])
def test_dominance_matches_the_idom_chain(name: str, nodes: list[str], edges: list[tuple[str, str]]) -> None:
    """The interval test says a dominates b exactly when a lies on b's idom chain (s0 dominates all)."""
    _, idom = _reference(nodes, edges)
    tree = DominatorTree(nodes, edges)
    everyone = [START, *nodes]
    assert all(tree.dominates(a, b) == _dominates(idom, a, b) for a in everyone for b in everyone)


@pytest.mark.parametrize(("name", "nodes", "edges"), CASES, ids=[c[0] for c in CASES])
def test_reaches_matches_has_path(name: str, nodes: list[str], edges: list[tuple[str, str]]) -> None:
    """reaches(a, b) is a == b or a path from a to b, for every ordered pair."""
    g, _ = _reference(nodes, edges)
    tree = DominatorTree(nodes, edges)
    below = {a: nx.descendants(g, a) for a in nodes}  # networkx's search once per node, not once per pair
    assert all(tree.reaches(a, b) == (a == b or b in below[a]) for a in nodes for b in nodes)


@pytest.mark.parametrize(("name", "nodes", "edges"), CASES, ids=[c[0] for c in CASES])
def test_region_is_the_ancestors_strictly_dominated_by_idom(name: str, nodes: list[str], edges: list[tuple[str, str]]) -> None:
    """region(m) = {a ancestor of m : idom(m) strictly dominates a}."""
    g, idom = _reference(nodes, edges)
    tree = DominatorTree(nodes, edges)
    for m in nodes:
        d = idom[m]
        expected = {a for a in nx.ancestors(g, m) if a != d and _dominates(idom, d, a)}
        assert set(tree.region(m)) == expected, m


@pytest.mark.parametrize(("name", "nodes", "edges"), CASES, ids=[c[0] for c in CASES])
def test_other_ancestors_are_the_anchor_or_its_ancestors(name: str, nodes: list[str], edges: list[tuple[str, str]]) -> None:
    """What the window relies on: an ancestor of m outside region(m) is idom(m) or one of its ancestors."""
    g, idom = _reference(nodes, edges)
    tree = DominatorTree(nodes, edges)
    for m in nodes:
        d = idom[m]
        outside = set(nx.ancestors(g, m)) - set(tree.region(m))
        above_d = nx.ancestors(g, d) if d in g else set()
        assert all(a == d or a in above_d for a in outside), m


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_children_list_the_dominator_tree(fam: Family) -> None:
    """children(n) are the nodes whose idom is n, in blueprint order."""
    tree = DominatorTree(list(fam.nodes), list(fam.edges))
    for parent in [START, *fam.nodes]:
        assert tree.children(parent) == [n for n in fam.nodes if fam.idom[n] == parent]


def test_a_cycle_is_refused() -> None:
    """Dominators are defined here for DAGs only; a cycle is a ValueError naming the fix."""
    with pytest.raises(ValueError, match="cycle"):
        DominatorTree(["a", "b"], [("a", "b"), ("b", "a")])


def test_an_edge_to_an_unknown_node_is_refused() -> None:
    """Edges must name nodes of the graph."""
    with pytest.raises(ValueError, match="outside the graph"):
        DominatorTree(["a"], [("a", "zz")])


@pytest.mark.parametrize("seed", range(30))
def test_binding_ancestry_through_the_index_matches_path_search(seed: int) -> None:
    """Validation's binding rule, now answered by the index, flags exactly the bindings with no producer-to-consumer path."""
    nodes, edges = _random_dag(seed)
    rng = random.Random(seed)
    pairs = [(rng.choice(nodes), rng.choice(nodes)) for _ in range(15)]
    bindings = [Binding(name=f"b{i}", producer=p, path="id", consumer=c, arg="x") for i, (p, c) in enumerate(pairs)]
    bp = blueprint(nodes, edges, bindings=bindings)
    g, _ = _reference(nodes, edges)
    flagged = {v.message.split("'")[1] for v in binding_violations(bp, g, "c")}
    assert flagged == {f"b{i}" for i, (p, c) in enumerate(pairs) if p == c or not nx.has_path(g, p, c)}
