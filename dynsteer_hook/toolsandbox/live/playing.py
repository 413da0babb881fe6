"""Playing one ToolSandbox scenario, with the native evaluator or with dynsteer live in the loop.

``run_scenario`` lives at module level so that the ``spawn`` worker processes of a parallel
run import it and build their own roles, hook and session. It returns the scenario's entry
of ``per_scenario_results`` (a ``ScenarioResult``'s record): ToolSandbox's keys plus a
``dynsteer`` block. With dynsteer live, the roles reach the ``hook.LiveHook`` through the
``adapter``: the hook judges every event, then finishes and writes the report. ToolSandbox's
own similarity comes after that report (``toolsandbox.similarity``: once per snapshot, within
``--similarity-budget``), and the report's files are then written again with it.

Faults never cost what is already known: a log that cannot be written (a full disk) stops
growing while the evaluator goes on in memory and the report names the first missing
record; a report that cannot be written is noted in the result; Ctrl-C ends an in-flight
rollout as ``interrupted`` (report written, both files or neither) and starts nothing new
(see ``interrupts``). A rollout that raises, whatever raised, is a crashed result with its
traceback, and its report says ``crashed`` with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dynsteer_hook.files.blueprints import load_blueprint
from dynsteer_hook.files.outputs import open_log
from dynsteer_hook.llm.judges import JudgeSettings, judge_cache_stats
from dynsteer_hook.llm.settings import ModelSettings
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.errors import ScenarioError
from dynsteer_hook.model.records import NativeSimilarity
from dynsteer_hook.report.run_summary import IN_FLIGHT, NOT_STARTED, DynsteerBlock
from dynsteer_hook.report.writer import AUDIT_LOG
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.live import interrupts
from dynsteer_hook.toolsandbox.live.adapter import GuardedRole, RolloutSession
from dynsteer_hook.toolsandbox.live.hook import EVENTS_FILE, EventFileHook, LiveHook, RolloutEnd, RolloutHook, RolloutStart
from dynsteer_hook.toolsandbox.live.interrupts import InterruptControl
from dynsteer_hook.toolsandbox.live.limits import LimitTracker, RolloutLimits
from dynsteer_hook.toolsandbox.live.preflight import blueprint_path, default_blueprint_dir, model_of
from dynsteer_hook.toolsandbox.live.results import ScenarioResult
from dynsteer_hook.toolsandbox.roles.named import AGENTS, LITELLM, SCRIPTED, USERS, litellm_role
from dynsteer_hook.toolsandbox.roles.repair import TextRepairs, guard_text
from dynsteer_hook.toolsandbox.roles.scripted import ScriptedAgent, ScriptedUser, load_script
from dynsteer_hook.toolsandbox.scenario_view import public_view
from dynsteer_hook.toolsandbox.similarity import BEING_COMPUTED, DEFAULTS, SimilarityOptions, SimilarityUnknown, evaluating

from tool_sandbox.common.execution_context import RoleType
from tool_sandbox.common.scenario import Scenario
from tool_sandbox.roles.base_role import BaseRole
from tool_sandbox.roles.execution_environment import ExecutionEnvironment

__all__ = ["EVENTS_FILE", "RunOptions", "play_scenario", "run_scenario"]


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
    observers: tuple[RolloutHook, ...] = ()  # further hooks of every rollout (picklable: spawn workers get copies)
    write_reports: bool = True  # internal: false writes no report files and no run page (to measure what writing them costs)
    limits: RolloutLimits = field(default_factory=RolloutLimits)  # parallel calls per turn, rollout deadline
    similarity: SimilarityOptions = field(default_factory=SimilarityOptions)  # ToolSandbox's evaluation: its budget, its cache


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


_PASS_THROUGH = (KeyboardInterrupt, SystemExit, GeneratorExit)
"""What a failing rollout may raise past its scenario; anything else (an extension's panic too, which is no
``Exception``) is the scenario's crash."""


def run_scenario(name_and_scenario: tuple[str, Scenario], *, options: RunOptions, output_directory: Path) -> dict[str, Any]:
    """Play and evaluate one scenario; its entry of ``per_scenario_results`` (see ``play_scenario``).

    Whatever fails inside is this scenario's ``crashed`` result, so a worker of a pool always returns and never
    dies with its job (which would leave the pool waiting for a result forever).
    """
    try:
        return play_scenario(name_and_scenario, options=options, output_directory=output_directory).record()
    except _PASS_THROUGH:
        raise
    except BaseException as exc:
        name, scenario = name_and_scenario
        return ScenarioResult.crashed(name, scenario.categories, exc, scenario.max_messages).record()


