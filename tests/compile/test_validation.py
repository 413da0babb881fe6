"""Contract validation of eq. 2: SchemaCheck, Acyclic and BindingConsistency, with named violations."""

from __future__ import annotations

import pytest
from builders import FAMILIES, Family, blueprint, milestone, tool

from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL, Binding, Blueprint, Minefield, parse_blueprint
from dynsteer_hook.model.catalog import ToolCatalog
from dynsteer_hook.model.contract import ContractViolation, validate_blueprint
from dynsteer_hook.model.predicates import ArgPredicate


def _rules(bp: Blueprint, catalog: ToolCatalog | None = None) -> list[tuple[str | None, str]]:
    return [(v.node, v.rule) for v in validate_blueprint(bp, catalog, "cand-1")]


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_family_blueprints_are_valid(fam: Family) -> None:
    """Every graph family used by the suite satisfies all contracts."""
    assert validate_blueprint(fam.blueprint()) == []


def test_hallucinated_tool_names_candidate_node_and_rule() -> None:
    """A milestone on a tool outside the catalog is a schema violation whose text names candidate, node and rule."""
    bp = blueprint(["a"], milestones=[milestone("a", tool_name="teleport")])
    violations = validate_blueprint(bp, ToolCatalog([tool("op_b")]), "cand-7")
    assert violations == [ContractViolation("cand-7", "a", "schema", "tool 'teleport' is not in the tool catalog")]
    assert str(violations[0]) == "candidate 'cand-7', node 'a', rule schema: tool 'teleport' is not in the tool catalog"


def test_graph_level_violation_reads_as_graph() -> None:
    """A violation without a node says 'graph' where the node would be."""
    assert str(ContractViolation("c", None, "schema", "m")) == "candidate 'c', graph, rule schema: m"


def test_predicate_on_unknown_argument() -> None:
    """A predicate on an argument the tool does not have is a schema violation."""
    bp = blueprint(["a"], milestones=[milestone("a", colour="red")])
    v = validate_blueprint(bp)
    assert [(x.node, x.rule) for x in v] == [("a", "schema")]
    assert "has no argument 'colour'" in v[0].message


def test_predicate_value_of_wrong_type() -> None:
    """An eq operand that does not fit the argument's declared type is a schema violation."""
    bp = blueprint(["a"], milestones=[milestone("a", n="seven")])
    v = validate_blueprint(bp)
    assert len(v) == 1 and v[0].rule == "schema" and "does not fit the type 'integer'" in v[0].message


def test_one_of_option_of_wrong_type() -> None:
    """A one_of option that does not fit the argument type is a schema violation."""
    ms = [milestone("a").model_copy(update={"args": (ArgPredicate(arg="n", op="one_of", value=[1, "two"]),)})]
    assert _rules(blueprint(["a"], milestones=ms)) == [("a", "schema")]


def test_numeric_comparison_on_string_argument() -> None:
    """A gt/ge/lt/le predicate on a string argument is a schema violation."""
    ms = [milestone("a").model_copy(update={"args": (ArgPredicate(arg="x", op="gt", value=3),)})]
    v = validate_blueprint(blueprint(["a"], milestones=ms))
    assert len(v) == 1 and "numeric comparison gt on non-numeric argument 'x'" in v[0].message


def test_agent_message_predicates_only_test_content() -> None:
    """Predicates of the reserved @agent_message operation may only test 'content'."""
    ok = milestone("say", tool_name=AGENT_MESSAGE_TOOL, content="done")
    bad = milestone("say", tool_name=AGENT_MESSAGE_TOOL, subject="x")
    assert validate_blueprint(blueprint(["say"], milestones=[ok], extra_tools=[tool("op_z")])) == []
    assert _rules(blueprint(["say"], milestones=[bad], extra_tools=[tool("op_z")])) == [("say", "schema")]


