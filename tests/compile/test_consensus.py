"""Strict-majority consensus (eq. 3, eq. 11, Appendix B.2): support, ties, pruning, precedence and determinism."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from builders import milestone, tool

from dynsteer_hook.compile.consensus import Candidate, build_consensus, node_id, support_threshold
from dynsteer_hook.model.blueprint import Binding, Blueprint, Edge, Minefield
from dynsteer_hook.model.catalog import ToolCatalog
from dynsteer_hook.model.errors import ConsensusError
from dynsteer_hook.model.predicates import ArgPredicate

TOOLS = [tool(f"op_{n}", x="string", q="string") for n in "abcdefg"] + [tool("wipe", target="string")]
CATALOG = ToolCatalog(TOOLS)


def nid(node: str, role: str = "default", occurrence: int = 0) -> str:
    """Consensus id of the node settled by op_<node>."""
    return node_id((f"op_{node}", role, occurrence))


def graph(nodes: str, edges: str = "", **kw: object) -> Blueprint:
    """A candidate graph: nodes as letters ('abc'), edges as 'ab bc' (a before b, b before c)."""
    return Blueprint(
        milestones=tuple(milestone(n) for n in nodes),
        edges=tuple(Edge(source=e[0], target=e[1]) for e in edges.split()),
        **kw,  # type: ignore[arg-type]
    )


def cands(*graphs: Blueprint | None, prefix: str = "g") -> list[Candidate]:
    """Named candidates; None stands for an invalid one (a hallucinated tool)."""
    out = []
    for i, g in enumerate(graphs):
        bp = g if g is not None else Blueprint(milestones=(milestone("z", tool_name="hallucinated"),))
        out.append(Candidate(f"{prefix}{i}", bp))
    return out


def ids(bp: Blueprint) -> list[str]:
    return [m.id for m in bp.milestones]


def edges(bp: Blueprint) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in bp.edges}


# ---- eq. 3: the strict-majority threshold ---------------------------------------------------


@pytest.mark.parametrize(
    ("c_valid", "need"),
    # ceil((C+1)/2): C=1 -> ceil(1)=1, 2 -> ceil(1.5)=2, 3 -> ceil(2)=2, 4 -> ceil(2.5)=3,
    # 5 -> ceil(3)=3, 6 -> ceil(3.5)=4, 7 -> ceil(4)=4.
    [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (6, 4), (7, 4)],
)
def test_support_threshold_eq3(c_valid: int, need: int) -> None:
    """The support threshold is ceil((C_valid + 1) / 2)."""
    assert support_threshold(c_valid) == need


NEED = {1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4}


@pytest.mark.parametrize("c", range(1, 8))
def test_node_with_exactly_majority_support_is_admitted(c: int) -> None:
    """For C = 1..7 a node in exactly ceil((C+1)/2) candidates is kept."""
    graphs = [graph("ab" if i < NEED[c] else "a") for i in range(c)]
    result = build_consensus(cands(*graphs), CATALOG)
    assert ids(result.blueprint) == [nid("a"), nid("b")]
    assert result.support == {nid("a"): c, nid("b"): NEED[c]}
    assert result.blueprint.provenance is not None and result.blueprint.provenance.support_threshold == NEED[c]


@pytest.mark.parametrize("c", range(2, 8))
def test_node_one_short_of_majority_is_dropped(c: int) -> None:
    """For C = 2..7 a node in ceil((C+1)/2) - 1 candidates is dropped."""
    graphs = [graph("ab" if i < NEED[c] - 1 else "a") for i in range(c)]
    result = build_consensus(cands(*graphs), CATALOG)
    assert ids(result.blueprint) == [nid("a")]


@pytest.mark.parametrize("c", [2, 4, 6])
def test_ties_are_not_a_majority(c: int) -> None:
    """With an even number of valid candidates, a node in exactly half of them is dropped (a tie is no strict majority)."""
    half = c // 2
    graphs = [graph("ab") for _ in range(half)] + [graph("ac") for _ in range(half)]
    result = build_consensus(cands(*graphs), CATALOG)
    assert ids(result.blueprint) == [nid("a")]


@pytest.mark.parametrize("c", [2, 4, 6])
def test_tied_edge_directions_give_no_edge(c: int) -> None:
    """Half the candidates ordering a<b and half b<a keep both nodes and neither edge."""
    half = c // 2
    graphs = [graph("ab", "ab") for _ in range(half)] + [graph("ab", "ba") for _ in range(half)]
    result = build_consensus(cands(*graphs), CATALOG)
    assert set(ids(result.blueprint)) == {nid("a"), nid("b")}
    assert edges(result.blueprint) == set()


@pytest.mark.parametrize("c", range(1, 8))
def test_all_invalid_candidates_raise(c: int) -> None:
    """When every one of C = 1..7 candidates is invalid, consensus raises and says how many were valid."""
    with pytest.raises(ConsensusError, match=rf"only 0 of {c} candidates are valid.*g0: schema: tool 'hallucinated'"):
        build_consensus(cands(*([None] * c)), CATALOG)


def test_no_candidates_raise() -> None:
    """An empty candidate list cannot produce a blueprint."""
    with pytest.raises(ConsensusError, match="only 0 of 0"):
        build_consensus([], CATALOG)


def test_support_counts_valid_candidates_only() -> None:
    """Invalid candidates neither vote nor count towards C_valid (7 candidates, 3 invalid: need 3 of 4)."""
    # C_valid = 4, threshold ceil(5/2) = 3. 'b' is in 2 valid graphs: dropped; 'c' in 3: kept.
    graphs = [graph("abc"), graph("abc"), graph("ac"), graph("a"), None, None, None]
    result = build_consensus(cands(*graphs), CATALOG)
    assert ids(result.blueprint) == [nid("a"), nid("c")]
    prov = result.blueprint.provenance
    assert prov is not None
    assert (prov.candidates, prov.valid_candidates, prov.support_threshold) == (7, 4, 3)
    assert result.valid == ("g0", "g1", "g2", "g3")


def test_min_valid_is_enforced() -> None:
    """Fewer valid candidates than min_valid is an error even when some are valid."""
    with pytest.raises(ConsensusError, match="only 1 of 2 candidates are valid, fewer than the minimum 2"):
        build_consensus(cands(graph("a"), None), CATALOG, min_valid=2)


def test_duplicate_candidate_names_raise() -> None:
    """Candidate names must be unique, so the audit can refer to them."""
    with pytest.raises(ConsensusError, match=r"\['g'\] appear more than once"):
        build_consensus([Candidate("g", graph("a")), Candidate("g", graph("a"))], CATALOG)


# ---- eq. 11: node equivalence -----------------------------------------------------------------


def test_equivalence_is_tool_and_role() -> None:
    """Nodes are equivalent only when tool and role both match (eq. 11)."""
    by_name = Blueprint(milestones=(milestone("s", tool_name="op_a", role="by_name"),))
    by_date = Blueprint(milestones=(milestone("s", tool_name="op_a", role="by_date"),))
    result = build_consensus(cands(by_name, by_name, by_date), CATALOG)
    assert ids(result.blueprint) == [nid("a", "by_name")]
    assert result.support == {nid("a", "by_name"): 2}


def test_candidate_ids_do_not_matter() -> None:
    """Candidates naming the same operations differently still agree."""
    g1 = Blueprint(milestones=(milestone("first", tool_name="op_a"), milestone("second", tool_name="op_b")), edges=(Edge(source="first", target="second"),))
    g2 = Blueprint(milestones=(milestone("x", tool_name="op_a"), milestone("y", tool_name="op_b")), edges=(Edge(source="x", target="y"),))
    result = build_consensus(cands(g1, g2), CATALOG)
    assert edges(result.blueprint) == {(nid("a"), nid("b"))}


def test_repeated_operation_gives_numbered_nodes() -> None:
    """A candidate calling the same operation twice contributes a first and a second occurrence."""
    twice = Blueprint(
        milestones=(milestone("s1", tool_name="op_a"), milestone("s2", tool_name="op_a")),
        edges=(Edge(source="s1", target="s2"),),
    )
    result = build_consensus(cands(twice, twice, graph("a")), CATALOG)
    assert ids(result.blueprint) == ["op_a[default]", "op_a[default]#2"]
    assert result.support == {"op_a[default]": 3, "op_a[default]#2": 2}


# ---- precedence ---------------------------------------------------------------------------------


def test_precedence_is_aggregated_over_transitive_closures() -> None:
    """A candidate saying a<b<c also votes a<c; the majority DAG is then transitively reduced."""
    # closures: g0 {ab, bc, ac}, g1 {ab, ac}, g2 {ac, bc}; need 2 of 3:
    # ab 2, bc 2, ac 3 -> edges {ab, bc, ac} -> reduction drops ac.
    result = build_consensus(cands(graph("abc", "ab bc"), graph("abc", "ab ac"), graph("abc", "ac bc")), CATALOG)
    assert edges(result.blueprint) == {(nid("a"), nid("b")), (nid("b"), nid("c"))}


def test_shortcut_edges_are_removed() -> None:
    """Explicit shortcut edges present in every candidate are removed by the transitive reduction."""
    g = graph("abc", "ab bc ac")
    assert edges(build_consensus(cands(g, g, g), CATALOG).blueprint) == {(nid("a"), nid("b")), (nid("b"), nid("c"))}


def test_edges_to_dropped_nodes_are_dropped() -> None:
    """An edge is only kept between admitted nodes; a path through a dropped node still orders its ends."""
    # 'b' is in 1 of 3: dropped. a<b<c in g0 gives a<c by closure; g1 also says a<c: kept (2 of 3).
    result = build_consensus(cands(graph("abc", "ab bc"), graph("ac", "ac"), graph("ac")), CATALOG)
    assert edges(result.blueprint) == {(nid("a"), nid("c"))}


def test_parallel_branches_survive_as_parallel() -> None:
    """Candidates disagreeing on the order of two independent steps leave them unordered (path tolerance)."""
    result = build_consensus(cands(graph("abcd", "ab bc cd"), graph("abcd", "ac cb bd"), graph("abcd", "ab ac bd cd")), CATALOG)
    # closures: g0 ab ac ad bc bd cd; g1 ac ab ad cb cd bd; g2 ab ac ad bd cd.
    # ab 3, ac 3, ad 3, bd 3, cd 3, bc 1, cb 1 -> majority {ab, ac, ad, bd, cd}; reduce -> diamond.
    assert edges(result.blueprint) == {(nid("a"), nid("b")), (nid("a"), nid("c")), (nid("b"), nid("d")), (nid("c"), nid("d"))}


def test_majority_cycle_is_broken_and_recorded() -> None:
    """A Condorcet cycle among majority edges loses its weakest edge (ties broken by name) and the drop is recorded."""
    # closures: g0 {ab bc ac}, g1 {bc ca ba}, g2 {ca ab cb}: ab, bc, ca each have support 2 of 3 (need 2),
    # forming a cycle; all tie at 2, so the lexicographically smallest pair a->b is dropped.
    result = build_consensus(cands(graph("abc", "ab bc"), graph("abc", "bc ca"), graph("abc", "ca ab")), CATALOG)
    assert edges(result.blueprint) == {(nid("b"), nid("c")), (nid("c"), nid("a"))}
    prov = result.blueprint.provenance
    assert prov is not None
    assert prov.dropped_edges == (f"{nid('a')}->{nid('b')} (support 2, broke a majority cycle)",)


# ---- pruning ---------------------------------------------------------------------------------------


def test_candidate_from_valid_text_parses() -> None:
    """Candidate text that is a blueprint graph becomes a parsed candidate carrying its generator and model."""
    cand = Candidate.from_text("g1", graph("ab", "ab").to_json(), generator="direct", model="m1")
    assert cand.error is None and cand.blueprint == graph("ab", "ab")
    assert (cand.generator, cand.model) == ("direct", "m1")


def test_pruned_parse_error_is_recorded() -> None:
    """A candidate whose text is not JSON is pruned under rule 'parse' with the reason."""
    bad = Candidate.from_text("g9", "{not json", generator="gen", model="m1")
    assert bad.blueprint is None and bad.error is not None
    result = build_consensus([bad, *cands(graph("a"))], CATALOG)
    (p,) = result.pruned
    assert (p.candidate, p.rule, p.node) == ("g9", "parse", None)
    assert p.message.startswith("not a blueprint graph at top level")


def test_pruned_wrong_shape_names_the_location() -> None:
    """A JSON candidate that is not a graph is pruned with the location of the first error."""
    bad = Candidate.from_text("g9", json.dumps({"milestones": [{"id": "a"}]}))
    result = build_consensus([bad, *cands(graph("a"))], CATALOG)
    assert result.pruned[0].rule == "parse"
    assert "milestones.0.tool" in result.pruned[0].message


def test_pruned_hallucinated_tool_is_recorded() -> None:
    """A candidate using a tool outside the catalog is pruned under rule 'schema' with node and reason."""
    result = build_consensus(cands(graph("a"), None), CATALOG)
    (p,) = result.pruned
    assert (p.candidate, p.rule, p.node) == ("g1", "schema", "z")
    assert p.message == "tool 'hallucinated' is not in the tool catalog"


def test_pruned_cycle_is_recorded() -> None:
    """A cyclic candidate is pruned under rule 'acyclic'."""
    result = build_consensus(cands(graph("a"), graph("ab", "ab ba")), CATALOG)
    (p,) = result.pruned
    assert (p.candidate, p.rule) == ("g1", "acyclic")
    assert p.message.startswith("precedence cycle")


def test_pruned_binding_without_ancestor_is_recorded() -> None:
    """A candidate consuming a binding its producer cannot have produced is pruned under rule 'binding'."""
    orphan = graph("abc", "ab ac", bindings=(Binding(name="v", producer="b", consumer="c", arg="q"),))
    result = build_consensus(cands(graph("a"), orphan), CATALOG)
    (p,) = result.pruned
    assert (p.candidate, p.rule, p.node) == ("g1", "binding", "c")
    assert "produced by 'b', which is not its ancestor" in p.message


def test_pruned_candidate_without_milestones_is_recorded() -> None:
    """A candidate that asks nothing of the agent (minefields only) is pruned under rule 'non-empty'."""
    only_mines = Blueprint(minefields=(Minefield(id="mf", tool="wipe"),))
    result = build_consensus([Candidate("g1", only_mines), *cands(graph("a"))], CATALOG)
    (p,) = result.pruned
    assert (p.candidate, p.rule, p.node) == ("g1", "non-empty", None)
    assert p.message.startswith("the blueprint has no milestones")


def test_consensus_without_a_majority_milestone_is_refused() -> None:
    """When no milestone reaches majority support, consensus refuses rather than return a blueprint any run completes."""
    with pytest.raises(ConsensusError, match=r"no milestone reached the majority support of 2 among the 3 valid candidates"):
        build_consensus(cands(graph("a"), graph("b"), graph("c")), CATALOG)


def test_pruned_candidate_counts_further_violations() -> None:
    """A pruned candidate's message says how many more violations it had."""
    two_bad = Blueprint(milestones=(milestone("p", tool_name="nope1"), milestone("q", tool_name="nope2")))
    result = build_consensus([Candidate("bad", two_bad), *cands(graph("a"))], CATALOG)
    assert result.pruned[0].message.endswith("(and 1 more)")