class PlannedAgent(Protocol):
    """An agent that plays a known list of steps (scripted or recorded): a halt can say how many it kept from playing."""

    @property
    def steps(self) -> Sequence[Any]: ...

    @property
    def turn(self) -> int: ...


def play_scenario(name_and_scenario: tuple[str, Scenario], *, options: RunOptions, output_directory: Path,
                  roles: tuple[dict[RoleType, BaseRole], PlannedAgent | None] | None = None,
                  scenario_name: str | None = None) -> ScenarioResult:
    """Play and evaluate one scenario; never raises for a failing rollout, a full disk or Ctrl-C (each is recorded).

    ``roles`` (the roles, and the agent when it plays known steps) replaces the roles ``options`` names;
    ``scenario_name`` is the scenario's own name when ``name`` (the rollout's folder and result) is another.
    """
    name, scenario = name_and_scenario
    control = interrupts.current()
    if control.stopping():
        return ScenarioResult.stopped(name, scenario.categories, NOT_STARTED)
    output_directory.mkdir(parents=True, exist_ok=True)
    repairs = TextRepairs()
    played_roles, scripted = roles if roles is not None else _build_roles(name, options)
    played_roles = {rt: guard_text(role, repairs) for rt, role in played_roles.items()}  # text no encoder accepts never reaches the tables
    if options.evaluator != "dynsteer":
        try:
            with control.armed():
                return _with_llm_spending(_play(name, scenario, played_roles, output_directory, options.similarity, control), played_roles)
        except KeyboardInterrupt:
            return ScenarioResult.stopped(name, scenario.categories, IN_FLIGHT)
    return _play_live(name, scenario, played_roles, scripted, options, output_directory, control, repairs, scenario_name or name)


def _play_live(name: str, scenario: Scenario, roles: dict[RoleType, BaseRole], scripted: PlannedAgent | None, options: RunOptions,
               output_directory: Path, control: InterruptControl, repairs: TextRepairs, scenario_name: str) -> ScenarioResult:
    """dynsteer live in the loop: the roles hand their rows to the hook, which judges them and writes the report."""
    trajectory = output_directory / "trajectories" / name
    path = blueprint_path(options.blueprint_dir or default_blueprint_dir(), scenario_name)
    bp = load_blueprint(path)
    prov = bp.provenance
    stale = bool(prov and prov.public_view_hash and prov.public_view_hash != public_view(scenario_name, scenario).digest())
    sink = open_log(trajectory / AUDIT_LOG)
    observers: list[RolloutHook] = [EventFileHook(trajectory / EVENTS_FILE)] if options.write_events else []
    observers += options.observers
    try:
        judges = options.judges.build()
        evaluator = Evaluator(bp, options.config, sink=sink, judges=judges, stop_rules=options.limits.stop_rules())
        evaluator.set_wall_clock(time.time(), float(time.localtime().tm_gmtoff))  # ToolSandbox's tools read local time
    except Exception as exc:  # nothing was played: the scenario is a crash with the evaluator's error
        LiveHook.close_logs(sink, observers)
        for role in roles.values():
            role.teardown()
        return _evaluator_failed(name, scenario, exc, roles, stale=stale, rows_seen=0, seconds=0.0, spent=0.0)
    with LiveHook(evaluator, sink, blueprint=bp, trajectory=trajectory, control=control, observers=observers, stale=stale,
                  write_report=options.write_reports) as hook:
        agent_model = options.agent_model.model if options.agent_model is not None else None
        hook.on_rollout_start(RolloutStart(name, options.agent, agent_model, options.user, path.name, stale, scenario.max_messages))
        session = RolloutSession(hook, name, LimitTracker(options.limits))
        start = time.perf_counter()
        ended = _Ending(hook, name, start, lambda: tuple(n for n in (repairs.note(), *session.limits.notes()) if n))
        try:
            with control.armed():
                result = _play(name, scenario, {rt: GuardedRole(role, session) for rt, role in roles.items()}, output_directory,
                               options.similarity, control, before=ended.played)
        except KeyboardInterrupt:
            result = ScenarioResult.stopped(name, scenario.categories, IN_FLIGHT)
        seconds = ended.seconds if ended.seconds is not None else time.perf_counter() - start
        try:
            if ended.failure is not None:
                raise ended.failure
            if hook.ended is None:  # the rollout crashed or was interrupted: ToolSandbox never came to its evaluation
                hook.on_rollout_end(RolloutEnd(name, seconds, result.crash_reason(), result.interrupted is not None,
                                               native=result.native(), notes=ended.notes()))
            else:
                hook.set_native(result.native())
        except Exception as exc:  # a report that cannot be built makes the scenario a crash, not the run
            return _evaluator_failed(name, scenario, exc, roles, stale=stale, rows_seen=session.rows_seen, seconds=seconds,
                                     spent=hook.evaluator_seconds)
    end = hook.ended
    assert end is not None and end.report is not None
    remaining = None
    if scripted is not None and end.report.halted:
        remaining = max(0, len(scripted.steps) - scripted.turn) + 1  # plus the closing "done" message
    result.dynsteer = DynsteerBlock.of(end.report, rows_seen=session.rows_seen, max_messages=scenario.max_messages,
                                       steps_not_played=remaining, seconds=seconds, evaluator_seconds=end.evaluator_seconds,
                                       report_error=end.report_error)
    cache = judge_cache_stats(judges)
    if cache is not None:
        result.dynsteer = result.dynsteer.model_copy(update={"judge_cache": cache})
    return _with_llm_spending(result, roles)


