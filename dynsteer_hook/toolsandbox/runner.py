"""Run ToolSandbox scenarios with the native evaluator or with dynsteer live in the loop.

``run_scenario`` lives at module level so that the ``spawn`` worker processes of a
parallel run import it and build their own roles, evaluator and session. Its result has
the keys of ToolSandbox's own per-scenario results, plus a ``dynsteer`` block.
"""

from __future__ import annotations

import datetime
import json
import multiprocessing
import random
import subprocess
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from dynsteer_hook.audit import Report
from dynsteer_hook.config import EvaluatorConfig
from dynsteer_hook.errors import BlueprintError, ScenarioError
from dynsteer_hook.evaluator import Evaluator
from dynsteer_hook.events import Event
from dynsteer_hook.judges.factory import JudgeSettings
from dynsteer_hook.storage import AUDIT_LOG, EventLog, JsonlSink, load_blueprint, write_json_atomic, write_report
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.adapter import GuardedRole, RolloutSession
from dynsteer_hook.toolsandbox.public_view import public_view
from dynsteer_hook.toolsandbox.roles import AGENTS, LITELLM, SCRIPTED, USERS, RoleFactory, RoleModelSettings
from dynsteer_hook.toolsandbox.scripted import ScriptedAgent, ScriptedUser, load_script
from dynsteer_hook.validation import validate_blueprint

from tool_sandbox.common.execution_context import RoleType, ScenarioCategories
from tool_sandbox.common.scenario import Scenario
from tool_sandbox.roles.base_role import BaseRole
from tool_sandbox.roles.execution_environment import ExecutionEnvironment

EVENTS_FILE = "dynsteer_events.jsonl"
SUMMARY_FILE = "dynsteer_summary.json"

# The scenarios ToolSandbox plays with --test_mode.
TEST_SCENARIO_NAMES = [
    "send_message_with_contact_content_cellular_off_multiple_user_turn",
    "send_message_with_contact_content_cellular_off_multiple_user_turn_10_distraction_tools",
    "send_message_with_contact_content_cellular_off_3_distraction_tools_arg_description_scrambled",
]

_AUGMENTED = {
    ScenarioCategories.TOOL_NAME_SCRAMBLED,
    ScenarioCategories.TOOL_DESCRIPTION_SCRAMBLED,
    ScenarioCategories.ARG_DESCRIPTION_SCRAMBLED,
    ScenarioCategories.ARG_TYPE_SCRAMBLED,
    ScenarioCategories.ARG_NAME_SCRAMBLED,
}


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
    agent_model: RoleModelSettings | None = None  # the model of the LiteLLM agent
    user_model: RoleModelSettings | None = None  # the model of the LiteLLM user


def _model_of(role: str, settings: RoleModelSettings | None) -> RoleModelSettings:
    if settings is None:
        raise ScenarioError(f"the LiteLLM {role} needs a model: pass --{role}-model (and --{role}-api-base for a local server)")
    return settings


def default_blueprint_dir() -> Path:
    """The repository's ``blueprints/toolsandbox`` folder."""
    return Path(__file__).resolve().parents[2] / "blueprints" / "toolsandbox"


def blueprint_path(directory: Path, name: str) -> Path:
    """Where the blueprint of scenario ``name`` lives."""
    return directory / f"{name}.json"


def _build_roles(name: str, options: RunOptions) -> tuple[dict[RoleType, BaseRole], ScriptedAgent | None]:
    scripted_agent: ScriptedAgent | None = None
    script = load_script(options.script) if options.script else {}
    if SCRIPTED in (options.agent, options.user) and name not in script:
        raise ScenarioError(f"the script {options.script} has no entry for scenario {name!r}")
    if options.agent == SCRIPTED:
        scripted_agent = ScriptedAgent(script[name].agent)
        agent: BaseRole = scripted_agent
    elif options.agent == LITELLM:
        agent = _model_of("agent", options.agent_model).build()
    else:
        agent = AGENTS[options.agent].build()
    if options.user == SCRIPTED:
        user: BaseRole = ScriptedUser(script[name].user)
    elif options.user == LITELLM:
        user = _model_of("user", options.user_model).build()
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