def test_pruned_candidates_are_in_provenance() -> None:
    """The blueprint's provenance carries the same pruned records as the result."""
    result = build_consensus(cands(graph("a"), None), CATALOG)
    assert result.blueprint.provenance is not None and result.blueprint.provenance.pruned == result.pruned


# ---- bindings, minefields, predicates -------------------------------------------------------------


def test_majority_binding_is_kept_with_canonical_ids() -> None:
    """A binding with majority support is kept between the consensus nodes."""
    with_b = graph("ab", "ab", bindings=(Binding(name="v", producer="a", consumer="b", arg="q", path="id"),))
    result = build_consensus(cands(with_b, with_b, graph("ab", "ab")), CATALOG)
    (b,) = result.blueprint.bindings
    assert (b.producer, b.consumer, b.arg, b.path) == (nid("a"), nid("b"), "q", "id")
    assert b.name == f"{nid('a')}->{nid('b')}.q"


def test_minority_binding_is_dropped() -> None:
    """A binding in one of three candidates is not kept."""
    with_b = graph("ab", "ab", bindings=(Binding(name="v", producer="a", consumer="b", arg="q"),))
    assert build_consensus(cands(with_b, graph("ab", "ab"), graph("ab", "ab")), CATALOG).blueprint.bindings == ()


