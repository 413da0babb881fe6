"""Graph algorithms: the augmented entry, immediate dominators, transitive reduction, the ready frontier."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable

import networkx as nx
import pytest
from builders import FAMILIES, Family, blueprint
from dominator_oracle import augmented, dominator_map, immediate_dominators

from dynsteer_hook.model.dominators import START
from dynsteer_hook.model.graph import (
    FrontierTracker,
    ancestor_sets,
    edge_cycle,
    find_cycle,
    milestone_graph,
    strict_ancestors,
    transitive_reduction,
)

REAL_IDOM = nx.immediate_dominators


def _pre_36(g: nx.DiGraph, start: object) -> dict[object, object]:
    """networkx before 3.6: the start node maps to itself."""
    raw = dict(REAL_IDOM(g, start))
    raw[start] = start
    return raw


def _post_36(g: nx.DiGraph, start: object) -> dict[object, object]:
    """networkx 3.6 and later: the start node is left out."""
    return {n: d for n, d in REAL_IDOM(g, start).items() if n != start}


NX_STYLES: dict[str, Callable[[nx.DiGraph, object], dict[object, object]]] = {"pre-3.6": _pre_36, "3.6+": _post_36}


def brute_force_idom(g: nx.DiGraph, start: str) -> dict[str, str]:
    """idom by definition: d dominates n if removing d cuts every start->n path; idom is the closest strict dominator."""
    reach = nx.descendants(g, start)
    dom: dict[str, set[str]] = {}
    for n in reach:
        strict = {start}
        for d in reach - {n}:
            h = g.copy()
            h.remove_node(d)
            if not nx.has_path(h, start, n):
                strict.add(d)
        dom[n] = strict
    # The closest strict dominator is the one every other strict dominator dominates.
    return {n: max(ds, key=lambda d: 0 if d == start else len(dom[d])) for n, ds in dom.items()}


def random_dag(rng: random.Random) -> nx.DiGraph:
    n = rng.randint(1, 10)
    p = rng.choice([0.15, 0.3, 0.5])
    g = nx.DiGraph()
    g.add_nodes_from(f"n{i}" for i in range(n))
    g.add_edges_from((f"n{i}", f"n{j}") for i in range(n) for j in range(i + 1, n) if rng.random() < p)
    return g


# ---- dominators ----------------------------------------------------------------------


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_family_dominators(fam: Family) -> None:
    """dominator_map gives the hand-derived idom of every node of each graph family."""
    assert dominator_map(fam.blueprint()) == fam.idom


@pytest.mark.parametrize("style", NX_STYLES)
@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_dominators_same_before_and_after_networkx_36(fam: Family, style: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether networkx maps start to itself (before 3.6) or omits it (3.6+), the result excludes start and is the same."""
    monkeypatch.setattr(nx, "immediate_dominators", NX_STYLES[style])
    idom = dominator_map(fam.blueprint())
    assert START not in idom
    assert idom == fam.idom


