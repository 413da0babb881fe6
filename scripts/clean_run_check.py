"""Clean-run check: a clean, correct run must score well under the shipped blueprints.

For each chosen scenario the clean scripted solver (``known_agents.clean_solver``, built from
the scenario's hidden evaluation on this test side only; the compiler never reads it) is
played once with dynsteer live in the loop, using the blueprints of ``--blueprints``. A
scenario is *eligible* when ToolSandbox's own evaluation scores that rollout 1.0 without a
crash; an eligible scenario *passes* when the dynsteer score is at least 0.9, every milestone
is settled and the run was not halted. The share passing is printed per split part
(``dynsteer_hook.toolsandbox.quality.split``: dev, held-out) and overall, with every failure and why.

Every run with a first error is listed too (a clean run has none). With ``--turns`` each scenario
also plays the clean variants whose user answers between a look-up and its use
(``known_quality.turns``: a look-up used only after a later user turn, a status read used by a change
made after the user agreed), reported apart under the same bar.

Each scenario is a real rollout (about a second); size runs for the machine with ``--stride``
(every n-th scenario of the selection, in name order) and ``--limit``. Scenarios whose base
needs the RapidAPI search tools are left out (they fail offline).

    python scripts/clean_run_check.py --stride 4
    python scripts/clean_run_check.py --split held-out --limit 50 --json out.json
    python scripts/clean_run_check.py --stride 4 --turns
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
from known_quality.turns import TURN_KINDS, TurnVariant, fresh_turn_variant
from known_quality.world import needs_network

from dynsteer_hook.cli import configure_logging
from dynsteer_hook.toolsandbox.live.preflight import default_blueprint_dir
from dynsteer_hook.toolsandbox.live.runner import RunOptions, load_scenarios
from dynsteer_hook.toolsandbox.quality.split import base_scenario_name, in_split, split_of

MIN_SCORE = 0.9
PARTS = ("dev", "held-out", "all")


def _check(name: str, scenario: Any, out: Path, options: RunOptions, kind: str = "clean") -> dict[str, Any]:
    """Play the clean solver of one scenario (or its ``kind`` of turn variant) live; the row of the check."""
    row: dict[str, Any] = {"scenario": name, "split": split_of(name), "variant": kind}
    make = partial(clean_solver, name, scenario) if kind == "clean" else partial(fresh_turn_variant, kind, name, scenario)
    made, result = play_fresh(make, scenario, out, options)
    if not isinstance(made, (KnownScript, TurnVariant)) or result is None:
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


def _print(summary: dict[str, dict[str, Any]], turns: dict[str, dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Print the table by split part (then by turn variant), the runs with a first error and the failures; those runs."""
    print(f"{'split':<11} {'played':>7} {'eligible':>9} {'passed':>7} {'share':>7}")
    for part, s in [*((p, s) for p, s in summary.items() if s["played"]), *turns.items()]:
        share = "-" if s["share"] is None else f"{s['share']:.1%}"
        print(f"{part:<11} {s['played']:>7} {s['eligible']:>9} {s['passed']:>7} {share:>7}")
    eligible = [r for r in rows if r["eligible"]]
    blamed = [r for r in eligible if r.get("first_error")]
    print(f"\neligible runs with a first error: {len(blamed)} of {len(eligible)}")
    for r in blamed:
        fe = r["first_error"]
        print(f"  {r['scenario']} ({r['variant']}): k={fe['k']}, t={fe['t']}, {fe['cause']}: {fe['detail'][:160]}")
    failed = [r for r in eligible if not r["passed"]]
    if failed:
        print("\nfailing (eligible, dynsteer below the bar):")
        for r in failed:
            print(f"  {r['scenario']} ({r['split']}" + ("" if r["variant"] == "clean" else f", {r['variant']}") + f"): {r['why']}")
    return blamed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=PARTS, default="all", help="scenarios of this split part (default all)")
    parser.add_argument("--stride", type=int, default=1, help="every n-th scenario of the selection, in name order (default 1)")
    parser.add_argument("--limit", type=int, default=None, help="at most this many scenarios")
    parser.add_argument("-s", "--scenarios", nargs="*", help="these scenarios only")
    parser.add_argument("--blueprints", type=Path, default=None, help="blueprint folder (default: the shipped blueprints)")
    parser.add_argument("--json", type=Path, default=None, help="write every row and the summary to this file")
    parser.add_argument("--turns", action="store_true", help="also play the clean variants whose user answers between a look-up and its use")
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
    turn_rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(chosen):
            for kind in ("clean", *(TURN_KINDS if args.turns else ())):
                row = _check(name, scenarios[name], Path(tmp) / name / kind, options, kind)
                (rows if kind == "clean" else turn_rows).append(row)
                if args.verbose:
                    state = "not eligible" if not row["eligible"] else ("pass" if row["passed"] else "FAIL")
                    print(f"[{i + 1}/{len(chosen)}] {name} ({row['split']}, {kind}): {state}" + (f": {row['why']}" if row.get("why") else ""),
                          flush=True)
    summary = _summary(rows)
    turns = {kind: _summary([r for r in turn_rows if r["variant"] == kind])["all"] for kind in TURN_KINDS if args.turns}
    print(f"\nclean-run check: {len(chosen)} of {len(offline)} offline scenarios of split '{args.split}' "
          f"(stride {args.stride}{'' if args.limit is None else f', limit {args.limit}'}), {time.perf_counter() - start:.0f} s")
    blamed = _print(summary, turns, [*rows, *turn_rows])
    if args.json:
        args.json.write_text(json.dumps({"settings": {"split": args.split, "stride": args.stride, "limit": args.limit,
                                                      "blueprints": str(blueprints), "min_score": MIN_SCORE, "turns": args.turns},
                                         "summary": summary, "turns": turns, "first_errors": len(blamed), "rows": rows,
                                         "turn_rows": turn_rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