def test_binding_whose_producer_lost_ancestry_is_dropped_and_recorded() -> None:
    """A majority binding whose producer stops being an ancestor (its edge broke a cycle) is dropped and recorded."""
    b = (Binding(name="v", producer="a", consumer="b", arg="q"),)
    # Condorcet cycle as above (a->b is the edge dropped); g0 and g1 both bind a -> b, so the
    # binding has majority support 2 of 3 but a no longer reaches b (remaining edges b->c, c->a).
    graphs = [graph("abc", "ab bc", bindings=b), graph("abc", "ca ab", bindings=b), graph("abc", "bc ca")]
    result = build_consensus(cands(*graphs), CATALOG)
    assert result.blueprint.bindings == ()
    prov = result.blueprint.provenance
    assert prov is not None
    assert f"binding {nid('a')}->{nid('b')}.q (producer no longer an ancestor)" in prov.dropped_edges


def test_majority_minefield_is_kept_with_majority_predicates() -> None:
    """A fatal minefield on the same tool in a majority is kept with the predicates a majority gave."""
    strict = Minefield(id="m1", tool="wipe", args=(ArgPredicate(arg="target", op="eq", value="all"),), reason="erases everything")
    loose = Minefield(id="other", tool="wipe", reason="erases everything")
    result = build_consensus(cands(graph("a", minefields=(strict,)), graph("a", minefields=(strict,)), graph("a", minefields=(loose,))), CATALOG)
    (f,) = result.blueprint.minefields
    assert (f.id, f.tool, f.fatal, f.reason) == ("mf:wipe", "wipe", True, "erases everything")
    assert f.args == strict.args


