"""``dynsteer run``, ``dynsteer demo`` and ``dynsteer scenarios``: the ToolSandbox side of the CLI."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dynsteer_hook.errors import DynsteerError


def add_run_parser(sub: Any) -> None:
    """Register the ToolSandbox subcommands on the main parser."""
    from dynsteer_hook.cli import add_config_flags
    from dynsteer_hook.toolsandbox.roles import AGENT_CHOICES, USER_CHOICES

    run = sub.add_parser(
        "run",
        help="play ToolSandbox scenarios with dynsteer live in the loop (or --evaluator native)",
        description="Accepts ToolSandbox's run flags; --evaluator native behaves as ToolSandbox's own CLI.",
    )
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
    add_config_flags(run)
    run.set_defaults(func=_cmd_run)

    demo = sub.add_parser("demo", help="the embedded default: real scenarios, scripted agents, dynsteer live, no API key")
    demo.add_argument("-o", "--output_dir", type=Path, default=Path("dynsteer_runs"), help="output base directory")
    demo.add_argument("-p", "--parallel", type=int, default=1)
    demo.set_defaults(func=_cmd_demo)

    sc = sub.add_parser("scenarios", help="list ToolSandbox scenario names")
    sc.add_argument("--preferred_tool_backend", default="DEFAULT", choices=["DEFAULT"])
    sc.set_defaults(func=_cmd_scenarios)


def _verdict(result: dict[str, Any]) -> str:
    d = result.get("dynsteer") or {}
    if result.get("exception_type"):
        head = f"crashed ({result['exception_type']})"
    elif d.get("halted"):
        s = d["stop"]
        head = f"HALTED {s['reason']} at k={s['k']}, t={s['t']} (anchor {s['anchor']}, {s['dimension']})"
    else:
        head = f"{d.get('outcome', 'played')}: settled {len(d.get('settled', []))}/{len(d.get('settled', [])) + len(d.get('unsettled', []))}"
    score = f"dynsteer {d['score']:.3f}, " if "score" in d else ""
    return f"{head}; {score}ToolSandbox similarity {float(result['similarity']):.3f}"


def _cmd_run(args: argparse.Namespace) -> int:
    from dynsteer_hook.cli import config_from_args
    from dynsteer_hook.toolsandbox.runner import (
        TEST_SCENARIO_NAMES,
        RunOptions,
        load_scenarios,
        output_directory_for,
        run_scenarios,
    )

    if args.parallel < 1:
        raise DynsteerError(f"-p/--parallel {args.parallel} must be at least 1")
    options = RunOptions(
        agent=args.agent,
        user=args.user,
        evaluator=args.evaluator,
        blueprint_dir=args.blueprints,
        script=args.script,
        config=config_from_args(args),
        write_events=not args.no_events,
    )
    names = TEST_SCENARIO_NAMES if args.test_mode else args.scenarios
    scenarios = load_scenarios(names, args.preferred_tool_backend)
    out = output_directory_for(args.output_dir, options)
    print(f"Storing outputs to '{out}'.")
    results = run_scenarios(scenarios, options, out, args.parallel)
    for r in sorted(results, key=lambda r: r["name"]):
        print(f"{r['name']}: {_verdict(r)}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from importlib.resources import files

    from dynsteer_hook.toolsandbox.runner import RunOptions, load_scenarios, run_scenarios
    from dynsteer_hook.toolsandbox.scripted import load_script

    scripts = sorted(p for p in files("dynsteer_hook.data").joinpath("scripts").iterdir() if p.name.endswith(".json"))
    plan = [(Path(str(p)), list(load_script(Path(str(p))))) for p in scripts]
    names = sorted({n for _, ns in plan for n in ns})
    scenarios = load_scenarios(names)
    base = args.output_dir
    print(f"dynsteer demo: {len(names)} ToolSandbox scenarios, {len(plan)} scripted agents, evaluator dynsteer (Tier 1 rules)")
    for path, ns in plan:
        label = path.stem
        out = base / f"demo_{label}"
        options = RunOptions(agent="Scripted", user="Scripted", evaluator="dynsteer", script=path)
        results = run_scenarios({n: scenarios[n] for n in ns}, options, out, args.parallel)
        print(f"\n[{label}] reports under {out}/trajectories/<scenario>/dynsteer_report.md, summary {out}/dynsteer_summary.json")
        for r in sorted(results, key=lambda r: r["name"]):
            print(f"  {r['name']}: {_verdict(r)}")
    return 0


def _cmd_scenarios(args: argparse.Namespace) -> int:
    from dynsteer_hook.toolsandbox.runner import load_scenarios

    scenarios = load_scenarios(None, args.preferred_tool_backend)
    for name, sc in scenarios.items():
        print(json.dumps({"name": name, "categories": [str(c) for c in sc.categories]}))
    return 0
