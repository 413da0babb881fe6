"""Tool catalog: JSON-schema type fitting and per-call argument checks."""

from __future__ import annotations

import pytest
from builders import tool

from dynsteer_hook.model.catalog import ToolCatalog, type_fits
from dynsteer_hook.model.json_types import JSON_TYPES
from dynsteer_hook.model.predicates import ArgPredicate, predicate_holds

CATALOG = ToolCatalog([tool("send", required=["to"], to="string", n="integer", ok="boolean"), tool("ping")])


@pytest.mark.parametrize(
    ("schema", "value", "fits"),
    [
        ({"type": "string"}, "a", True),
        ({"type": "string"}, 1, False),
        ({"type": "integer"}, True, False),
        ({"type": "number"}, 3, True),
        ({"type": ["string", "null"]}, "a", True),
        ({"type": ["integer", "string"]}, 1.5, False),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "a", True),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, [1], False),
        ({"enum": ["a", "b"], "type": "string"}, "c", False),
        ({"enum": ["a", "b"], "type": "string"}, "a", True),
        ({}, object(), True),
        ({"type": "string"}, None, True),
        ({"type": "custom"}, 1, True),
    ],
)
def test_type_fits(schema: dict[str, object], value: object, fits: bool) -> None:
    """type_fits follows JSON Schema types, unions and enums; null and unknown shapes fit."""
    assert type_fits(schema, value) is fits


@pytest.mark.parametrize("name", sorted(JSON_TYPES))
@pytest.mark.parametrize("value", ["a", 0, 2.5, True, [1], {"k": 1}])
def test_schema_and_type_predicate_agree(name: str, value: object) -> None:
    """A tool schema's type and a blueprint's ``type`` predicate accept the same non-null values."""
    assert type_fits({"type": name}, value) is predicate_holds(ArgPredicate(arg="x", op="type", value=name), {"x": value})


def test_well_formed_call_has_no_issues() -> None:
    """A call with the required argument and fitting types has no issues."""
    assert CATALOG.check_arguments("send", {"to": "bob", "n": 2}) == []


@pytest.mark.parametrize(
    ("name", "args", "rule", "arg"),
    [
        ("nope", {}, "unknown-tool", None),
        ("send", None, "unparseable", None),
        ("send", {"to": "bob", "cc": "x"}, "unknown-arg", "cc"),
        ("send", {"n": 1}, "missing-arg", "to"),
        ("send", {"to": "bob", "n": "two"}, "type", "n"),
    ],
)
def test_each_issue_rule(name: str, args: dict[str, object] | None, rule: str, arg: str | None) -> None:
    """Each way a call can miss its schema is reported under its own rule and argument."""
    issues = CATALOG.check_arguments(name, args)
    assert [(i.rule, i.arg) for i in issues] == [(rule, arg)]
    assert name in issues[0].message


def test_catalog_accessors() -> None:
    """Names, specs, properties and required arguments are read from the schemas; unknown tools give empty answers."""
    assert CATALOG.names() == ["send", "ping"]
    assert len(CATALOG) == 2 and "send" in CATALOG and "nope" not in CATALOG
    assert set(CATALOG.properties("send")) == {"to", "n", "ok"}
    assert CATALOG.required("send") == ["to"]
    assert CATALOG.properties("nope") == {} and CATALOG.required("nope") == [] and CATALOG.spec("nope") is None