def test_minority_minefield_is_dropped() -> None:
    """A minefield proposed by one of three candidates is not kept."""
    mine = Minefield(id="m1", tool="wipe")
    assert build_consensus(cands(graph("a", minefields=(mine,)), graph("a"), graph("a")), CATALOG).blueprint.minefields == ()


def test_milestone_predicates_are_majority_predicates() -> None:
    """A merged milestone keeps the argument predicates most candidates agree on."""
    g1 = Blueprint(milestones=(milestone("a", x="alice", q="one"),))
    g2 = Blueprint(milestones=(milestone("a", x="alice"),))
    g3 = Blueprint(milestones=(milestone("a", x="bob"),))
    (m,) = build_consensus(cands(g1, g2, g3), CATALOG).blueprint.milestones
    assert m.args == (ArgPredicate(arg="x", op="eq", value="alice"),)


# ---- determinism ----------------------------------------------------------------------------------------


def _varied() -> list[Candidate]:
    mine = Minefield(id="m", tool="wipe", reason="irreversible")
    bind = (Binding(name="v", producer="a", consumer="d", arg="q", path="id"),)
    return [
        Candidate("alpha", graph("abcd", "ab bc cd", bindings=bind, minefields=(mine,)), generator="direct", model="m1"),
        Candidate("beta", graph("abd", "ab bd", bindings=bind), generator="filter", model="m2"),
        Candidate("gamma", graph("acde", "ac cd ae", minefields=(mine,)), generator="direct", model="m1"),
        Candidate("delta", graph("abcd", "ac cb bd", bindings=bind, minefields=(mine,)), generator="filter", model="m2"),
        Candidate("broken", Blueprint(milestones=(milestone("z", tool_name="nope"),))),
    ]