def _dynsteer_block(report: Report, session: RolloutSession, scripted: ScriptedAgent | None, scenario: Scenario,
                    seconds: float, evaluator_seconds: float, stale: bool) -> dict[str, Any]:
    tiers: Counter[str] = Counter()
    for st in report.stages:
        for use in st.tiers.values():
            tiers[str(use.used)] += 1
    remaining = None
    if scripted is not None and report.halted:
        remaining = max(0, len(scripted.steps) - scripted.turn) + 1  # plus the closing "done" message
    stop = report.stop
    return {
        "outcome": report.outcome,
        "halted": report.halted,
        "stop": None if stop is None else {
            "reason": stop.reason, "k": stop.k, "t": stop.t, "anchor": stop.anchor, "dimension": stop.dimension,
        },
        "score": report.score,
        "settled": report.settled,
        "unsettled": report.unsettled,
        "first_error": None if report.first_error is None else {"k": report.first_error.k, "t": report.first_error.t},
        "stage_dimensions_by_tier": dict(sorted(tiers.items())),
        "stages": len(report.stages),
        "k": report.k,
        "t": report.t,
        "rows_seen": session.rows_seen,
        "max_messages": scenario.max_messages,
        "scripted_steps_not_played": remaining,
        "rollout_seconds": round(seconds, 4),
        "evaluator_seconds": round(evaluator_seconds, 4),
        "blueprint": report.blueprint.get("sha256_16"),
        "blueprint_stale": stale,
    }


def run_scenario(name_and_scenario: tuple[str, Scenario], *, options: RunOptions, output_directory: Path) -> dict[str, Any]:
    """Play and evaluate one scenario; never raises for a failing rollout (it is recorded)."""
    name, scenario = name_and_scenario
    output_directory.mkdir(parents=True, exist_ok=True)
    roles, scripted = _build_roles(name, options)
    if options.evaluator != "dynsteer":
        return _with_llm_spending(_play(name, scenario, roles, output_directory), roles)

    trajectory = output_directory / "trajectories" / name
    trajectory.mkdir(parents=True, exist_ok=True)
    directory = options.blueprint_dir or default_blueprint_dir()
    bp = load_blueprint(blueprint_path(directory, name))
    prov = bp.provenance
    stale = bool(prov and prov.public_view_hash and prov.public_view_hash != public_view(name, scenario).digest())
    spent = [0.0]
    with JsonlSink(trajectory / AUDIT_LOG) as sink:
        evaluator = Evaluator(bp, options.config, sink=sink, judges=options.judges.build())
        log = EventLog(trajectory / EVENTS_FILE) if options.write_events else None
        if log is not None:
            log.meta(task=name, blueprint=str(blueprint_path(directory, name).name))

        def on_event(event: Event) -> None:
            start = time.perf_counter()
            try:
                if log is not None:
                    log.write(event)
                evaluator.observe(event)
            finally:
                spent[0] += time.perf_counter() - start

        def on_turn(turn: int, seconds: float, tokens: int | None) -> None:
            if log is not None:  # what each agent turn cost, so a replay can say what a stop saves
                log.meta(batch_cost={"batch": turn, "seconds": round(seconds, 6), "tokens": tokens})

        session = RolloutSession(on_event, on_turn)
        guarded: dict[RoleType, BaseRole] = {rt: GuardedRole(role, session) for rt, role in roles.items()}
        start = time.perf_counter()
        try:
            result = _play(name, scenario, guarded, output_directory)
        finally:
            seconds = time.perf_counter() - start
            report = evaluator.finish()
            write_report(report, trajectory)
            if log is not None:
                log.close()
    result["dynsteer"] = _dynsteer_block(report, session, scripted, scenario, seconds, spent[0], stale)
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


