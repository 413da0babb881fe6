"""Run ToolSandbox scenarios with the native evaluator or with dynsteer live in the loop.

``run_scenario`` lives at module level so that the ``spawn`` worker processes of a
parallel run import it and build their own roles, evaluator and session. Its result has
the keys of ToolSandbox's own per-scenario results, plus a ``dynsteer`` block.

Faults never cost what is already known: a log that cannot be written (a full disk) stops
growing while the evaluator goes on in memory and the report names the first missing
record; a report that cannot be written is noted in the result; Ctrl-C ends in-flight
rollouts as ``interrupted`` (report written, both files or neither) and starts nothing
new, and the run summaries are written for what finished (see ``interrupts``).
"""

from __future__ import annotations

import datetime
import json
import random
import time
import traceback
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from dynsteer_hook.config import EvaluatorConfig
from dynsteer_hook.errors import OutputError, ScenarioError
from dynsteer_hook.events import Event
from dynsteer_hook.judge_factory import JudgeSettings, judge_cache_stats
from dynsteer_hook.model_settings import ModelSettings
from dynsteer_hook.outputs import JsonlSink, create_dir, reason, write_json_atomic, write_text_atomic
from dynsteer_hook.report import IncompleteLog, with_files
from dynsteer_hook.report_html import REPORT_HTML, render_run
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.storage import AUDIT_LOG, EventLog, load_blueprint, write_report
from dynsteer_hook.toolsandbox import (
    _quiet,  # noqa: F401 - must precede the tool_sandbox imports
    interrupts,
)
from dynsteer_hook.toolsandbox.adapter import GuardedRole, RolloutSession
from dynsteer_hook.toolsandbox.pool import play_all
from dynsteer_hook.toolsandbox.preflight import (
    BlueprintCheck,
    blueprint_path,
    check_inputs,
    default_blueprint_dir,
    model_of,
)
from dynsteer_hook.toolsandbox.roles import AGENTS, LITELLM, SCRIPTED, USERS, RoleFactory, litellm_role
from dynsteer_hook.toolsandbox.scenario_view import public_view
from dynsteer_hook.toolsandbox.scenarios import TEST_SCENARIO_NAMES, load_scenarios
from dynsteer_hook.toolsandbox.scripted import ScriptedAgent, ScriptedUser, load_script
from dynsteer_hook.toolsandbox.summaries import IN_FLIGHT, NOT_STARTED, dynsteer_block, dynsteer_summary, result_summary

from tool_sandbox.common.execution_context import RoleType
from tool_sandbox.common.scenario import Scenario
from tool_sandbox.roles.base_role import BaseRole
from tool_sandbox.roles.execution_environment import ExecutionEnvironment

__all__ = ["EVENTS_FILE", "SUMMARY_FILE", "TEST_SCENARIO_NAMES", "RunOptions", "blueprint_path", "default_blueprint_dir",
           "load_scenarios", "output_directory_for", "run_scenario", "run_scenarios"]

EVENTS_FILE = "dynsteer_events.jsonl"
SUMMARY_FILE = "dynsteer_summary.json"
RESULT_SUMMARY = "result_summary.json"


@dataclass(frozen=True)
class RunOptions:
    """Everything a worker needs to play one scenario (picklable)."""

    agent: str
    user: str
    evaluator: str = "dynsteer"
    blueprint_dir: Path | None = None
    script: Path | None = None
    config: EvaluatorConfig = field(default_factory=EvaluatorConfig)
    judges: JudgeSettings = field(default_factory=JudgeSettings)
    write_events: bool = True
    agent_model: ModelSettings | None = None  # the model of the LiteLLM agent
    user_model: ModelSettings | None = None  # the model of the LiteLLM user
    allow_stale: bool = False  # play blueprints compiled from another version of the public view


def _build_roles(name: str, options: RunOptions) -> tuple[dict[RoleType, BaseRole], ScriptedAgent | None]:
    scripted_agent: ScriptedAgent | None = None
    script = load_script(options.script) if options.script else {}
    if SCRIPTED in (options.agent, options.user) and name not in script:
        raise ScenarioError(f"the script {options.script} has no entry for scenario {name!r}")
    if options.agent == SCRIPTED:
        scripted_agent = ScriptedAgent(script[name].agent)
        agent: BaseRole = scripted_agent
    elif options.agent == LITELLM:
        agent = litellm_role("agent", model_of("agent", options.agent_model))
    else:
        agent = AGENTS[options.agent].build()
    if options.user == SCRIPTED:
        user: BaseRole = ScriptedUser(script[name].user)
    elif options.user == LITELLM:
        user = litellm_role("user", model_of("user", options.user_model))
    else:
        user = USERS[options.user].build()
    return {RoleType.USER: user, RoleType.EXECUTION_ENVIRONMENT: ExecutionEnvironment(), RoleType.AGENT: agent}, scripted_agent


