"""Run a set of ToolSandbox scenarios and write the run's summaries.

The parts: ``toolsandbox.scenarios`` loads ToolSandbox's named scenarios (seeded and cached as
its CLI does), ``playing`` plays one scenario, ``results`` types what a scenario yields,
``engines`` spreads scenarios over worker processes or Ray tasks, ``summaries`` makes
``result_summary.json`` and ``report.run_summary`` ``dynsteer_summary.json``. This module ties
them together, writes the summaries and names the output folder.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from dynsteer_hook.files.names import name_part, safe_name
from dynsteer_hook.files.outputs import create_dir, reason, write_json_atomic
from dynsteer_hook.llm.settings import ModelSettings
from dynsteer_hook.model.errors import OutputError
from dynsteer_hook.report.run_page import run_rows, write_run_page
from dynsteer_hook.report.run_summary import IN_FLIGHT, dynsteer_summary
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.live.engines import check_engine, run_jobs
from dynsteer_hook.toolsandbox.live.playing import EVENTS_FILE, RunOptions, play_scenario, run_scenario
from dynsteer_hook.toolsandbox.live.preflight import BlueprintCheck, blueprint_path, check_inputs, default_blueprint_dir
from dynsteer_hook.toolsandbox.live.results import ScenarioResult, crash_reason, dumps_result
from dynsteer_hook.toolsandbox.live.resume import record_result
from dynsteer_hook.toolsandbox.live.run_budget import RunBudget, budget_block, left
from dynsteer_hook.toolsandbox.live.summaries import result_summary
from dynsteer_hook.toolsandbox.roles.named import AGENTS, LITELLM, SCRIPTED, USERS, RoleFactory
from dynsteer_hook.toolsandbox.scenarios import TEST_SCENARIO_NAMES, load_scenarios

from tool_sandbox.common.scenario import Scenario

__all__ = ["EVENTS_FILE", "SUMMARY_FILE", "TEST_SCENARIO_NAMES", "RunOptions", "ScenarioResult", "blueprint_path", "check_run",
           "crash_reason", "default_blueprint_dir", "dumps_result", "load_scenarios", "output_directory_for", "play_scenario",
           "run_scenario", "run_scenarios", "timestamp"]

SUMMARY_FILE = "dynsteer_summary.json"
RESULT_SUMMARY = "result_summary.json"


def output_directory_for(base: Path, options: RunOptions) -> Path:
    """ToolSandbox's naming: agent_<model>_user_<model>_<timestamp>, the model strings made folder-name parts (a model
    string is any text a flag gave: ``../x`` or a newline must not become a path or a raw folder name)."""
    def name(chosen: str, table: dict[str, RoleFactory], model: ModelSettings | None) -> str:
        if chosen == SCRIPTED:
            return SCRIPTED
        if chosen == LITELLM:
            return name_part(model.model) if model and model.model else LITELLM
        return name_part(table[chosen].model_name(chosen))

    agent = name(options.agent, AGENTS, options.agent_model)
    user = name(options.user, USERS, options.user_model)
    return Path(base) / safe_name(f"agent_{agent}_user_{user}_{timestamp()}")


def timestamp() -> str:
    """The time in ToolSandbox's folder-name format."""
    return datetime.datetime.now().strftime("%m_%d_%Y_%H_%M_%S")


def check_run(name_to_scenario: dict[str, Scenario], options: RunOptions) -> BlueprintCheck:
    """Every input of a run, checked before the first rollout (see ``preflight``)."""
    return check_inputs(
        name_to_scenario, agent=options.agent, user=options.user, evaluator=options.evaluator, script=options.script,
        blueprint_dir=options.blueprint_dir, agent_model=options.agent_model, user_model=options.user_model,
        allow_stale=options.allow_stale,
    )


def run_scenarios(
    name_to_scenario: dict[str, Scenario], options: RunOptions, output_directory: Path, processes: int, *, checked: bool = False,
    engine: str = "local", ray_address: str | None = None, progress: Callable[[dict[str, Any]], None] | None = None,
    kept: Sequence[dict[str, Any]] = (),
    run_max_cost: float | None = None,
) -> list[dict[str, Any]]:
    """Play scenarios (in ``spawn`` worker processes when ``processes`` > 1, or as Ray tasks) and write the summaries.

    Every input is checked before the first rollout unless ``checked`` says the caller did.
    A result with ``interrupted`` means Ctrl-C stopped the run (the summaries say so). The
    results come in the (shuffled) order the scenarios were handed out, whatever the engine;
    ``progress`` is told each one as it finishes (``progress.RunProgress.finished``). Each finished scenario's record is
    written beside its report (``resume.RESULT_FILE``); a resumed run passes the records it ``kept`` (``resume.resume``),
    which the summaries and the run page cover with the scenarios played now. With ``run_max_cost`` no scenario starts
    once those finished (the kept ones included) have spent that many dollars (``run_budget``); the summaries list those
    left, and a resume plays them.

    Raises:
        OutputError: A summary cannot be written (one sentence; the scenario files written stay).
    """
    if not checked:
        check_run(name_to_scenario, options)
    items = list(name_to_scenario.items())
    random.shuffle(items)  # load balancing, as ToolSandbox does
    worker = partial(play_and_record, options=options, output_directory=output_directory)
    create_dir(output_directory, "-o/--output_dir")
    check_engine(engine, ray_address)
    closing, spent = None, False
    if run_max_cost is not None:
        spending = RunBudget(run_max_cost)
        spent = any([spending(r) for r in kept])  # every kept record counted: a resumed run has spent what they did
        closing = spending.closing()
    if spent:
        results = [*kept, *(left(item) for item in items)]
    else:
        results = [*kept, *run_jobs(worker, items, processes=processes, engine=engine, ray_address=ray_address, stopped=_given_up,
                                     on_result=progress, closing=closing)]
    budget = {} if run_max_cost is None else {"run_budget": budget_block(run_max_cost, results)}
    try:
        write_json_atomic(output_directory / RESULT_SUMMARY, result_summary(results) | budget)
        if options.evaluator == "dynsteer":
            write_json_atomic(output_directory / SUMMARY_FILE, dynsteer_summary(results) | budget)
        if options.write_reports:
            write_run_page(output_directory, f"dynsteer run: {output_directory.name}", run_rows(sorted(results, key=lambda r: r["name"])))
    except OSError as exc:
        raise OutputError(
            f"the run summaries cannot be written to {output_directory} ({reason(exc)}); the scenario files written there "
            "are kept; free some space and run again"
        ) from None
    return results


def play_and_record(name_and_scenario: tuple[str, Scenario], *, options: RunOptions, output_directory: Path) -> dict[str, Any]:
    """``run_scenario``, then the scenario's record written beside its report, last of its files, for ``--resume``."""
    record = run_scenario(name_and_scenario, options=options, output_directory=output_directory)
    if options.write_reports:
        record_result(output_directory / "trajectories" / name_and_scenario[0], record)
    return record


def _given_up(item: tuple[str, Scenario]) -> dict[str, Any]:
    """The record of a scenario a second Ctrl-C gave up waiting for."""
    name, scenario = item
    return ScenarioResult.stopped(name, scenario.categories, IN_FLIGHT).record()