def scenario_counts(name_to_scenario: dict[str, Scenario]) -> tuple[Counter[str], Counter[str]]:
    """Scenarios per category and per necessary tool, as ToolSandbox's CLI prints them before a run.

    Necessary tools are the allow list of each undistracted scenario, counted once per tool
    augmentation present in the selection.
    """
    categories: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    augmentations: set[str] = set()
    tracked = _AUGMENTED | {
        ScenarioCategories.NO_DISTRACTION_TOOLS, ScenarioCategories.THREE_DISTRACTION_TOOLS,
        ScenarioCategories.TEN_DISTRACTION_TOOLS, ScenarioCategories.ALL_TOOLS_AVAILABLE,
    }
    for scenario in name_to_scenario.values():
        cats = set(scenario.categories)
        for cat in scenario.categories:
            if not (cat == ScenarioCategories.THREE_DISTRACTION_TOOLS and cats & _AUGMENTED):
                categories[str(cat)] += 1
        categories["ALL_CATEGORIES"] += 1
        if ScenarioCategories.NO_DISTRACTION_TOOLS in cats:
            tools.update(scenario.starting_context.tool_allow_list or [])
        augmentations |= {str(c) for c in cats & tracked}
    return categories, Counter({t: n * len(augmentations) for t, n in tools.items()})