def _crash_result(name: str, scenario: Scenario, exc: BaseException) -> dict[str, Any]:
    return {
        "name": name,
        "categories": scenario.categories,
        "traceback": traceback.format_exc(),
        "exception_type": type(exc).__name__,
        "milestone_similarity": 0,
        "minefield_similarity": 0,
        "similarity": 0,
        "turn_count": scenario.max_messages,
        "milestone_mapping": {},
        "minefield_mapping": {},
    }


def _stopped_result(name: str, scenario: Scenario, *, how: str) -> dict[str, Any]:
    """A scenario Ctrl-C stopped (``in_flight``) or kept from starting (``not_started``)."""
    return {"name": name, "categories": scenario.categories, "traceback": None, "exception_type": None, "interrupted": how}


def crash_reason(result: dict[str, Any]) -> str | None:
    """The crash of a result in one line: the exception's last traceback line (None: no crash)."""
    if not result.get("exception_type"):
        return None
    last = (result.get("traceback") or "").strip().splitlines()[-1:]
    return last[0] if last else str(result["exception_type"])


def _open_log(path: Path) -> JsonlSink:
    """A log of the rollout; one that cannot be created (a full disk) is recorded as missing from record 0."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return JsonlSink(path)
    except OSError as exc:
        return JsonlSink.broken(path, reason(exc))


def _log_gap(sink: JsonlSink, name: str) -> IncompleteLog | None:
    return IncompleteLog(file=name, from_record=sink.records, reason=sink.error) if sink.error else None


def run_scenario(name_and_scenario: tuple[str, Scenario], *, options: RunOptions, output_directory: Path) -> dict[str, Any]:
    """Play and evaluate one scenario; never raises for a failing rollout, a full disk or Ctrl-C (each is recorded)."""
    name, scenario = name_and_scenario
    control = interrupts.current()
    if control.stopping():
        return _stopped_result(name, scenario, how=NOT_STARTED)
    output_directory.mkdir(parents=True, exist_ok=True)
    roles, scripted = _build_roles(name, options)
    if options.evaluator != "dynsteer":
        try:
            with control.armed():
                return _with_llm_spending(_play(name, scenario, roles, output_directory), roles)
        except KeyboardInterrupt:
            return _stopped_result(name, scenario, how=IN_FLIGHT)

    trajectory = output_directory / "trajectories" / name
    directory = options.blueprint_dir or default_blueprint_dir()
    bp = load_blueprint(blueprint_path(directory, name))
    prov = bp.provenance
    stale = bool(prov and prov.public_view_hash and prov.public_view_hash != public_view(name, scenario).digest())
    spent = [0.0]
    sink = _open_log(trajectory / AUDIT_LOG)
    log = EventLog(_open_log(trajectory / EVENTS_FILE)) if options.write_events else None
    try:
        judges = options.judges.build()
        evaluator = Evaluator(bp, options.config, sink=sink, judges=judges)
        if log is not None:
            log.meta(task=name, blueprint=str(blueprint_path(directory, name).name))

        def on_event(event: Event) -> None:
            start = time.perf_counter()
            control.hold()  # the evaluator's state is never left half-updated by Ctrl-C
            try:
                if log is not None:
                    log.write(event)
                evaluator.observe(event)
            except BaseException:
                control.release(deliver=False)
                raise
            finally:
                spent[0] += time.perf_counter() - start
            control.release()

        def on_turn(turn: int, seconds: float, tokens: int | None) -> None:
            if log is not None:  # what each agent turn cost, so a replay can say what a stop saves
                log.meta(batch_cost={"batch": turn, "seconds": round(seconds, 6), "tokens": tokens})

        session = RolloutSession(on_event, on_turn)
        guarded: dict[RoleType, BaseRole] = {rt: GuardedRole(role, session) for rt, role in roles.items()}
        start = time.perf_counter()
        try:
            with control.armed():
                result = _play(name, scenario, guarded, output_directory)
        except KeyboardInterrupt:
            result = _stopped_result(name, scenario, how=IN_FLIGHT)
        seconds = time.perf_counter() - start
        with control.held():
            report = evaluator.finish(crash=crash_reason(result), interrupted="interrupted" in result)
            gaps = tuple(g for g in (_log_gap(sink, AUDIT_LOG), log and _log_gap(log.sink, EVENTS_FILE)) if g)
            report = with_files(report, stale=stale, incomplete_logs=gaps)
            try:
                write_report(report, trajectory)
                write_text_atomic(trajectory / REPORT_HTML, render_run(report, bp))
                report_error = None
            except OSError as exc:
                report_error = f"{trajectory}: {reason(exc)}"
    finally:
        sink.close()
        if log is not None:
            log.close()
    remaining = None
    if scripted is not None and report.halted:
        remaining = max(0, len(scripted.steps) - scripted.turn) + 1  # plus the closing "done" message
    result["dynsteer"] = dynsteer_block(report, rows_seen=session.rows_seen, max_messages=scenario.max_messages,
                                        steps_not_played=remaining, seconds=seconds, evaluator_seconds=spent[0],
                                        report_error=report_error)
    cache = judge_cache_stats(judges)
    if cache is not None:
        result["dynsteer"]["judge_cache"] = cache
    return _with_llm_spending(result, roles)


def _with_llm_spending(result: dict[str, Any], roles: dict[RoleType, BaseRole]) -> dict[str, Any]:
    """Adds the LiteLLM agent's and user's calls, tokens and cost to a scenario's result."""
    for key, role in (("agent_llm", RoleType.AGENT), ("user_llm", RoleType.USER)):
        spent = getattr(roles[role], "spent", None)
        if callable(spent):
            result[key] = spent()
    return result


