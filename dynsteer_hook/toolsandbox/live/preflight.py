"""Everything a run needs, checked before the first rollout (and, where it can be, before
ToolSandbox's scenarios are loaded): the script, the blueprint folder, every blueprint
(shape, contracts, the scenario it was compiled for, the public view it was compiled
from), and the agent's and user's models.

A blueprint compiled for another scenario is refused. A stale one (compiled from another
version of the scenario's public view) is refused unless ``allow_stale``; then the run
says so on the console, in the report and in ``dynsteer_summary.json``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dynsteer_hook.files.blueprints import load_valid_blueprint, shipped_blueprint_dir
from dynsteer_hook.llm.settings import ModelSettings
from dynsteer_hook.model.errors import ScenarioError
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.roles.named import LITELLM, SCRIPTED
from dynsteer_hook.toolsandbox.roles.scripted import ScenarioScript, load_script
from dynsteer_hook.toolsandbox.scenario_view import public_view

from tool_sandbox.common.scenario import Scenario


def default_blueprint_dir() -> Path:
    """The shipped blueprints of ToolSandbox's scenarios (see ``storage.shipped_blueprint_dir``)."""
    return shipped_blueprint_dir()


def blueprint_path(directory: Path, name: str) -> Path:
    """Where the blueprint of scenario ``name`` lives."""
    return directory / f"{name}.json"


def model_of(role: str, settings: ModelSettings | None) -> ModelSettings:
    """The LiteLLM role's model settings, or one sentence saying which flag is missing."""
    if settings is None:
        raise ScenarioError(f"the LiteLLM {role} needs a model: pass --{role}-model (and --{role}-api-base for a local server)")
    return settings


def check_script(agent: str, user: str, script: Path | None) -> dict[str, ScenarioScript]:
    """The script of the Scripted roles, read and checked whole ({} when no role is scripted)."""
    if SCRIPTED not in (agent, user):
        return load_script(script) if script is not None else {}
    if script is None:
        raise ScenarioError("the Scripted role needs --script FILE (scenario name -> agent steps and user utterances)")
    return load_script(script)


def check_blueprint_dir(directory: Path | None) -> Path:
    """The blueprint folder of a dynsteer run, which must be a folder."""
    chosen = directory if directory is not None else default_blueprint_dir()
    if chosen.exists() and not chosen.is_dir():
        raise ScenarioError(f"--blueprints {chosen} is a file, not a directory; pass the folder holding <scenario>.json files")
    return chosen


@dataclass(frozen=True)
class BlueprintCheck:
    """What the blueprints of a run were found to be."""

    stale: tuple[str, ...] = ()


def check_blueprints(scenarios: dict[str, Scenario], directory: Path, *, allow_stale: bool = False) -> BlueprintCheck:
    """Load and validate every scenario's blueprint, exactly as the evaluator will, and compare its provenance.

    Raises:
        ScenarioError: A blueprint is missing, compiled for another scenario, or stale (without ``allow_stale``).
        BlueprintError: A blueprint is malformed or breaks a contract (one sentence naming the file).
    """
    missing = [n for n in scenarios if not os.path.lexists(blueprint_path(directory, n))]
    if missing:
        raise ScenarioError(
            f"no blueprint for {len(missing)} scenario(s) in {directory}, e.g. {missing[:3]}; "
            "compile them (dynsteer compile) or pass --blueprints DIR"
        )
    stale: list[str] = []
    for name, scenario in scenarios.items():
        path = blueprint_path(directory, name)
        bp = load_valid_blueprint(path)
        prov = bp.provenance
        owner = next((x for x in (bp.task, prov.scenario if prov else None) if x and x != name), None)
        if owner is not None:
            raise ScenarioError(
                f"blueprint file {path} was compiled for scenario {owner!r}, not {name!r}; "
                f"compile the right one (dynsteer compile -s {name}) or fix --blueprints"
            )
        if prov is not None and prov.public_view_hash and prov.public_view_hash != public_view(name, scenario).digest():
            stale.append(name)
    if stale and not allow_stale:
        raise ScenarioError(
            f"{len(stale)} blueprint(s) in {directory} were compiled from another version of the scenario's public view "
            f"(stale), e.g. {blueprint_path(directory, stale[0])}; recompile them (dynsteer compile --force -s NAME) or pass --allow-stale-blueprints"
        )
    return BlueprintCheck(stale=tuple(stale))


def check_inputs(scenarios: dict[str, Scenario], *, agent: str, user: str, evaluator: str, script: Path | None,
                 blueprint_dir: Path | None, agent_model: ModelSettings | None = None,
                 user_model: ModelSettings | None = None, allow_stale: bool = False) -> BlueprintCheck:
    """Fail before anything is played when a model, a script entry or a blueprint is missing or wrong."""
    if agent == LITELLM:
        model_of("agent", agent_model)
    if user == LITELLM:
        model_of("user", user_model)
    entries = check_script(agent, user, script)
    if SCRIPTED in (agent, user):
        missing = [n for n in scenarios if n not in entries]
        if missing:
            raise ScenarioError(f"the script {script} has no entry for {len(missing)} scenario(s), e.g. {missing[:3]}")
    if evaluator != "dynsteer":
        return BlueprintCheck()
    return check_blueprints(scenarios, check_blueprint_dir(blueprint_dir), allow_stale=allow_stale)