def test_minefield_on_unknown_tool() -> None:
    """A minefield on a tool outside the catalog is a schema violation naming the minefield."""
    bp = blueprint(["a"], minefields=[Minefield(id="mf1", tool="nuke")])
    assert _rules(bp, ToolCatalog([tool("op_a", x="string")])) == [("mf1", "schema")]


def test_binding_into_unknown_argument() -> None:
    """A binding that feeds an argument the consumer's tool lacks is a binding violation."""
    bp = blueprint(["a", "b"], [("a", "b")], bindings=[Binding(name="v", producer="a", consumer="b", arg="nope")])
    v = validate_blueprint(bp)
    assert [(x.node, x.rule) for x in v] == [("b", "binding")] and "unknown argument 'nope'" in v[0].message


def test_cycle_is_named_with_its_path() -> None:
    """A precedence cycle is an acyclic violation that spells out the cycle."""
    bp = blueprint(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "a")])
    v = validate_blueprint(bp, None, "cand-3")
    assert [x.rule for x in v] == ["acyclic"]
    assert v[0].candidate == "cand-3"
    assert v[0].node in {"a", "b", "c"}
    assert v[0].message.startswith("precedence cycle ") and v[0].message.count("->") == 3


@pytest.mark.parametrize(
    ("producer", "consumer", "ok"),
    [("a", "d", True), ("b", "d", True), ("b", "c", False), ("d", "a", False), ("b", "b", False)],
)
def test_binding_needs_a_strict_ancestor(producer: str, consumer: str, ok: bool) -> None:
    """A binding is consistent only when its producer is a strict ancestor of its consumer (diamond a->b,c->d)."""
    fam = next(f for f in FAMILIES if f.name == "diamond")
    bp = fam.blueprint().model_copy(update={"bindings": (Binding(name="v", producer=producer, consumer=consumer, arg="q"),)})
    v = validate_blueprint(bp, None, "cand-2")
    if ok:
        assert v == []
    else:
        assert [(x.node, x.rule) for x in v] == [(consumer, "binding")]
        assert f"produced by {producer!r}, which is not its ancestor" in v[0].message


def test_blueprint_without_milestones_is_invalid() -> None:
    """A blueprint with no milestones (even '{}') breaks the non-empty contract, with one sentence saying what to add."""
    v = validate_blueprint(parse_blueprint("{}"), None, "cand-0")
    assert [(x.node, x.rule) for x in v] == [(None, "non-empty")]
    assert str(v[0]).startswith("candidate 'cand-0', graph, rule non-empty: the blueprint has no milestones, so any run would count as complete")
    assert f"an {AGENT_MESSAGE_TOOL!r} milestone whose 'content' predicate" in v[0].message


def test_minefields_alone_do_not_make_a_blueprint_valid() -> None:
    """Only minefields still asks nothing of the agent; other problems of the same blueprint are reported too."""
    bp = blueprint([], minefields=[Minefield(id="mf1", tool="nuke")], extra_tools=[tool("op_a")])
    assert _rules(bp, ToolCatalog([tool("op_a")])) == [(None, "non-empty"), ("mf1", "schema")]


def test_reference_errors_short_circuit() -> None:
    """An edge to an unknown milestone is reported alone, before graph rules run."""
    bp = Blueprint.model_validate({"milestones": [{"id": "a", "tool": "op_a"}], "edges": [{"source": "a", "target": "ghost"}]})
    assert _rules(bp) == [("ghost", "edge-reference")]


def test_schema_check_skipped_without_any_catalog() -> None:
    """With no catalog at all, tool names are not checked (SchemaCheck needs A)."""
    bp = Blueprint.model_validate({"milestones": [{"id": "a", "tool": "anything"}]})
    assert validate_blueprint(bp) == []


def test_explicit_catalog_overrides_the_blueprint_catalog() -> None:
    """A catalog passed in is used instead of the blueprint's own."""
    bp = blueprint(["a"])
    assert _rules(bp, ToolCatalog([tool("other")])) == [("a", "schema")]