def _play(name: str, scenario: Scenario, roles: dict[RoleType, BaseRole], output_directory: Path) -> dict[str, Any]:
    try:
        result = scenario.play_and_evaluate(roles=roles, output_directory=output_directory, scenario_name=name)
        ev = result.evaluation_result
        return {
            "name": name,
            "categories": scenario.categories,
            "traceback": None,
            "exception_type": None,
            "milestone_similarity": ev.milestone_similarity,
            "minefield_similarity": ev.minefield_similarity,
            "similarity": ev.similarity,
            "turn_count": ev.turn_count,
            "milestone_mapping": ev.milestone_mapping,
            "minefield_mapping": ev.minefield_mapping,
        }
    except Exception as exc:  # a crashing rollout is a result, as in ToolSandbox
        return _crash_result(name, scenario, exc)
    finally:
        for role in roles.values():
            role.teardown()


def output_directory_for(base: Path, options: RunOptions) -> Path:
    """ToolSandbox's naming: agent_<model>_user_<model>_<timestamp>."""
    def name(chosen: str, table: dict[str, RoleFactory], model: ModelSettings | None) -> str:
        if chosen == SCRIPTED:
            return SCRIPTED
        if chosen == LITELLM:
            return model.model.replace("/", "_") if model and model.model else LITELLM
        return table[chosen].model_name(chosen)

    agent = name(options.agent, AGENTS, options.agent_model)
    user = name(options.user, USERS, options.user_model)
    return Path(base) / f"agent_{agent}_user_{user}_{timestamp()}"


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
    name_to_scenario: dict[str, Scenario], options: RunOptions, output_directory: Path, processes: int, *, checked: bool = False
) -> list[dict[str, Any]]:
    """Play scenarios (in ``spawn`` worker processes when ``processes`` > 1) and write the summaries.

    Every input is checked before the first rollout unless ``checked`` says the caller did.
    A result with ``interrupted`` means Ctrl-C stopped the run (the summaries say so).

    Raises:
        OutputError: A summary cannot be written (one sentence; the scenario files written stay).
    """
    if not checked:
        check_run(name_to_scenario, options)
    items = list(name_to_scenario.items())
    random.shuffle(items)  # load balancing, as ToolSandbox does
    worker = partial(run_scenario, options=options, output_directory=output_directory)
    create_dir(output_directory, "-o/--output_dir")
    results = play_all(worker, items, processes, stopped=partial(_stopped_result, how=IN_FLIGHT))
    try:
        write_json_atomic(output_directory / RESULT_SUMMARY, result_summary(results))
        if options.evaluator == "dynsteer":
            write_json_atomic(output_directory / SUMMARY_FILE, dynsteer_summary(results))
    except OSError as exc:
        raise OutputError(
            f"the run summaries cannot be written to {output_directory} ({reason(exc)}); the scenario files written there "
            "are kept; free some space and run again"
        ) from None
    return results


def dumps_result(result: dict[str, Any]) -> str:
    """JSON text of one result (categories are string enums)."""
    return json.dumps(result, default=str, ensure_ascii=False)
