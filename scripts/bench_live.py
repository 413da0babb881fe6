"""Live-hook benchmark: ToolSandbox wall time with --evaluator native vs dynsteer (Tier 1).

Measures and prints (never asserts), in one run on the same machine:

1. Overhead of the live hook: the same scripted rollouts over N scenarios played with the
   native evaluator and with dynsteer, alternating the order, R repeats each. Overhead is
   computed on rollouts of identical length in both modes (a halted rollout is shorter,
   which would flatter the hook). Goal: <= 5% of ToolSandbox's own wall time.
2. Steps saved on failing scripted agents: each failing script played natively (the full
   rollout) and with dynsteer (halted); saved = 1 - agent steps played with dynsteer /
   agent steps of the full rollout.

The workload agents are built from each scenario's public view only: an "explorer" that
calls up to four of its tools with schema-typed placeholder arguments and then reports,
and a "looper" that repeats one argument-free lookup until its steps run out. The shipped
failing scripts (looping, minefield, malformed arguments) are added to part 2.

    python scripts/bench_live.py                 # 60 scenarios, 3 repeats
    python scripts/bench_live.py --scenarios 20 --repeat 1 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dynsteer_hook.logs import configure_logging
from dynsteer_hook.model.blueprint import ToolSpec
from dynsteer_hook.toolsandbox.live.runner import RunOptions, blueprint_path, default_blueprint_dir, load_scenarios, run_scenario
from dynsteer_hook.toolsandbox.scenario_view import public_view

GOAL_OVERHEAD = 0.05
SHIPPED = Path(__file__).resolve().parents[1] / "dynsteer_hook" / "data" / "scripts"
PLACEHOLDER = {"string": "placeholder", "number": 1.0, "integer": 1, "boolean": True, "array": [], "object": {}}


def _args(spec: ToolSpec) -> dict[str, Any]:
    props = spec.parameters.get("properties", {})
    return {name: PLACEHOLDER.get(str(prop.get("type")), "placeholder") for name, prop in props.items()
            if name in spec.parameters.get("required", [])}


def explorer(tools: list[ToolSpec]) -> dict[str, Any]:
    """Calls up to four tools once each (placeholders for required arguments), then reports."""
    steps: list[dict[str, Any]] = [{"say": "Let me look into that."}]
    steps += [{"tool_calls": [{"name": t.name, "arguments": _args(t)}]} for t in tools[:4]]
    steps.append({"say": "Here is what I found."})
    return {"agent": steps, "user": ["Go ahead, please."]}


def looper(tools: list[ToolSpec]) -> dict[str, Any] | None:
    """Repeats one argument-free call fourteen times (None when the scenario has no such tool)."""
    free = [t for t in tools if not t.parameters.get("required")]
    if not free:
        return None
    return {"agent": [{"tool_calls": [{"name": free[0].name, "arguments": {}}]} for _ in range(14)] + [{"say": "Done."}], "user": []}


def agent_steps(trajectory: Path) -> int:
    ctx = json.loads((trajectory / "execution_context.json").read_text())
    return sum(1 for row in ctx["_dbs"]["SANDBOX"] if row.get("sender") == "AGENT")


def timed(name: str, scenario: Any, options: RunOptions, out: Path) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    result = run_scenario((name, scenario), options=options, output_directory=out)
    return time.perf_counter() - start, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--blueprints", type=Path, default=default_blueprint_dir())
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--no-steps", action="store_true", help="measure the overhead only (the full native rollouts of part 2 are slow to evaluate)")
    args = parser.parse_args()
    configure_logging(False)  # halts are results here, not news

    scenarios = load_scenarios(None)
    names = sorted(n for n in scenarios if blueprint_path(args.blueprints, n).is_file())
    if not names:
        print(f"no blueprints in {args.blueprints}", file=sys.stderr)
        return 2
    stride = max(1, len(names) // args.scenarios)
    chosen = names[::stride][: args.scenarios]
    views = {n: list(public_view(n, scenarios[n]).tools) for n in chosen}

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        explore_script = root / "explorer.json"
        explore_script.write_text(json.dumps({n: explorer(views[n]) for n in chosen}))
        loops = {n: s for n in chosen if (s := looper(views[n])) is not None}
        loop_script = root / "looper.json"
        loop_script.write_text(json.dumps(loops))

        # -- 1. overhead on equal-length rollouts -----------------------------------
        native = RunOptions(agent="Scripted", user="Scripted", evaluator="native", script=explore_script)
        dyn = RunOptions(agent="Scripted", user="Scripted", evaluator="dynsteer", script=explore_script,
                         blueprint_dir=args.blueprints, write_events=True)
        t_native: dict[str, list[float]] = {n: [] for n in chosen}
        t_dyn: dict[str, list[float]] = {n: [] for n in chosen}
        equal: dict[str, bool] = {}
        evaluator_s: dict[str, float] = {}
        for r in range(args.repeat):
            for i, n in enumerate(chosen):
                order = [(native, t_native), (dyn, t_dyn)]
                if (i + r) % 2:
                    order.reverse()
                steps: dict[str, int] = {}
                for options, sink in order:
                    out = root / f"ov_{options.evaluator}_{r}"
                    seconds, result = timed(n, scenarios[n], options, out)
                    sink[n].append(seconds)
                    steps[options.evaluator] = agent_steps(out / "trajectories" / n)
                    if options.evaluator == "dynsteer":
                        evaluator_s[n] = result["dynsteer"]["evaluator_seconds"]
                equal[n] = equal.get(n, True) and steps["native"] == steps["dynsteer"]
        same = [n for n in chosen if equal[n]]
        nat = sum(min(t_native[n]) for n in same)
        dy = sum(min(t_dyn[n]) for n in same)
        overhead = dy / nat - 1 if nat else float("nan")
        per_ratio = statistics.median(min(t_dyn[n]) / min(t_native[n]) - 1 for n in same) if same else float("nan")
        eval_share = sum(evaluator_s[n] for n in same) / nat if nat else float("nan")
        if not args.json:
            print(f"[part 1 done] overhead {overhead:+.2%} over {len(same)} equal-length rollouts", flush=True)

        # -- 2. steps saved on failing agents ----------------------------------------
        saved: list[dict[str, Any]] = []
        failing = [(loop_script, sorted(loops))]
        for f in ("looping_agent", "minefield_agent", "malformed_arguments"):
            data = json.loads((SHIPPED / f"{f}.json").read_text())
            failing.append((SHIPPED / f"{f}.json", [k for k in data if not k.startswith("_")]))
        for script, ns in ([] if args.no_steps else failing):
            for n in ns:
                if not blueprint_path(args.blueprints, n).is_file():
                    continue
                full_dir, dyn_dir = root / f"full_{script.stem}", root / f"stop_{script.stem}"
                run_scenario((n, scenarios[n]), options=RunOptions("Scripted", "Scripted", "native", script=script), output_directory=full_dir)
                res = run_scenario((n, scenarios[n]), options=RunOptions("Scripted", "Scripted", "dynsteer", blueprint_dir=args.blueprints, script=script),
                                   output_directory=dyn_dir)
                full, played = agent_steps(full_dir / "trajectories" / n), agent_steps(dyn_dir / "trajectories" / n)
                stop = res["dynsteer"]["stop"]
                saved.append({"script": script.stem, "scenario": n, "halted": stop is not None, "reason": stop and stop["reason"],
                              "full_agent_steps": full, "played_agent_steps": played, "saved": 1 - played / full if full else 0.0})

    halted = [s for s in saved if s["halted"]]
    by_reason: dict[str, list[float]] = {}
    for s in halted:
        by_reason.setdefault(s["reason"], []).append(s["saved"])
    out = {
        "scenarios": len(chosen),
        "repeat": args.repeat,
        "equal_length_rollouts": len(same),
        "native_seconds": round(nat, 4),
        "dynsteer_seconds": round(dy, 4),
        "overhead": round(overhead, 4),
        "overhead_goal": GOAL_OVERHEAD,
        "overhead_ratio_to_goal": round(overhead / GOAL_OVERHEAD, 3),
        "median_per_scenario_overhead": round(per_ratio, 4),
        "evaluator_share_of_native": round(eval_share, 4),
        "failing_rollouts": len(saved),
        "halted_failing_rollouts": len(halted),
        "mean_steps_saved_on_halted": round(statistics.mean(s["saved"] for s in halted), 4) if halted else None,
        "mean_steps_saved_by_reason": {k: round(statistics.mean(v), 4) for k, v in sorted(by_reason.items())},
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"Live hook over {out['scenarios']} scenarios x {args.repeat} repeats ({out['equal_length_rollouts']} equal-length rollouts)")
    print(f"  {'measure':<44}{'native':>10}{'dynsteer':>10}{'ratio':>9}{'goal':>8}")
    print(f"  {'wall time of rollouts, s (min of repeats)':<44}{nat:>10.3f}{dy:>10.3f}{dy / nat:>9.3f}{1 + GOAL_OVERHEAD:>8.2f}")
    print(f"  overhead {overhead:+.2%} (goal <= {GOAL_OVERHEAD:.0%}; ratio to goal {out['overhead_ratio_to_goal']}); "
          f"median per scenario {per_ratio:+.2%}; evaluator's own time {eval_share:.2%} of native")
    print(f"Failing scripted agents: {len(halted)}/{len(saved)} rollouts halted; mean share of agent steps saved "
          f"{out['mean_steps_saved_on_halted']}")
    for reason, share in out["mean_steps_saved_by_reason"].items():
        print(f"  {reason:<22} saved {share:.1%} of agent steps ({len(by_reason[reason])} rollouts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