class _Ending:
    """Ends a played rollout in the hook when ToolSandbox comes to its evaluation (``played``): dynsteer's report is
    finished and written before ToolSandbox's similarity is computed, which may take up to its budget."""

    def __init__(self, hook: LiveHook, name: str, start: float, notes: Callable[[], tuple[str, ...]]) -> None:
        self.hook = hook
        self.name = name
        self.start = start
        self.notes = notes
        self.seconds: float | None = None  # how long the rollout played, ToolSandbox's evaluation left out
        self.failure: Exception | None = None  # why the report could not be built (the scenario is then a crash)

    def played(self) -> None:
        self.seconds = time.perf_counter() - self.start
        try:
            self.hook.on_rollout_end(RolloutEnd(self.name, self.seconds, native=NativeSimilarity(similarity=None, unknown=BEING_COMPUTED),
                                                notes=self.notes()))
        except Exception as exc:  # told after the evaluation, as a report that cannot be built always was
            self.failure = exc


def _evaluator_failed(name: str, scenario: Scenario, exc: Exception, roles: dict[RoleType, BaseRole], *, stale: bool,
                      rows_seen: int, seconds: float, spent: float) -> ScenarioResult:
    """A scenario whose evaluator could not be built or could not finish: a crash with the evaluator's error and its
    traceback, and a ``crashed`` dynsteer block without a report."""
    result = ScenarioResult.crashed(name, scenario.categories, exc, scenario.max_messages)
    result.dynsteer = DynsteerBlock.failed(result.crash_reason() or type(exc).__name__, stale=stale, rows_seen=rows_seen,
                                           max_messages=scenario.max_messages, seconds=seconds, evaluator_seconds=spent)
    return _with_llm_spending(result, roles)


def _with_llm_spending(result: ScenarioResult, roles: dict[RoleType, BaseRole]) -> ScenarioResult:
    """Adds the LiteLLM agent's and user's calls, tokens and cost to a scenario's result."""
    for key, role in (("agent_llm", RoleType.AGENT), ("user_llm", RoleType.USER)):
        spent = getattr(roles[role], "spent", None)
        if callable(spent):
            setattr(result, key, spent())
    return result


def _play(name: str, scenario: Scenario, roles: dict[RoleType, BaseRole], output_directory: Path,
          similarity: SimilarityOptions = DEFAULTS, control: InterruptControl | None = None,
          before: Callable[[], None] | None = None) -> ScenarioResult:
    """Play ``scenario`` and evaluate it as ToolSandbox does, ``before()`` coming first (``toolsandbox.similarity``)."""
    try:
        played = evaluating(scenario, similarity, control, before).play_and_evaluate(roles=roles, output_directory=output_directory,
                                                                                     scenario_name=name)
        return ScenarioResult.evaluated(name, scenario.categories, played.evaluation_result)
    except SimilarityUnknown as unknown:  # the rollout played to its end; its similarity is unknown, and why
        return ScenarioResult.unevaluated(name, scenario.categories, unknown.reason, unknown.turn_count)
    except _PASS_THROUGH:
        raise
    except BaseException as exc:  # a crashing rollout is a result, as in ToolSandbox (a Rust panic included)
        return ScenarioResult.crashed(name, scenario.categories, exc, scenario.max_messages)
    finally:
        for role in roles.values():
            role.teardown()
