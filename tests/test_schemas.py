"""The committed JSON Schema files equal what the code generates, so they cannot drift."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from dynsteer_hook.cli import main
from dynsteer_hook.model.blueprint import blueprint_json_schema, parse_blueprint
from dynsteer_hook.model.events import event_record_schema

pytestmark = pytest.mark.usefixtures("core_cli")

ROOT = Path(__file__).resolve().parent.parent


def _export_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("export_schemas", ROOT / "scripts" / "export_schemas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("rel", ["blueprints/schema.json", "dynsteer_hook/data/events.schema.json", "dynsteer_hook/data/report.schema.json"])
def test_committed_schema_matches_generated(rel: str) -> None:
    """Each committed schema file is byte-identical to the export script's output."""
    expected = _export_script().rendered()[rel]
    assert (ROOT / rel).read_text(encoding="utf-8") == expected


@pytest.mark.parametrize(
    ("rel", "make"),
    [("blueprints/schema.json", blueprint_json_schema), ("dynsteer_hook/data/events.schema.json", event_record_schema)],
)
def test_committed_schema_is_the_model_schema(rel: str, make: object) -> None:
    """The committed file parses to exactly the schema the models produce."""
    assert json.loads((ROOT / rel).read_text(encoding="utf-8")) == make()  # type: ignore[operator]


def test_export_check_mode_passes_on_the_committed_files() -> None:
    """export_schemas.py --check reports no stale file."""
    assert _export_script().main(["--check"]) == 0


@pytest.mark.parametrize(("which", "rel"), [("blueprint", "blueprints/schema.json"), ("events", "dynsteer_hook/data/events.schema.json")])
def test_cli_schema_prints_the_committed_file(which: str, rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`dynsteer schema` prints the same text as the committed file."""
    assert main(["schema", which]) == 0
    assert capsys.readouterr().out == (ROOT / rel).read_text(encoding="utf-8")


def test_schema_titles_and_dialect() -> None:
    """Both schemas declare draft 2020-12 and a human title."""
    for schema in (blueprint_json_schema(), event_record_schema()):
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["title"].startswith("DynSTEER")


def test_blueprint_schema_accepts_a_canonical_blueprint() -> None:
    """Every top-level key of a canonical blueprint is a property of the schema."""
    bp = parse_blueprint(json.dumps({"task": "x", "milestones": [{"id": "a", "tool": "t"}]}))
    assert set(json.loads(bp.to_json())) <= set(blueprint_json_schema()["properties"])