@pytest.mark.parametrize("style", NX_STYLES)
def test_start_never_maps_to_itself(style: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """immediate_dominators never returns the start node as a key, under either networkx behaviour."""
    monkeypatch.setattr(nx, "immediate_dominators", NX_STYLES[style])
    g = nx.DiGraph([("s", "a"), ("a", "b")])
    assert immediate_dominators(g, "s") == {"a": "s", "b": "a"}


@pytest.mark.parametrize("seed", range(40))
def test_dominators_match_brute_force_on_random_dags(seed: int) -> None:
    """On random DAGs the augmented-graph idom equals the idom computed from the definition."""
    g = random_dag(random.Random(seed))
    h = augmented(g)
    assert immediate_dominators(h) == brute_force_idom(h, START)


@pytest.mark.parametrize("seed", range(10))
def test_random_dag_dominators_under_old_networkx(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The brute-force agreement also holds with the pre-3.6 start->start entry simulated."""
    monkeypatch.setattr(nx, "immediate_dominators", _pre_36)
    h = augmented(random_dag(random.Random(1000 + seed)))
    assert immediate_dominators(h) == brute_force_idom(h, START)


def test_immediate_dominators_needs_the_start_node() -> None:
    """A start node missing from the graph is a precondition error."""
    with pytest.raises(ValueError, match="start node"):
        immediate_dominators(nx.DiGraph([("a", "b")]), START)


def test_unreachable_nodes_are_left_out() -> None:
    """Nodes not reachable from start have no idom entry."""
    g = nx.DiGraph([("s", "a"), ("x", "y")])
    assert immediate_dominators(g, "s") == {"a": "s"}


def test_dominator_map_rejects_cycles() -> None:
    """dominator_map refuses a cyclic blueprint graph instead of returning nonsense."""
    with pytest.raises(ValueError, match="cycle"):
        dominator_map(blueprint(["a", "b"], [("a", "b"), ("b", "a")]))


# ---- augmentation, cycles, ancestors ---------------------------------------------------


def test_augmented_links_start_to_every_root_without_mutating() -> None:
    """augmented adds s0 -> each source node and leaves its input unchanged."""
    g = nx.DiGraph([("a", "b"), ("c", "b")])
    g.add_node("lonely")
    h = augmented(g)
    assert set(h.successors(START)) == {"a", "c", "lonely"}
    assert START not in g and g.number_of_edges() == 2


def test_augmented_refuses_a_taken_start_name() -> None:
    """A graph that already has the start node is rejected."""
    g = nx.DiGraph()
    g.add_node(START)
    with pytest.raises(ValueError, match="already has a node"):
        augmented(g)


def test_find_cycle() -> None:
    """find_cycle returns the nodes of a cycle, or None for a DAG."""
    assert find_cycle(nx.DiGraph([("a", "b"), ("b", "c")])) is None
    cycle = find_cycle(nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]))
    assert cycle is not None and sorted(cycle) == ["a", "b", "c"]


@pytest.mark.parametrize("seed", range(40))
def test_edge_cycle_finds_the_cycle_find_cycle_finds(seed: int) -> None:
    """The networkx-free cycle search of ``validate`` reports the same cycle as find_cycle (or None) on random graphs."""
    rng = random.Random(seed)
    nodes = [f"m{i}" for i in range(rng.randint(1, 12))]
    edges = list(dict.fromkeys((rng.choice(nodes), rng.choice(nodes)) for _ in range(rng.randint(0, 20))))
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    assert edge_cycle(nodes, edges) == find_cycle(g)


def test_edge_cycle_walks_a_long_chain_without_recursion() -> None:
    """A chain of 50,000 milestones closed into a loop is found without hitting the recursion limit."""
    nodes = [f"m{i}" for i in range(50_000)]
    edges = list(itertools.pairwise(nodes))
    assert edge_cycle(nodes, edges) is None
    assert edge_cycle(nodes, [*edges, (nodes[-1], nodes[0])]) == nodes


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_ancestor_sets_match_networkx(fam: Family) -> None:
    """ancestor_sets agrees with nx.ancestors for every node."""
    g = milestone_graph(fam.blueprint())
    anc = ancestor_sets(g)
    assert {n: set(a) for n, a in anc.items()} == {n: strict_ancestors(g, n) for n in g}


# ---- transitive reduction -----------------------------------------------------------------


def test_transitive_reduction_keeps_node_and_edge_data() -> None:
    """Node attributes and the attributes of kept edges survive the reduction; shortcuts go."""
    g = nx.DiGraph()
    g.add_node("a", support=3, label="A")
    g.add_node("b", support=2)
    g.add_node("c", support=1)
    g.add_edge("a", "b", support=3)
    g.add_edge("b", "c", support=2)
    g.add_edge("a", "c", support=1)
    tr = transitive_reduction(g)
    assert sorted(tr.edges) == [("a", "b"), ("b", "c")]
    assert dict(tr.nodes(data=True)) == {"a": {"support": 3, "label": "A"}, "b": {"support": 2}, "c": {"support": 1}}
    assert tr.edges["a", "b"] == {"support": 3} and tr.edges["b", "c"] == {"support": 2}


def test_transitive_reduction_does_not_mutate_its_input() -> None:
    """The input graph keeps its shortcut edge."""
    g = nx.DiGraph([("a", "b"), ("b", "c"), ("a", "c")])
    transitive_reduction(g)
    assert g.has_edge("a", "c")


def test_transitive_reduction_keeps_isolated_nodes() -> None:
    """Nodes without edges are kept, with their data."""
    g = nx.DiGraph()
    g.add_node("solo", support=5)
    assert dict(transitive_reduction(g).nodes(data=True)) == {"solo": {"support": 5}}


def test_transitive_reduction_rejects_cycles() -> None:
    """A cyclic graph is a precondition error."""
    with pytest.raises(ValueError, match="needs a DAG"):
        transitive_reduction(nx.DiGraph([("a", "b"), ("b", "a")]))


@pytest.mark.parametrize("seed", range(10))
def test_transitive_reduction_preserves_reachability(seed: int) -> None:
    """The reduction has the same transitive closure and no edge implied by the others."""
    g = random_dag(random.Random(seed))
    tr = transitive_reduction(g)
    assert set(nx.transitive_closure_dag(tr).edges) == set(nx.transitive_closure_dag(g).edges)
    for u, v in tr.edges:
        h = tr.copy()
        h.remove_edge(u, v)
        assert not nx.has_path(h, u, v)


# ---- ready frontier -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "order", "frontiers"),
    [
        ("single", ("a",), [["a"], []]),
        ("chain", ("a", "b", "c"), [["a"], ["b"], ["c"], []]),
        ("diamond", ("a", "c", "b", "d"), [["a"], ["b", "c"], ["b"], ["d"], []]),
        ("parallel", ("y1", "x1", "y2", "x2"), [["x1", "y1"], ["x1", "y2"], ["x2", "y2"], ["x2"], []]),
    ],
)
def test_frontier_follows_eq4(name: str, order: tuple[str, ...], frontiers: list[list[str]]) -> None:
    """F_t holds the unsettled milestones whose predecessors are all settled, in blueprint order."""
    fam = next(f for f in FAMILIES if f.name == name)
    tracker = FrontierTracker.for_blueprint(fam.blueprint())
    seen = [tracker.frontier()]
    for m in order:
        tracker.settle(m)
        seen.append(tracker.frontier())
    assert seen == frontiers
    assert tracker.done() and tracker.settled == frozenset(order)


def test_frontier_refuses_out_of_order_settlement() -> None:
    """Settling a milestone that is not ready is an error and changes nothing."""
    tracker = FrontierTracker(["a", "b"], [("a", "b")])
    with pytest.raises(ValueError, match="not on the ready frontier"):
        tracker.settle("b")
    assert tracker.frontier() == ["a"] and not tracker.is_ready("b")


def test_join_waits_for_every_predecessor() -> None:
    """A join node becomes ready only after all its predecessors settle."""
    tracker = FrontierTracker(["a", "b", "j"], [("a", "j"), ("b", "j")])
    tracker.settle("a")
    assert not tracker.is_ready("j")
    tracker.settle("b")
    assert tracker.is_ready("j") and tracker.predecessors("j") == {"a", "b"}


def test_frontier_is_empty_for_an_empty_blueprint() -> None:
    """With no milestones the tracker is done from the start."""
    tracker = FrontierTracker([], [])
    assert tracker.frontier() == [] and tracker.done()



@pytest.mark.parametrize("seed", range(20))
def test_sorted_frontier_matches_eq4_on_random_dags(seed: int) -> None:
    """The incrementally sorted frontier, and its snapshot equal eq. 4 recomputed from scratch."""
    rng = random.Random(seed)
    g = random_dag(rng)
    order = list(g.nodes)
    rng.shuffle(order)  # blueprint order is not the settle order
    tracker = FrontierTracker(order, list(g.edges))
    settled: set[str] = set()
    while True:
        expected = [m for m in order if m not in settled and set(g.predecessors(m)) <= settled]
        assert tracker.frontier() == expected and tracker.snapshot() == tuple(expected)
        assert tracker.has_ready() is bool(expected)
        if not expected:
            break
        m = rng.choice(expected)
        tracker.settle(m)
        settled.add(m)
    assert tracker.done()
