"""Replay benchmark: how fast `dynsteer replay` evaluates recorded trajectories, side by side in one run.

Measures and prints (never asserts), on the same recorded trajectories:

1. Evaluation time per trajectory: ToolSandbox's own evaluation of the recorded execution
   context (``scenario.evaluation.evaluate``) against DynSTEER's (the event stream rebuilt from
   the same context, evaluated with Tier 1 judges). Goal: DynSTEER at least 5x faster.
2. Throughput of the whole replay command (files read and written), one process and a pool of
   two, and with ``--ray`` a local Ray instance: trajectories per second.
3. The live `dynsteer run` of the same scenarios and agents: rollouts per second, for scale.

The recorded agents come from each scenario's public view only (the explorer and looper of
``bench_live.py``), played natively by ToolSandbox.

    python scripts/bench_replay.py                   # 40 scenarios
    python scripts/bench_replay.py --scenarios 20 --ray --json
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_live import explorer, looper

from dynsteer_hook.files.blueprints import load_blueprint
from dynsteer_hook.logs import configure_logging
from dynsteer_hook.model.errors import Halt
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.toolsandbox.live.runner import RunOptions, blueprint_path, default_blueprint_dir, load_scenarios, run_scenarios
from dynsteer_hook.toolsandbox.offline.recording import load_recording, recorded_events
from dynsteer_hook.toolsandbox.offline.replay import ReplayOptions, replay_runs
from dynsteer_hook.toolsandbox.scenario_view import public_view

GOAL_SPEEDUP = 5.0


def _offline(scenario: Any) -> bool:
    """Scenarios none of whose allowed tools needs ToolSandbox's RapidAPI backend (unreachable offline)."""
    ctx = scenario.starting_context
    tools = [ctx.name_to_tool[t] for t in ctx.tool_allow_list or [] if t in ctx.name_to_tool]
    return not any(getattr(t, "__module__", "").endswith("rapid_api_search_tools") for t in tools)


def _dynsteer_eval(context: Any, bp: Any) -> float:
    start = time.perf_counter()
    evaluator = Evaluator(bp)
    try:
        for item in recorded_events(context):
            evaluator.observe(item.event)
    except Halt:
        pass
    evaluator.finish()
    return time.perf_counter() - start


def _native_eval(context: Any, scenario: Any) -> float:
    start = time.perf_counter()
    scenario.evaluation.evaluate(execution_context=context, max_turn_count=scenario.max_messages)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=40)
    parser.add_argument("--blueprints", type=Path, default=default_blueprint_dir())
    parser.add_argument("--ray", action="store_true", help="also replay on a local Ray instance (pip install 'dynsteer-hook[ray]')")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = parser.parse_args()
    configure_logging(False)

    scenarios = load_scenarios(None)
    names = sorted(n for n in scenarios if blueprint_path(args.blueprints, n).is_file() and _offline(scenarios[n]))
    stride = max(1, len(names) // args.scenarios)
    chosen = names[::stride][: args.scenarios]
    views = {n: list(public_view(n, scenarios[n]).tools) for n in chosen}
    out: dict[str, Any] = {"scenarios": len(chosen)}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        scripts = {"explorer": {n: explorer(views[n]) for n in chosen},
                   "looper": {n: s for n in chosen if (s := looper(views[n])) is not None}}
        live_seconds, live_rollouts = 0.0, 0
        for agent, script in scripts.items():
            path = root / f"{agent}.json"
            path.write_text(json.dumps(script))
            picked = {n: scenarios[n] for n in script}
            run_scenarios(picked, RunOptions("Scripted", "Scripted", "native", script=path), root / "runs" / agent, 1)
            start = time.perf_counter()
            run_scenarios(picked, RunOptions("Scripted", "Scripted", "dynsteer", script=path, blueprint_dir=args.blueprints),
                          root / "live" / agent, 1)
            live_seconds += time.perf_counter() - start
            live_rollouts += len(picked)

        # -- 1. evaluation of the same loaded trajectories ------------------------------
        native_t: list[float] = []
        dyn_t: list[float] = []
        for agent in scripts:
            run = root / "runs" / agent
            for folder in sorted((run / "trajectories").iterdir()):
                rec = load_recording(run, folder.name)
                bp = load_blueprint(blueprint_path(args.blueprints, folder.name))
                native_t.append(min(_native_eval(rec.context, scenarios[folder.name]) for _ in range(3)))
                dyn_t.append(min(_dynsteer_eval(rec.context, bp) for _ in range(3)))
        out["trajectories"] = len(native_t)
        out["native_eval_ms_median"] = round(statistics.median(native_t) * 1000, 3)
        out["dynsteer_eval_ms_median"] = round(statistics.median(dyn_t) * 1000, 3)
        out["native_eval_s_total"] = round(sum(native_t), 4)
        out["dynsteer_eval_s_total"] = round(sum(dyn_t), 4)
        out["speedup"] = round(sum(native_t) / sum(dyn_t), 2) if sum(dyn_t) else None
        out["speedup_goal"] = GOAL_SPEEDUP

        # -- 2. the replay command, end to end -------------------------------------------
        options = ReplayOptions(blueprint_dir=args.blueprints)
        engines: list[tuple[str, dict[str, Any]]] = [("1 process", {"processes": 1}), ("2 processes", {"processes": 2})]
        if args.ray:
            engines.append(("Ray local, 2 CPUs", {"processes": 2, "engine": "ray"}))
        out["replay"] = {}
        reference: list[Any] | None = None
        for label, kw in engines:
            start = time.perf_counter()
            summary = replay_runs([root / "runs" / a for a in scripts], options, root / "replay" / label.replace(" ", "_").replace(",", ""), **kw)
            seconds = time.perf_counter() - start
            decisions = [(r["scenario"], r["score"], r["stop"]) for r in summary["per_scenario"]]
            reference = reference or decisions
            out["replay"][label] = {"seconds": round(seconds, 3), "trajectories_per_s": round(summary["replayed"] / seconds, 2),
                                    "same_decisions_as_1_process": decisions == reference, "virtual_stops": summary["halted"],
                                    "mean_saved_progress_on_halted": summary["mean_saved_progress_on_halted"]}
        out["live_rollouts_per_s"] = round(live_rollouts / live_seconds, 2)

    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"Replay over {out['trajectories']} recorded trajectories ({out['scenarios']} offline scenarios, explorer and looper agents)")
    print(f"  {'evaluation of one loaded trajectory':<40}{'ToolSandbox':>12}{'DynSTEER':>10}{'ratio':>8}{'goal':>7}")
    print(f"  {'median, ms':<40}{out['native_eval_ms_median']:>12.3f}{out['dynsteer_eval_ms_median']:>10.3f}")
    print(f"  {'total, s':<40}{out['native_eval_s_total']:>12.3f}{out['dynsteer_eval_s_total']:>10.3f}{out['speedup']:>8.2f}x{GOAL_SPEEDUP:>6.0f}x")
    print("  replay command end to end (files read and written):")
    for label, r in out["replay"].items():
        print(f"    {label:<22}{r['trajectories_per_s']:>8.2f} trajectories/s ({r['seconds']:.2f} s); same decisions: "
              f"{r['same_decisions_as_1_process']}; virtual stops {r['virtual_stops']}, mean saved progress {r['mean_saved_progress_on_halted']}")
    print(f"  live dynsteer run of the same agents: {out['live_rollouts_per_s']:.2f} rollouts/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
