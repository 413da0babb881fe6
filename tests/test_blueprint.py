"""Blueprint model and parsing: shape checks, referential integrity, canonical JSON, the schema."""

from __future__ import annotations

import json

import pytest
from builders import blueprint, family

from dynsteer_hook.model.blueprint import Blueprint, Milestone, parse_blueprint, reference_errors
from dynsteer_hook.model.errors import BlueprintError, DynsteerError


def _doc(**over: object) -> str:
    doc: dict[str, object] = {
        "task": "demo",
        "milestones": [{"id": "a", "tool": "op_a"}, {"id": "b", "tool": "op_b"}],
        "edges": [{"source": "a", "target": "b"}],
    }
    doc.update(over)
    return json.dumps(doc)


def test_parse_valid_blueprint() -> None:
    """A well-formed document parses into milestones and edges with defaults filled in."""
    bp = parse_blueprint(_doc())
    assert [m.id for m in bp.milestones] == ["a", "b"]
    assert bp.milestones[0].operation == ("op_a", "default")
    assert [(e.source, e.target) for e in bp.edges] == [("a", "b")]


def test_not_json_names_source_and_fix() -> None:
    """Text that is not JSON is rejected with one sentence naming the source."""
    with pytest.raises(BlueprintError, match=r"^my\.json is not valid JSON .*fix the file") as exc:
        parse_blueprint("{nope", source="my.json")
    assert "\n" not in str(exc.value)


def test_non_object_is_rejected() -> None:
    """A JSON value that is not an object is rejected, naming what was found."""
    with pytest.raises(BlueprintError, match=r"must hold a JSON object.*found list"):
        parse_blueprint("[1, 2]")


def test_schema_mismatch_names_the_location() -> None:
    """A field of the wrong shape is reported with its dotted location and a pointer to the schema."""
    with pytest.raises(BlueprintError, match=r"milestones\.0\.id: .*see blueprints/schema\.json"):
        parse_blueprint(_doc(milestones=[{"id": "<bad>", "tool": "op_a"}]))


def test_unknown_field_is_rejected() -> None:
    """Extra fields are forbidden, so a typo cannot pass silently."""
    with pytest.raises(BlueprintError, match="mielstones"):
        parse_blueprint(_doc(mielstones=[]))


def test_edge_to_unknown_milestone() -> None:
    """An edge naming an unknown milestone is an edge-reference error naming that milestone."""
    with pytest.raises(BlueprintError, match=r"inconsistent \(edge-reference\): edge a->zz names unknown milestone 'zz'"):
        parse_blueprint(_doc(edges=[{"source": "a", "target": "zz"}]))


@pytest.mark.parametrize(
    ("over", "rule", "node"),
    [
        ({"milestones": [{"id": "a", "tool": "t"}, {"id": "a", "tool": "u"}], "edges": []}, "unique-id", "a"),
        ({"edges": [{"source": "a", "target": "a"}]}, "acyclic", "a"),
        (
            {"bindings": [{"name": "v", "producer": "a", "consumer": "q", "arg": "x"}]},
            "binding-reference",
            "q",
        ),
        (
            {
                "bindings": [
                    {"name": "v", "producer": "a", "consumer": "b", "arg": "x"},
                    {"name": "v", "producer": "a", "consumer": "b", "arg": "y"},
                ]
            },
            "unique-binding",
            "b",
        ),
        ({"minefields": [{"id": "m", "tool": "t"}, {"id": "m", "tool": "u"}]}, "unique-id", "m"),
    ],
)
def test_reference_errors(over: dict[str, object], rule: str, node: str) -> None:
    """Each referential-integrity rule is reported with its node."""
    bp = Blueprint.model_validate_json(_doc(**over))
    problems = reference_errors(bp)
    assert (node, rule) in [(n, r) for n, r, _ in problems]


def test_parse_error_is_a_dynsteer_error() -> None:
    """BlueprintError belongs to the package's single exception tree."""
    assert issubclass(BlueprintError, DynsteerError)


@pytest.mark.parametrize("name", ["single", "chain", "diamond", "parallel", "minefield_off_path"])
def test_canonical_json_round_trips(name: str) -> None:
    """to_json output parses back into an equal blueprint and is itself stable."""
    bp = family(name).blueprint()
    text = bp.to_json()
    assert text.endswith("\n")
    again = parse_blueprint(text)
    assert again == bp
    assert again.to_json() == text


def test_milestone_lookup() -> None:
    """milestone() finds by id and raises KeyError for unknown ids."""
    bp = blueprint(["a", "b"])
    assert bp.milestone("b").tool == "op_b"
    with pytest.raises(KeyError):
        bp.milestone("zz")


def test_milestone_ids_cannot_collide_with_the_start_node() -> None:
    """Milestone ids exclude '<', so no milestone can be named like the augmented entry <s0>."""
    with pytest.raises(ValueError, match="pattern"):
        Milestone(id="<s0>", tool="t")


def test_models_are_frozen() -> None:
    """Blueprint models are immutable once built."""
    bp = blueprint(["a"])
    with pytest.raises(ValueError, match="frozen"):
        bp.task = "other"  # type: ignore[misc]
