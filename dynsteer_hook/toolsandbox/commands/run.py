"""``dynsteer run``, ``dynsteer demo`` and ``dynsteer scenarios``: ToolSandbox scenarios played with dynsteer live in the loop."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dynsteer_hook import stop_signals
from dynsteer_hook.model.errors import DynsteerError, OutputError

if TYPE_CHECKING:
    from dynsteer_hook.report.gates import Gates

EXIT_CRASHED = 1  # a scenario crashed: everything was written, but the run is not a result to trust
EXIT_INTERRUPTED = 130  # Ctrl-C; SIGTERM and SIGHUP give 143 and 129 (``stop_signals.exit_status``)
# Exit statuses, the first that applies: interrupted (130, 143, 129), 2 bad input or unwritten files, 1 crashed, 3 a gate failed.


def add_run_parser(sub: Any, *, flags: bool = True) -> None:
    """Declare ``dynsteer run``, with its flags unless ``flags`` is false."""
    run = sub.add_parser(
        "run",
        help="play ToolSandbox scenarios with dynsteer live in the loop (or --evaluator native)",
        description="Accepts ToolSandbox's run flags; --evaluator native behaves as ToolSandbox's own CLI.",
    )
    if not flags:
        return
    from dynsteer_hook.flags import add_config_flags, add_judge_flags, add_model_flags, add_otel_flags
    from dynsteer_hook.report.gates import add_gate_flags
    from dynsteer_hook.toolsandbox.commands.budgets import add_budget_flags
    from dynsteer_hook.toolsandbox.live.engines import add_engine_flags
    from dynsteer_hook.toolsandbox.roles.named import AGENT_CHOICES, AGENT_MODEL, LITELLM, USER_CHOICES, USER_MODEL

    run.add_argument("--agent", default="GPT_4_o_2024_05_13", choices=AGENT_CHOICES, help="agent type")
    run.add_argument("--user", default="GPT_4_o_2024_05_13", choices=USER_CHOICES, help="user type")
    run.add_argument("--preferred_tool_backend", default="DEFAULT", choices=["DEFAULT"], help="preferred tool backend")
    group = run.add_mutually_exclusive_group()
    group.add_argument("-t", "--test_mode", action="store_true", help="only run a few scenarios")
    group.add_argument("-s", "--scenarios", nargs="*", help="names of scenarios to run")
    run.add_argument("-p", "--parallel", type=int, default=16, help="max processes for running scenarios in parallel")
    run.add_argument("-o", "--output_dir", type=Path, default=None, help="output base directory (default data)")
    run.add_argument("--resume", type=Path, default=None, metavar="RUN_DIR",
                     help="continue a run in its own folder: scenarios whose files are whole are kept, those that crashed, were "
                          "interrupted or never started are played, and the summaries and run page cover them all; refused when a "
                          "flag that changes results differs from the run's (its dynsteer_run.json lists them)")
    run.add_argument("--evaluator", choices=["native", "dynsteer"], default="dynsteer")
    run.add_argument("--blueprints", type=Path, default=None, help="directory of blueprints named <scenario>.json")
    run.add_argument("--script", type=Path, default=None, metavar="FILE|NAME",
                     help="script file for the Scripted agent/user, or the name of a shipped one (clean_solver, looping_agent, ...)")
    run.add_argument("--no-events", action="store_true", help="do not write dynsteer_events.jsonl per scenario")
    run.add_argument("--max-parallel-calls", type=int, default=None, metavar="N",
                     help="calls one agent turn may make; later ones are refused as malformed (default 32, "
                          "env DYNSTEER_RUN_MAX_PARALLEL_CALLS)")
    run.add_argument("--rollout-deadline", type=float, default=None, metavar="SECONDS",
                     help="seconds a rollout may play before its conversation is ended, noted in the report "
                          "(default none, env DYNSTEER_RUN_ROLLOUT_DEADLINE)")
    run.add_argument("--similarity-budget", type=float, default=None, metavar="SECONDS",
                     help="seconds ToolSandbox's own similarity of one rollout may take, computed after dynsteer's report; past "
                          "it the similarity is recorded as unknown, with the reason (default 300, env DYNSTEER_RUN_SIMILARITY_BUDGET)")
    run.add_argument("--allow-stale-blueprints", action="store_true",
                     help="play blueprints compiled from another version of the scenario's public view (reported as stale)")
    add_model_flags(run, AGENT_MODEL, title=f"LiteLLM agent (--agent {LITELLM}: any model litellm reaches plays the agent)",
                    skip=("json_mode",))
    add_model_flags(run, USER_MODEL, title=f"LiteLLM user (--user {LITELLM}: any model litellm reaches simulates the user)",
                    skip=("json_mode",))
    add_engine_flags(run)
    add_config_flags(run)
    add_judge_flags(run)
    add_otel_flags(run)
    add_gate_flags(run)
    add_budget_flags(run)
    run.set_defaults(func=_cmd_run)



def add_demo_parser(sub: Any, *, flags: bool = True) -> None:
    """Declare ``dynsteer demo``, with its flags unless ``flags`` is false."""
    demo = sub.add_parser("demo", help="the embedded default: real scenarios, scripted agents, dynsteer live, no API key")
    if not flags:
        return
    demo.add_argument("-o", "--output_dir", type=Path, default=Path("dynsteer_runs"), help="output base directory")
    demo.add_argument("-p", "--parallel", type=int, default=1)
    demo.set_defaults(func=_cmd_demo)


def add_scenarios_parser(sub: Any, *, flags: bool = True) -> None:
    """Declare ``dynsteer scenarios``, with its flags unless ``flags`` is false."""
    sc = sub.add_parser("scenarios", help="list ToolSandbox scenario names")
    if not flags:
        return
    sc.add_argument("--preferred_tool_backend", default="DEFAULT", choices=["DEFAULT"])
    sc.set_defaults(func=_cmd_scenarios)


def _verdict(result: dict[str, Any], colour: bool = False) -> str:
    from dynsteer_hook.logs import paint
    from dynsteer_hook.report.run_summary import IN_FLIGHT
    from dynsteer_hook.toolsandbox.live.runner import crash_reason

    d = result.get("dynsteer") or {}
    if result.get("interrupted"):
        where = f" at k={d['k']}, t={d['t']}" if d else ""
        head = "interrupted" + (where if result["interrupted"] == IN_FLIGHT else " before it started")
    elif result.get("exception_type"):
        head = paint(f"crashed ({_short_reason(crash_reason(result) or '')})", "red", colour)
    elif d.get("halted"):
        s = d["stop"]
        head = paint(f"HALTED {s['reason']} at k={s['k']}, t={s['t']} (anchor {s['anchor']}, {s['dimension']})", "yellow", colour)
    else:
        outcome = d.get("outcome", "played")
        head = paint(outcome, "green" if outcome == "completed" else "bold", colour)
        head += f": settled {len(d.get('settled', []))}/{len(d.get('settled', [])) + len(d.get('unsettled', []))}"
    score = f"dynsteer {d['score']:.3f}, " if "score" in d else ""
    if result.get("similarity_unknown"):
        similarity = f"ToolSandbox similarity unknown ({result['similarity_unknown']})"
    elif isinstance(result.get("similarity"), (int, float)):
        similarity = f"ToolSandbox similarity {float(result['similarity']):.3f}"
    else:
        similarity = "not evaluated by ToolSandbox"
    notes = [note for flag, note in ((d.get("blueprint_stale"), "stale blueprint"), (d.get("incomplete_logs"), "logs incomplete"),
                                     (d and not d.get("report_written", True), "report not written")) if flag]
    return f"{head}; {score}{similarity}" + (f" [{', '.join(notes)}]" if notes else "")


def _finish(results: list[dict[str, Any]], out: Path, gates: Gates | None = None) -> int:
    """Print a verdict per scenario; an interrupted run, files that could not be written, crashed scenarios or a failed
    gate end in one sentence on stderr and a non-zero exit status (130, 2, 1, 3: the first that applies), once every
    file is written. A halt is a result."""
    from dynsteer_hook.llm.judges import cache_sentence
    from dynsteer_hook.logs import use_colour
    from dynsteer_hook.report.run_page import INDEX_HTML, console_table, run_rows, totals
    from dynsteer_hook.report.run_summary import IN_FLIGHT, NOT_STARTED, interruption
    from dynsteer_hook.toolsandbox.commands.gating import gated_status, row_measures, say_failed, verdicts
    from dynsteer_hook.toolsandbox.similarity import INTERRUPTED as SIMILARITY_INTERRUPTED

    colour = use_colour(sys.stdout)
    for r in sorted(results, key=lambda r: r["name"]):
        print(f"{r['name']}: {_verdict(r, colour)}")
    page = out / INDEX_HTML
    print(console_table(totals(run_rows(results)), page if page.is_file() else None))
    cached = [r["dynsteer"]["judge_cache"] for r in results if (r.get("dynsteer") or {}).get("judge_cache")]
    if cached:
        print(cache_sentence({k: sum(c[k] for c in cached) for k in ("hits", "misses", "corrupt", "unwritable")}))
    sys.stdout.flush()
    unknown = _similarity_sentence(results)
    stopped = interruption(results)
    if stopped is not None:
        print(f"dynsteer: interrupted{stop_signals.by_whom()}: {stopped['finished']} scenario(s) finished, {len(stopped[IN_FLIGHT])} "
              f"stopped while playing (reports marked interrupted), {len(stopped[NOT_STARTED])} not started; summaries in {out}",
              file=sys.stderr)
        return stop_signals.exit_status()
    if any(r.get("similarity_unknown") == SIMILARITY_INTERRUPTED for r in results):
        # Every scenario played to its end, but the interruption cut ToolSandbox's similarity of the last ones.
        print(f"dynsteer: interrupted{stop_signals.by_whom()}: every scenario finished; {unknown}; summaries in {out}", file=sys.stderr)
        return stop_signals.exit_status()
    if unknown:
        print(f"dynsteer: {unknown}", file=sys.stderr)
    judged = verdicts(gates, row_measures(run_rows(results))) if gates is not None else []
    # Files that could not be written (a report the evaluator never made is a crash, said in its verdict).
    faulty = [r["name"] for r in results if (r.get("dynsteer") or {}).get("incomplete_logs") or (r.get("dynsteer") or {}).get("report_error")]
    if faulty:
        first = next(r["dynsteer"] for r in results if r["name"] == faulty[0])
        why = first["report_error"] or first["incomplete_logs"][0]["reason"]
        say_failed(judged)
        raise OutputError(f"{len(faulty)} scenario(s) could not write all their files ({why}), e.g. {faulty[0]}; "
                          "their results and reports say what is missing; free some space and run them again")
    return gated_status(judged, _crash_status(results, out / "result_summary.json"))


def _similarity_sentence(results: list[dict[str, Any]]) -> str:
    """How many scenarios have no ToolSandbox similarity, and why (by reason), or "" when every one has it."""
    unknown = sorted((r for r in results if r.get("similarity_unknown")), key=lambda r: r["name"])
    if not unknown:
        return ""
    reasons = Counter(str(r["similarity_unknown"]) for r in unknown)
    why = "; ".join(f"{n} x {reason}" if len(reasons) > 1 else reason for reason, n in reasons.most_common(3))
    return (f"ToolSandbox's similarity of {len(unknown)} scenario(s) is unknown (e.g. {unknown[0]['name']}): {why}; "
            "their dynsteer reports and results are complete")


def _crash_status(results: list[dict[str, Any]], summary: Path, shown: int = 3) -> int:
    """0 when no scenario crashed; else one sentence on stderr (how many crashed, and why, by reason, and the ``summary``
    holding the tracebacks) and EXIT_CRASHED."""
    from dynsteer_hook.toolsandbox.live.progress import outcome_of
    from dynsteer_hook.toolsandbox.live.runner import crash_reason

    crashed = sorted((r for r in results if outcome_of(r) == "crashed"), key=lambda r: r["name"])
    if not crashed:
        return 0
    reasons = Counter(_short_reason(crash_reason(r) or (r.get("dynsteer") or {}).get("crash") or "unknown") for r in crashed)
    why = "; ".join(f"{n} x {reason}" if len(reasons) > 1 or n > 1 else reason for reason, n in reasons.most_common(shown))
    more = f"; and {len(reasons) - shown} other reason(s)" if len(reasons) > shown else ""
    print(f"dynsteer: {len(crashed)} of {len(results)} scenario(s) crashed (e.g. {crashed[0]['name']}): {why}{more}; "
          f"every file was written; the tracebacks are in {summary}", file=sys.stderr)
    return EXIT_CRASHED


def _short_reason(line: str, limit: int = 300) -> str:
    """A crash's last traceback line without the exception's module path (``LLMUnavailableError: ...``), clipped."""
    head, sep, rest = line.partition(": ")
    if sep and " " not in head and "." in head:
        line = head.rsplit(".", 1)[-1] + sep + rest
    line = " ".join(line.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _cmd_run(args: argparse.Namespace) -> int:
    from dynsteer_hook.data import script_argument
    from dynsteer_hook.files.outputs import check_output_dir, claim_new_dir
    from dynsteer_hook.flags import config_from_args, judges_from_args, otel_observers, otel_shutdown
    from dynsteer_hook.toolsandbox.commands.budgets import budget_limits, say_left
    from dynsteer_hook.toolsandbox.commands.gating import gates_of
    from dynsteer_hook.toolsandbox.live.engines import check_engine
    from dynsteer_hook.toolsandbox.live.preflight import check_blueprint_dir, check_script
    from dynsteer_hook.toolsandbox.live.progress import RunProgress
    from dynsteer_hook.toolsandbox.live.resume import SUPERSEDED, check_places, check_resumable, resume, run_manifest, write_manifest
    from dynsteer_hook.toolsandbox.live.runner import (
        TEST_SCENARIO_NAMES,
        RunOptions,
        check_run,
        load_scenarios,
        output_directory_for,
        run_scenarios,
    )
    from dynsteer_hook.toolsandbox.live.summaries import scenario_counts

    if args.parallel < 1:
        raise DynsteerError(f"-p/--parallel {args.parallel} must be at least 1")
    check_engine(args.engine, args.ray_address)
    if args.otel is not None and args.evaluator != "dynsteer":
        raise DynsteerError("--otel exports what dynsteer judged: drop --evaluator native, or drop --otel")
    gates = gates_of(args, args.evaluator)
    settings, config = judges_from_args(args, config_from_args(args))
    settings.build()  # a bad model string or a missing key stops the run before it starts
    agent_model, user_model = _role_model(args, "agent"), _role_model(args, "user")
    script = None if args.script is None else script_argument(args.script)
    options = RunOptions(
        agent=args.agent,
        user=args.user,
        evaluator=args.evaluator,
        blueprint_dir=args.blueprints,
        script=script,
        config=config,
        judges=settings,
        write_events=not args.no_events,
        agent_model=agent_model,
        user_model=user_model,
        allow_stale=args.allow_stale_blueprints,
        limits=budget_limits(args, _limits(args)),
        similarity=_similarity(args),
        observers=otel_observers(args, source="run", theta_pass=config.theta_pass, inputs=(args.blueprints, script)),
    )
    # What can be checked without ToolSandbox's scenarios is checked before they load (seconds).
    output_dir = _output_dir(args)
    check_output_dir(output_dir, "-o/--output_dir")
    check_script(options.agent, options.user, options.script)
    if options.evaluator == "dynsteer":
        check_blueprint_dir(options.blueprint_dir)
    if args.resume is not None:
        check_resumable(args.resume, run_manifest(options, None))  # the flags before seconds of loading the scenarios
    names = TEST_SCENARIO_NAMES if args.test_mode else args.scenarios
    scenarios = load_scenarios(names, args.preferred_tool_backend)
    checked = check_run(scenarios, options)
    manifest = run_manifest(options, scenarios)
    kept: list[dict[str, Any]] = []
    if args.resume is not None:
        out = args.resume
        check_resumable(out, manifest)
        check_places(out, scenarios)
        resumed = resume(out, scenarios, reports=options.write_reports)
        kept = resumed.kept
        scenarios = {name: scenarios[name] for name in resumed.to_play}
        print(f"Resuming '{out}': {len(kept)} scenario(s) kept, {len(scenarios)} to play"
              + (f" ({len(resumed.superseded)} unfinished one(s) moved to {out / SUPERSEDED})" if resumed.superseded else "") + ".")
    else:
        out = claim_new_dir(output_directory_for(output_dir, options), "-o/--output_dir")
        write_manifest(out, manifest)
        print(f"Storing outputs to '{out}'.")
    if checked.stale:
        print(f"warning: {len(checked.stale)} stale blueprint(s) played (--allow-stale-blueprints), compiled from another "
              f"version of the public view: {', '.join(sorted(checked.stale))}")
    if args.verbose:  # ToolSandbox's CLI prints these counts before every run; here they are asked for
        categories, tools = scenario_counts(scenarios)
        print("Number of test cases per category:", json.dumps(dict(categories.most_common()), indent=4, ensure_ascii=False),
              file=sys.stderr)
        print("Number of test cases per necessary tool name:", json.dumps(dict(tools.most_common()), indent=4, ensure_ascii=False),
              file=sys.stderr)
    try:
        with RunProgress(len(scenarios)) as progress:
            results = run_scenarios(scenarios, options, out, args.parallel, checked=True, engine=args.engine,
                                    ray_address=args.ray_address, progress=progress.finished, kept=kept,
                                    run_max_cost=args.run_max_cost)
        say_left(results, args.run_max_cost)
        return _finish(results, out, gates)
    finally:
        otel_shutdown(options.observers)  # once every file is written and the verdicts told: telemetry never holds them


def _output_dir(args: argparse.Namespace) -> Path:
    """``-o``, default ``data``; with ``--resume`` the run's own folder is the output, so ``-o`` may only name its parent."""
    if args.resume is None:
        return Path(args.output_dir) if args.output_dir is not None else Path("data")
    parent = Path(args.resume).absolute().parent
    if args.output_dir is not None and args.output_dir.absolute().resolve() != parent.resolve():
        raise DynsteerError(f"--resume {args.resume} writes in its own folder, which is not in -o/--output_dir {args.output_dir}; drop "
                            "-o or pass the folder holding the run")
    return parent


