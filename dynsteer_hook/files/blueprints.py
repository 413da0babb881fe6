"""Blueprint files: read and checked (shape, references, contracts), written in canonical form
atomically, and the blueprints shipped with the package."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from dynsteer_hook.files.inputs import load_json_input
from dynsteer_hook.files.outputs import write_text_atomic
from dynsteer_hook.model.blueprint import Blueprint, parse_blueprint
from dynsteer_hook.model.contract import validate_blueprint
from dynsteer_hook.model.errors import BlueprintError


def shipped_blueprint_dir(benchmark: str = "toolsandbox") -> Path:
    """The blueprints shipped for a benchmark's scenarios: ``blueprints/<benchmark>`` inside the package.

    They are package data, so an installed wheel finds them beside its modules. In a source
    checkout ``dynsteer_hook/blueprints`` links to the repository's ``blueprints`` folder, the
    one ``dynsteer compile`` writes to by default, so the same lookup finds them there.
    """
    return Path(str(importlib.resources.files("dynsteer_hook"))) / "blueprints" / benchmark


def blueprint_argument(given: Path, benchmark: str = "toolsandbox") -> Path:
    """A command's blueprint argument: the file it names, or, when no such file exists and it is a bare name, the shipped
    blueprint of the scenario of that name (``cellular_off`` -> ``blueprints/toolsandbox/cellular_off.json`` in the
    installed package), so that examples work from any directory."""
    if given.exists() or given.parent != Path("."):
        return given
    shipped = shipped_blueprint_dir(benchmark) / f"{given.name.removesuffix('.json')}.json"
    return shipped if shipped.is_file() else given


def load_blueprint(path: str | Path) -> Blueprint:
    """Read a blueprint file and check its shape and references.

    Raises:
        BlueprintError: The file is missing, unreadable or malformed (one sentence).
    """
    p = Path(path)
    text, _ = load_json_input(p, "blueprint file", "pass the path of a blueprint JSON file", BlueprintError)
    return parse_blueprint(text, source=f"blueprint file {p}")


def load_valid_blueprint(path: str | Path) -> Blueprint:
    """``load_blueprint`` plus the contract check the evaluator makes, so a run can refuse it before it starts."""
    bp = load_blueprint(path)
    violations = validate_blueprint(bp, None, bp.task or "blueprint")
    if violations:
        v = violations[0]
        where = f" at {v.node!r}" if v.node else ""
        raise BlueprintError(
            f"blueprint file {path} is not valid ({v.rule}{where}: {v.message}); fix it or recompile it with dynsteer compile "
            "(dynsteer validate lists every problem)"
        )
    return bp


def save_blueprint(bp: Blueprint, path: str | Path) -> None:
    """Write a blueprint in canonical form, atomically."""
    write_text_atomic(path, bp.to_json())
