"""Package data: the JSON Schemas of event files and reports, and the scripts of the shipped scripted agents."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def shipped_scripts() -> dict[str, Path]:
    """The scripts of the shipped scripted agents by name (``looping_agent`` -> its file in the installed package)."""
    folder = files(__name__).joinpath("scripts")
    return {p.name.removesuffix(".json"): Path(str(p)) for p in sorted(folder.iterdir(), key=lambda p: p.name) if p.name.endswith(".json")}


def script_argument(given: Path) -> Path:
    """A ``--script`` argument: the file it names, or, when no such file exists and it is a bare name, the shipped script
    of that name (``looping_agent`` or ``looping_agent.json``), so that examples work from any directory."""
    if given.exists() or given.parent != Path("."):
        return given
    return shipped_scripts().get(given.name.removesuffix(".json"), given)