def category_summary(results: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean similarity and turn count per scenario category (augmented variants are not
    counted again under THREE_DISTRACTION_TOOLS), and over all categories."""
    acc: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        cats = set(r["categories"])
        for cat in r["categories"]:
            if cat == ScenarioCategories.THREE_DISTRACTION_TOOLS and cats & _AUGMENTED:
                continue
            acc[str(cat)]["similarity"].append(r["similarity"])
            acc[str(cat)]["turn_count"].append(r["turn_count"])
        acc["ALL_CATEGORIES"]["similarity"].append(r["similarity"])
        acc["ALL_CATEGORIES"]["turn_count"].append(r["turn_count"])
    return {cat: {k: sum(v) / len(v) for k, v in vals.items()} for cat, vals in acc.items()}


def _git_sha() -> str | None:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--exit-code", "--quiet"], capture_output=True).returncode == 1
    except (OSError, subprocess.CalledProcessError):
        return None
    return sha + (" + local changes" if dirty else "")


def dynsteer_summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-run summary of the dynsteer evaluator over all scenarios."""
    blocks = [(r["name"], r, r.get("dynsteer")) for r in results]
    halts: Counter[str] = Counter()
    tiers: Counter[str] = Counter()
    outcome: Counter[str] = Counter()
    steps_saved = 0
    per: list[dict[str, Any]] = []
    for name, r, d in blocks:
        if d is None:
            continue
        outcome[d["outcome"]] += 1
        if d["halted"]:
            halts[d["stop"]["reason"]] += 1
            steps_saved += d["scripted_steps_not_played"] or 0
        for tier, n in d["stage_dimensions_by_tier"].items():
            tiers[tier] += n
        per.append({
            "name": name,
            "outcome": d["outcome"],
            "stop": d["stop"],
            "score": d["score"],
            "similarity": r["similarity"],
            "crashed": r["exception_type"] is not None,
            "k": d["k"],
            "t": d["t"],
        })
    judged = [p for p in per if not p["crashed"]]
    return {
        "scenarios": len(per),
        "crashed": sum(1 for p in per if p["crashed"]),
        "outcomes": dict(sorted(outcome.items())),
        "halted": sum(halts.values()),
        "halts_by_reason": dict(sorted(halts.items())),
        "stage_dimensions_by_tier": dict(sorted(tiers.items())),
        "mean_score": round(sum(p["score"] for p in judged) / len(judged), 6) if judged else None,
        "scripted_steps_not_played": steps_saved,
        "evaluator_seconds": round(sum(d["evaluator_seconds"] for _, _, d in blocks if d), 4),
        "rollout_seconds": round(sum(d["rollout_seconds"] for _, _, d in blocks if d), 4),
        "per_scenario": sorted(per, key=lambda p: p["name"]),
    }


def output_directory_for(base: Path, options: RunOptions) -> Path:
    """ToolSandbox's naming: agent_<model>_user_<model>_<timestamp>."""
    def name(chosen: str, table: dict[str, RoleFactory], model: RoleModelSettings | None) -> str:
        if chosen == SCRIPTED:
            return SCRIPTED
        if chosen == LITELLM:
            return model.model.replace("/", "_") if model else LITELLM
        return table[chosen].model_name(chosen)

    agent = name(options.agent, AGENTS, options.agent_model)
    user = name(options.user, USERS, options.user_model)
    stamp = datetime.datetime.now().strftime("%m_%d_%Y_%H_%M_%S")
    return Path(base) / f"agent_{agent}_user_{user}_{stamp}"


def check_inputs(names: list[str], options: RunOptions) -> None:
    """Fail before playing anything when a blueprint, a script entry or the agent's model is missing."""
    if options.agent == LITELLM:
        _model_of("agent", options.agent_model)
    if options.user == LITELLM:
        _model_of("user", options.user_model)
    if SCRIPTED in (options.agent, options.user):
        if options.script is None:
            raise ScenarioError("the Scripted role needs --script FILE (scenario name -> agent steps and user utterances)")
        script = load_script(options.script)
        missing = [n for n in names if n not in script]
        if missing:
            raise ScenarioError(f"the script {options.script} has no entry for {len(missing)} scenario(s), e.g. {missing[:3]}")
    if options.evaluator == "dynsteer":
        directory = options.blueprint_dir or default_blueprint_dir()
        missing = [n for n in names if not blueprint_path(directory, n).is_file()]
        if missing:
            raise ScenarioError(
                f"no blueprint for {len(missing)} scenario(s) in {directory}, e.g. {missing[:3]}; "
                "compile them (dynsteer compile) or pass --blueprints DIR"
            )
        for n in names:  # a malformed or invalid blueprint should stop the run before it starts
            path = blueprint_path(directory, n)
            violations = validate_blueprint(load_blueprint(path), None, n)
            if violations:
                raise BlueprintError(
                    f"blueprint file {path} is not valid ({violations[0].rule}: {violations[0].message}); "
                    f"fix it, or recompile it with dynsteer compile -s {n} --force --out {directory}"
                )


def run_scenarios(
    name_to_scenario: dict[str, Scenario], options: RunOptions, output_directory: Path, processes: int
) -> list[dict[str, Any]]:
    """Play scenarios (in ``spawn`` worker processes when ``processes`` > 1) and write summaries."""
    check_inputs(list(name_to_scenario), options)
    items = list(name_to_scenario.items())
    random.shuffle(items)  # load balancing, as ToolSandbox does
    worker = partial(run_scenario, options=options, output_directory=output_directory)
    output_directory.mkdir(parents=True, exist_ok=True)
    if processes > 1 and len(items) > 1:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(min(processes, len(items))) as pool:
            results = pool.map(worker, items)
    else:
        results = [worker(item) for item in items]
    summary = {
        "per_scenario_results": results,
        "category_aggregated_results": category_summary(results),
        "git_sha": _git_sha(),
    }
    write_json_atomic(output_directory / "result_summary.json", summary)
    if options.evaluator == "dynsteer":
        write_json_atomic(output_directory / SUMMARY_FILE, dynsteer_summary(results))
    return results


_LOADED: dict[str, tuple[dict[str, Scenario], object]] = {}


def load_scenarios(names: list[str] | None, preferred_tool_backend: str = "DEFAULT") -> dict[str, Scenario]:
    """ToolSandbox's named scenarios (seeded as its CLI does), optionally filtered by name.

    Built once per process and backend; later calls restore the random state ToolSandbox's
    CLI would have after building them, so the run order matches its own.
    """
    if preferred_tool_backend not in _LOADED:
        from tool_sandbox.scenarios import named_scenarios

        random.seed(42)
        everything = named_scenarios(preferred_tool_backend=preferred_tool_backend)
        _LOADED[preferred_tool_backend] = (everything, random.getstate())
    everything, state = _LOADED[preferred_tool_backend]
    random.setstate(state)  # type: ignore[arg-type]
    if names is None:
        return dict(everything)
    unknown = sorted(set(names) - set(everything))
    if unknown:
        raise ScenarioError(f"unknown scenario name(s) {unknown[:5]}; list them with 'dynsteer scenarios'")
    return {n: everything[n] for n in names}


def dumps_result(result: dict[str, Any]) -> str:
    """JSON text of one result (categories are string enums)."""
    return json.dumps(result, default=str, ensure_ascii=False)