def test_any_candidate_order_gives_byte_identical_json() -> None:
    """Every permutation of the same candidates yields the same blueprint JSON, byte for byte."""
    base = _varied()
    reference = build_consensus(base, CATALOG, task="demo").blueprint.to_json()
    outputs = {build_consensus(list(p), CATALOG, task="demo").blueprint.to_json() for p in itertools.permutations(base)}
    assert outputs == {reference}


@pytest.mark.parametrize("seed", range(8))
def test_listing_order_inside_candidates_does_not_matter(seed: int) -> None:
    """Shuffling the milestones, edges and minefields inside each candidate leaves the JSON unchanged."""
    rng = random.Random(seed)
    base = _varied()
    reference = build_consensus(base, CATALOG).blueprint.to_json()
    shuffled = []
    for c in base:
        bp = c.blueprint
        assert bp is not None
        fields = {}
        for name in ("milestones", "edges", "minefields", "bindings"):
            items = list(getattr(bp, name))
            rng.shuffle(items)
            fields[name] = tuple(items)
        shuffled.append(Candidate(c.name, bp.model_copy(update=fields), generator=c.generator, model=c.model))
    rng.shuffle(shuffled)
    assert build_consensus(shuffled, CATALOG).blueprint.to_json() == reference


def test_consensus_output_is_a_valid_blueprint() -> None:
    """The merged blueprint passes its own contract validation and records its provenance."""
    from dynsteer_hook.model.contract import validate_blueprint

    bp = build_consensus(_varied(), CATALOG, task="demo", public_view_hash="abc").blueprint
    assert validate_blueprint(bp) == []
    assert bp.provenance is not None
    assert bp.provenance.generators == ("direct", "filter") and bp.provenance.models == ("m1", "m2")
    assert bp.provenance.public_view_hash == "abc" and bp.provenance.scenario == "demo"
