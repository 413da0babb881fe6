"""``dynsteer run``, ``dynsteer demo`` and ``dynsteer scenarios``: ToolSandbox scenarios played with dynsteer live in the loop."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Literal

from dynsteer_hook.model.errors import DynsteerError, OutputError

EXIT_INTERRUPTED = 130


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
    from dynsteer_hook.toolsandbox.live.engines import add_engine_flags
    from dynsteer_hook.toolsandbox.roles.named import AGENT_CHOICES, AGENT_MODEL, LITELLM, USER_CHOICES, USER_MODEL

    run.add_argument("--agent", default="GPT_4_o_2024_05_13", choices=AGENT_CHOICES, help="agent type")
    run.add_argument("--user", default="GPT_4_o_2024_05_13", choices=USER_CHOICES, help="user type")
    run.add_argument("--preferred_tool_backend", default="DEFAULT", choices=["DEFAULT"], help="preferred tool backend")
    group = run.add_mutually_exclusive_group()
    group.add_argument("-t", "--test_mode", action="store_true", help="only run a few scenarios")
    group.add_argument("-s", "--scenarios", nargs="*", help="names of scenarios to run")
    run.add_argument("-p", "--parallel", type=int, default=16, help="max processes for running scenarios in parallel")
    run.add_argument("-o", "--output_dir", type=Path, default=Path("data"), help="output base directory")
    run.add_argument("--evaluator", choices=["native", "dynsteer"], default="dynsteer")
    run.add_argument("--blueprints", type=Path, default=None, help="directory of blueprints named <scenario>.json")
    run.add_argument("--script", type=Path, default=None, help="script file for the Scripted agent/user")
    run.add_argument("--no-events", action="store_true", help="do not write dynsteer_events.jsonl per scenario")
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


def _verdict(result: dict[str, Any]) -> str:
    from dynsteer_hook.report.run_summary import IN_FLIGHT
    from dynsteer_hook.toolsandbox.live.runner import crash_reason

    d = result.get("dynsteer") or {}
    if result.get("interrupted"):
        where = f" at k={d['k']}, t={d['t']}" if d else ""
        head = "interrupted" + (where if result["interrupted"] == IN_FLIGHT else " before it started")
    elif result.get("exception_type"):
        head = f"crashed ({crash_reason(result)})"
    elif d.get("halted"):
        s = d["stop"]
        head = f"HALTED {s['reason']} at k={s['k']}, t={s['t']} (anchor {s['anchor']}, {s['dimension']})"
    else:
        head = f"{d.get('outcome', 'played')}: settled {len(d.get('settled', []))}/{len(d.get('settled', [])) + len(d.get('unsettled', []))}"
    score = f"dynsteer {d['score']:.3f}, " if "score" in d else ""
    similarity = f"ToolSandbox similarity {float(result['similarity']):.3f}" if "similarity" in result else "not evaluated by ToolSandbox"
    notes = [note for flag, note in ((d.get("blueprint_stale"), "stale blueprint"), (d.get("incomplete_logs"), "logs incomplete"),
                                     (d and not d.get("report_written", True), "report not written")) if flag]
    return f"{head}; {score}{similarity}" + (f" [{', '.join(notes)}]" if notes else "")


def _finish(results: list[dict[str, Any]], out: Path) -> int:
    """Print a verdict per scenario; an interrupted or faulty run ends in one sentence on stderr."""
    from dynsteer_hook.llm.judges import cache_sentence
    from dynsteer_hook.report.run_summary import IN_FLIGHT, NOT_STARTED, interruption

    for r in sorted(results, key=lambda r: r["name"]):
        print(f"{r['name']}: {_verdict(r)}")
    cached = [r["dynsteer"]["judge_cache"] for r in results if (r.get("dynsteer") or {}).get("judge_cache")]
    if cached:
        print(cache_sentence({k: sum(c[k] for c in cached) for k in ("hits", "misses", "corrupt", "unwritable")}))
    sys.stdout.flush()
    stopped = interruption(results)
    if stopped is not None:
        print(f"dynsteer: interrupted: {stopped['finished']} scenario(s) finished, {len(stopped[IN_FLIGHT])} stopped while playing "
              f"(reports marked interrupted), {len(stopped[NOT_STARTED])} not started; summaries in {out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    # Files that could not be written (a report the evaluator never made is a crash, said in its verdict).
    faulty = [r["name"] for r in results if (r.get("dynsteer") or {}).get("incomplete_logs") or (r.get("dynsteer") or {}).get("report_error")]
    if faulty:
        first = next(r["dynsteer"] for r in results if r["name"] == faulty[0])
        why = first["report_error"] or first["incomplete_logs"][0]["reason"]
        raise OutputError(f"{len(faulty)} scenario(s) could not write all their files ({why}), e.g. {faulty[0]}; "
                          "their results and reports say what is missing; free some space and run them again")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from dynsteer_hook.files.outputs import check_output_dir, claim_new_dir
    from dynsteer_hook.flags import config_from_args, judges_from_args, otel_observers, otel_shutdown
    from dynsteer_hook.toolsandbox.live.engines import check_engine
    from dynsteer_hook.toolsandbox.live.preflight import check_blueprint_dir, check_script
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
    settings, config = judges_from_args(args, config_from_args(args))
    settings.build()  # a bad model string or a missing key stops the run before it starts
    agent_model, user_model = _role_model(args, "agent"), _role_model(args, "user")
    options = RunOptions(
        agent=args.agent,
        user=args.user,
        evaluator=args.evaluator,
        blueprint_dir=args.blueprints,
        script=args.script,
        config=config,
        judges=settings,
        write_events=not args.no_events,
        agent_model=agent_model,
        user_model=user_model,
        allow_stale=args.allow_stale_blueprints,
        observers=otel_observers(args, source="run", theta_pass=config.theta_pass),
    )
    # What can be checked without ToolSandbox's scenarios is checked before they load (seconds).
    check_output_dir(args.output_dir, "-o/--output_dir")
    check_script(options.agent, options.user, options.script)
    if options.evaluator == "dynsteer":
        check_blueprint_dir(options.blueprint_dir)
    names = TEST_SCENARIO_NAMES if args.test_mode else args.scenarios
    scenarios = load_scenarios(names, args.preferred_tool_backend)
    checked = check_run(scenarios, options)
    out = claim_new_dir(output_directory_for(args.output_dir, options), "-o/--output_dir")
    print(f"Storing outputs to '{out}'.")
    if checked.stale:
        print(f"warning: {len(checked.stale)} stale blueprint(s) played (--allow-stale-blueprints), compiled from another "
              f"version of the public view: {', '.join(sorted(checked.stale))}")
    categories, tools = scenario_counts(scenarios)
    print("Number of test cases per category:", json.dumps(dict(categories.most_common()), indent=4, ensure_ascii=False))
    print("Number of test cases per necessary tool name:", json.dumps(dict(tools.most_common()), indent=4, ensure_ascii=False))
    try:
        results = run_scenarios(scenarios, options, out, args.parallel, checked=True, engine=args.engine, ray_address=args.ray_address)
    finally:
        otel_shutdown(options.observers)
    return _finish(results, out)


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
    from importlib.resources import files

    from dynsteer_hook.files.outputs import check_output_dir, claim_new_dir
    from dynsteer_hook.report.run_summary import interruption
    from dynsteer_hook.toolsandbox.live.runner import RunOptions, check_run, load_scenarios, run_scenarios, timestamp
    from dynsteer_hook.toolsandbox.roles.scripted import load_script

    check_output_dir(args.output_dir, "-o/--output_dir")
    scripts = sorted((p for p in files("dynsteer_hook.data").joinpath("scripts").iterdir() if p.name.endswith(".json")), key=lambda p: p.name)
    plan = [(Path(str(p)), list(load_script(Path(str(p))))) for p in scripts]
    names = sorted({n for _, ns in plan for n in ns})
    scenarios = load_scenarios(names)
    runs = [(path, {n: scenarios[n] for n in ns}, RunOptions(agent="Scripted", user="Scripted", evaluator="dynsteer", script=path))
            for path, ns in plan]
    for _, chosen, options in runs:
        check_run(chosen, options)
    # A folder of its own per demo, so a re-run (or a killed one) never mixes its files with another's.
    base = claim_new_dir(args.output_dir / f"demo_{timestamp()}", "-o/--output_dir")
    print(f"dynsteer demo: {len(names)} ToolSandbox scenarios, {len(plan)} scripted agents, evaluator dynsteer (Tier 1 rules); outputs in {base}")
    for path, chosen, options in runs:
        label = path.stem
        out = base / label
        results = run_scenarios(chosen, options, out, args.parallel, checked=True)
        print(f"\n[{label}] reports under {out}/trajectories/<scenario>/dynsteer_report.md, summary {out}/dynsteer_summary.json")
        for r in sorted(results, key=lambda r: r["name"]):
            print(f"  {r['name']}: {_verdict(r)}")
        stopped = interruption(results)
        if stopped is not None:
            print(f"dynsteer: interrupted during the {label} agent; its summaries and every report written so far are in {out}",
                  file=sys.stderr)
            return EXIT_INTERRUPTED
    return 0


def _cmd_scenarios(args: argparse.Namespace) -> int:
    from dynsteer_hook.toolsandbox.live.runner import load_scenarios

    scenarios = load_scenarios(None, args.preferred_tool_backend)
    for name, sc in scenarios.items():
        print(json.dumps({"name": name, "categories": [str(c) for c in sc.categories]}))
    return 0