def _limits(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Any:
    """The rollout limits: the flags, else ``DYNSTEER_RUN_MAX_PARALLEL_CALLS`` and ``DYNSTEER_RUN_ROLLOUT_DEADLINE``."""
    import os

    from dynsteer_hook.toolsandbox.live.limits import MAX_PARALLEL_CALLS, RolloutLimits

    env = os.environ if environ is None else environ

    def pick(flag: Any, name: str, kind: type, default: Any) -> Any:
        if flag is not None:
            return flag
        raw = env.get(name, "")
        try:
            return kind(raw) if raw else default
        except ValueError:
            raise DynsteerError(f"{name}={raw!r} is not a number; fix or unset the variable") from None

    cap = pick(args.max_parallel_calls, "DYNSTEER_RUN_MAX_PARALLEL_CALLS", int, MAX_PARALLEL_CALLS)
    deadline = pick(args.rollout_deadline, "DYNSTEER_RUN_ROLLOUT_DEADLINE", float, None)
    if cap < 1:
        raise DynsteerError(f"--max-parallel-calls {cap} must be at least 1")
    if deadline is not None and not deadline > 0:
        raise DynsteerError(f"--rollout-deadline {deadline} must be a positive number of seconds")
    return RolloutLimits(max_parallel_calls=cap, deadline=deadline)


def _similarity(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Any:
    """How ToolSandbox's similarity runs: ``--similarity-budget``, else ``DYNSTEER_RUN_SIMILARITY_BUDGET``, else 300 s."""
    import math
    import os

    from dynsteer_hook.toolsandbox.similarity import DEFAULT_BUDGET, SimilarityOptions

    env = os.environ if environ is None else environ
    budget, origin = args.similarity_budget, "--similarity-budget"
    if budget is None:
        raw, origin = env.get("DYNSTEER_RUN_SIMILARITY_BUDGET", ""), "DYNSTEER_RUN_SIMILARITY_BUDGET"
        try:
            budget = float(raw) if raw.strip() else DEFAULT_BUDGET
        except ValueError:
            raise DynsteerError(f"{origin}={raw!r} is not a number; fix or unset the variable") from None
    if not (math.isfinite(budget) and budget > 0):
        raise DynsteerError(f"{origin} {budget} must be a positive number of seconds (default {DEFAULT_BUDGET:g})")
    return SimilarityOptions(budget=budget)


def _role_model(args: argparse.Namespace, role: Literal["agent", "user"]) -> Any:
    """The LiteLLM role's model settings (flags, then ``DYNSTEER_<ROLE>_*``), checked before any rollout (None for other roles)."""
    from dynsteer_hook.flags import model_from_args
    from dynsteer_hook.toolsandbox.roles.named import AGENT_MODEL, LITELLM, USER_MODEL

    chosen = getattr(args, role)
    if chosen != LITELLM:
        # Only flags are refused here: an environment variable is a default, not a request.
        if getattr(args, f"{role}_model") or getattr(args, f"{role}_api_base"):
            raise DynsteerError(f"--{role}-model and --{role}-api-base are for --{role} {LITELLM}; the {role} {chosen} has its own model")
        return None
    settings = model_from_args(args, AGENT_MODEL if role == "agent" else USER_MODEL)
    if not settings.model:
        raise DynsteerError(f"--{role} {LITELLM} needs --{role}-model, e.g. openai/gpt-4o-mini (add --{role}-api-base for a local server)")
    settings.client()  # a bad model string or a missing key stops the run before it starts
    return settings


def _cmd_demo(args: argparse.Namespace) -> int:
    from dynsteer_hook.data import shipped_scripts
    from dynsteer_hook.files.outputs import check_output_dir, claim_new_dir
    from dynsteer_hook.logs import use_colour
    from dynsteer_hook.report.run_summary import interruption
    from dynsteer_hook.toolsandbox.live.progress import RunProgress
    from dynsteer_hook.toolsandbox.live.runner import RunOptions, check_run, load_scenarios, run_scenarios, timestamp
    from dynsteer_hook.toolsandbox.roles.scripted import load_script

    check_output_dir(args.output_dir, "-o/--output_dir")
    plan = [(path, list(load_script(path))) for path in shipped_scripts().values()]
    names = sorted({n for _, ns in plan for n in ns})
    scenarios = load_scenarios(names)
    runs = [(path, {n: scenarios[n] for n in ns}, RunOptions(agent="Scripted", user="Scripted", evaluator="dynsteer", script=path))
            for path, ns in plan]
    for _, chosen, options in runs:
        check_run(chosen, options)
    # A folder of its own per demo, so a re-run (or a killed one) never mixes its files with another's.
    base = claim_new_dir(args.output_dir / f"demo_{timestamp()}", "-o/--output_dir")
    print(f"dynsteer demo: {len(names)} ToolSandbox scenarios, {len(plan)} scripted agents, evaluator dynsteer (Tier 1 rules); outputs in {base}")
    colour = use_colour(sys.stdout)
    played: list[dict[str, Any]] = []
    for path, chosen, options in runs:
        label = path.stem
        out = base / label
        sys.stdout.flush()
        with RunProgress(len(chosen), label=f"demo {label}") as progress:
            results = run_scenarios(chosen, options, out, args.parallel, checked=True, progress=progress.finished)
        played += results
        print(f"\n[{label}] reports under {out}/trajectories/<scenario>/dynsteer_report.md, summary {out}/dynsteer_summary.json")
        for r in sorted(results, key=lambda r: r["name"]):
            print(f"  {r['name']}: {_verdict(r, colour)}")
        stopped = interruption(results)
        if stopped is not None:
            print(f"dynsteer: interrupted{stop_signals.by_whom()} during the {label} agent; its summaries and every report written "
                  f"so far are in {out}", file=sys.stderr)
            return stop_signals.exit_status()
    sys.stdout.flush()
    return _crash_status(played, base / "<agent>" / "result_summary.json")


def _cmd_scenarios(args: argparse.Namespace) -> int:
    from dynsteer_hook.toolsandbox.live.runner import load_scenarios

    scenarios = load_scenarios(None, args.preferred_tool_backend)
    for name, sc in scenarios.items():
        print(json.dumps({"name": name, "categories": [str(c) for c in sc.categories]}))
    return 0
