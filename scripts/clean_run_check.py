"""Clean-run check: a clean, correct run must score well under the shipped blueprints.

For each chosen scenario the clean scripted solver (``known_agents.clean_solver``, built from
the scenario's hidden evaluation on this test side only; the compiler never reads it) is
played once with dynsteer live in the loop, using the blueprints of ``--blueprints``. A
scenario is *eligible* when ToolSandbox's own evaluation scores that rollout 1.0 without a
crash; an eligible scenario *passes* when the dynsteer score is at least 0.9, every milestone
is settled and the run was not halted. The share passing is printed per split part
(``dynsteer_hook.toolsandbox.quality.split``: dev, held-out) and overall, with every failure and why.

Each scenario is a real rollout (about a second); size runs for the machine with ``--stride``
(every n-th scenario of the selection, in name order) and ``--limit``. Scenarios whose base
needs the RapidAPI search tools are left out (they fail offline).

    python scripts/clean_run_check.py --stride 4
    python scripts/clean_run_check.py --split held-out --limit 50 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from known_agents import KnownScript, clean_solver, play_fresh, scores_one
from known_quality.world import needs_network

from dynsteer_hook.cli import configure_logging
from dynsteer_hook.toolsandbox.live.preflight import default_blueprint_dir
from dynsteer_hook.toolsandbox.live.runner import RunOptions, load_scenarios
from dynsteer_hook.toolsandbox.quality.split import base_scenario_name, in_split, split_of

MIN_SCORE = 0.9
PARTS = ("dev", "held-out", "all")


def _check(name: str, scenario: Any, out: Path, options: RunOptions) -> dict[str, Any]:
    """Play the clean solver of one scenario live; the row of the check."""
    row: dict[str, Any] = {"scenario": name, "split": split_of(name)}
    made, result = play_fresh(partial(clean_solver, name, scenario), scenario, out, options)
    if not isinstance(made, KnownScript) or result is None:
        row["eligible"], row["why"] = False, getattr(made, "reason", "no clean solver")
        return row
    if not scores_one(result):
        row["eligible"] = False
        row["why"] = f"ToolSandbox scores the clean solver {result['similarity']}" + (
            f" ({result['exception_type']})" if result["exception_type"] else "")
        return row
    block = result["dynsteer"]
    row.update(eligible=True, score=block["score"], halted=block["halted"], unsettled=block["unsettled"],
               stop=(block["stop"] or {}).get("reason"), first_error=block["first_error"])
    problems = []
    if block["score"] is None or block["score"] < MIN_SCORE:
        problems.append(f"score {block['score']}")
    if block["unsettled"]:
        problems.append(f"unsettled {block['unsettled']}")
    if block["halted"]:
        problems.append(f"halted ({row['stop']})")
    row["passed"] = not problems
    if problems:
        row["why"] = "; ".join(problems)
    return row


def _summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for part in PARTS:
        mine = [r for r in rows if part == "all" or r["split"] == part]
        eligible = [r for r in mine if r["eligible"]]
        passed = sum(1 for r in eligible if r["passed"])
        out[part] = {"played": len(mine), "eligible": len(eligible), "passed": passed,
                     "share": round(passed / len(eligible), 4) if eligible else None}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=PARTS, default="all", help="scenarios of this split part (default all)")
    parser.add_argument("--stride", type=int, default=1, help="every n-th scenario of the selection, in name order (default 1)")
    parser.add_argument("--limit", type=int, default=None, help="at most this many scenarios")
    parser.add_argument("-s", "--scenarios", nargs="*", help="these scenarios only")
    parser.add_argument("--blueprints", type=Path, default=None, help="blueprint folder (default: the shipped blueprints)")
    parser.add_argument("--json", type=Path, default=None, help="write every row and the summary to this file")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per scenario as it is played")
    args = parser.parse_args(argv)
    if args.stride < 1 or (args.limit is not None and args.limit < 1):
        print("clean_run_check: --stride and --limit must be at least 1", file=sys.stderr)
        return 2
    blueprints = args.blueprints or default_blueprint_dir()
    if not blueprints.is_dir():
        print(f"clean_run_check: --blueprints {blueprints} is not a directory; pass the folder holding <scenario>.json files", file=sys.stderr)
        return 2
    configure_logging(False)
    scenarios = load_scenarios(None)
    unknown = sorted(set(args.scenarios or ()) - set(scenarios))
    if unknown:
        print(f"clean_run_check: unknown scenario name(s) {unknown[:5]}; list them with 'dynsteer scenarios'", file=sys.stderr)
        return 2
    names = sorted(n for n in (args.scenarios or scenarios) if in_split(n, args.split))
    offline = [n for n in names if not needs_network(scenarios[base_scenario_name(n)] if base_scenario_name(n) in scenarios else scenarios[n])]
    chosen = offline[:: args.stride][: args.limit]
    options = RunOptions(agent="Scripted", user="Scripted", evaluator="dynsteer", blueprint_dir=blueprints, write_events=False)
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(chosen):
            row = _check(name, scenarios[name], Path(tmp) / name, options)
            rows.append(row)
            if args.verbose:
                state = "not eligible" if not row["eligible"] else ("pass" if row["passed"] else "FAIL")
                print(f"[{i + 1}/{len(chosen)}] {name} ({row['split']}): {state}" + (f": {row['why']}" if row.get("why") else ""), flush=True)
    summary = _summary(rows)
    print(f"\nclean-run check: {len(chosen)} of {len(offline)} offline scenarios of split '{args.split}' "
          f"(stride {args.stride}{'' if args.limit is None else f', limit {args.limit}'}), {time.perf_counter() - start:.0f} s")
    print(f"{'split':<9} {'played':>7} {'eligible':>9} {'passed':>7} {'share':>7}")
    for part, s in summary.items():
        if s["played"]:
            share = "-" if s["share"] is None else f"{s['share']:.1%}"
            print(f"{part:<9} {s['played']:>7} {s['eligible']:>9} {s['passed']:>7} {share:>7}")
    failed = [r for r in rows if r["eligible"] and not r["passed"]]
    if failed:
        print("\nfailing (eligible, dynsteer below the bar):")
        for r in failed:
            print(f"  {r['scenario']} ({r['split']}): {r['why']}")
    if args.json:
        args.json.write_text(json.dumps({"settings": {"split": args.split, "stride": args.stride, "limit": args.limit,
                                                      "blueprints": str(blueprints), "min_score": MIN_SCORE},
                                         "summary": summary, "rows": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
