"""Agents of known quality over ToolSandbox scenarios: clean solvers and fault-injected variants.

Ground truth for measuring the evaluator, built from each scenario's hidden evaluation (its
milestones and minefields), which the package's compiler and evaluator never read; this
module lives on the test and benchmark side for that reason. For a scenario it generates:

* a clean scripted solver (``clean_solver``) for the package's ``Scripted`` agent and user,
  kept as verified when ToolSandbox's own evaluation scores it 1.0 (``verify_clean``);
* variants with one injected fault at a recorded step (``fresh_variant``, kinds in
  ``FAULT_KINDS``), and ``call_clock`` to find the faulty call's raw-event index k and
  closed-action index t in a run's ``dynsteer_events.jsonl``;
* clean variants whose user answers between a look-up and its use (``known_quality.turns``,
  kinds in ``TURN_KINDS``), which must get no first error.

Scripts are generated when they are played, never stored: ToolSandbox builds some targets
from the wall clock, and a script that passes on a ``get_current_timestamp`` result must be
played within about a second of being generated (``play_fresh``).

    python scripts/known_agents.py                          # every scenario: coverage table
    python scripts/known_agents.py -s cellular_off wifi_off --out DIR
    python scripts/known_agents.py --variants               # also play every variant
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # known_quality, when run as a script

from known_quality.clocks import CallClock, CallNotPlayedError, call_clock
from known_quality.faults import fresh_variant, malformed_kind, variant
from known_quality.model import FAULT_KINDS, Call, Fault, KnownScript, Skip, Step, Variant
from known_quality.solver import clean_solver
from known_quality.verify import (
    Coverage,
    VariantOutcomes,
    play,
    play_fresh,
    predicted_clock,
    scores_one,
    verify_clean,
    verify_variants,
)

from dynsteer_hook.files.outputs import write_json_atomic
from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.toolsandbox.live.runner import load_scenarios

from tool_sandbox.common.scenario import Scenario

__all__ = [
    "FAULT_KINDS", "Call", "CallClock", "CallNotPlayedError", "Coverage", "Fault", "KnownScript", "Skip", "Step", "Variant",
    "VariantOutcomes", "call_clock", "clean_solver", "fresh_variant", "main", "malformed_kind", "play", "play_fresh", "predicted_clock",
    "scores_one", "variant", "verify_clean", "verify_variants",
]


def _print_coverage(cov: Coverage) -> None:
    print(f"{'category':<28} {'offline':>8} {'verified':>9} {'share':>7}")
    for cat, total, ok in cov.table():
        print(f"{cat:<28} {total:>8} {ok:>9} {ok / total:>7.1%}")
    if cov.network:
        print(f"left out: {len(cov.network)} scenarios whose base {cov.skipped[cov.network[0]]}")
    reasons = cov.reasons()
    if reasons:
        print("\nnot covered:")
        for reason, names in sorted(reasons.items(), key=lambda r: -len(r[1])):
            print(f"  {len(names):>4}  {reason}  (e.g. {', '.join(names[:3])})")


def _print_variants(outcomes: VariantOutcomes) -> None:
    print(f"\n{'variant':<12} {'played':>7} {'scored 1.0':>11} {'mean similarity':>16} {'minefield hit':>14}")
    for kind, played, ok, mean, mined in outcomes.table():
        print(f"{kind:<12} {played:>7} {ok:>11} {mean:>16.3f} {mined:>14}")
    for kind in FAULT_KINDS:
        reasons: dict[str, int] = {}
        for reason in outcomes.skipped.get(kind, {}).values():
            reasons[reason.split(": ", 1)[-1]] = reasons.get(reason.split(": ", 1)[-1], 0) + 1
        for reason, n in sorted(reasons.items(), key=lambda r: -r[1]):
            print(f"  {kind}: {n} without a variant: {reason}")


def _write(out: Path, cov: Coverage, scenarios: Mapping[str, Scenario]) -> None:
    """The verified clean solvers, one script file per fault kind, the ground truth, the coverage."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    about = {"_about": "Clean solvers verified by ToolSandbox (similarity 1.0).", "_generated_at": stamp,
             "_clock_sensitive": sorted(n for n, s in cov.verified.items() if s.clock)}
    files: dict[str, object] = {"clean.json": {**about, **{n: s.to_json() for n, s in sorted(cov.verified.items())}}}
    faults: dict[str, dict[str, object]] = {}
    for kind in FAULT_KINDS:
        made = {n: variant(kind, s, scenarios[n]) for n, s in sorted(cov.verified.items())}
        ok = {n: v for n, v in made.items() if isinstance(v, Variant)}
        files[f"{kind}.json"] = {"_about": f"Clean solvers with one injected {kind} fault (faults.json says where).",
                                 "_generated_at": stamp, **{n: v.script.to_json() for n, v in ok.items()}}
        faults[kind] = {n: {"step": v.fault.step, "call": v.fault.call, "detail": v.fault.detail} for n, v in ok.items()}
        faults[kind] |= {n: {"skipped": v.reason} for n, v in made.items() if isinstance(v, Skip)}
    files["faults.json"] = faults
    files["coverage.json"] = {"table": cov.table(), "skipped": cov.skipped}
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        write_json_atomic(out / name, data)


def main(argv: list[str] | None = None) -> int:
    """Verify clean solvers, print the coverage table, optionally write the scripts."""
    parser = argparse.ArgumentParser(prog="known_agents.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("-s", "--scenarios", nargs="+", metavar="NAME", help="scenario names (default: all)")
    parser.add_argument("--out", type=Path, help="write clean.json, one script file per fault kind, faults.json and coverage.json here")
    parser.add_argument("--variants", action="store_true", help="also play every fault-injected variant and print ToolSandbox's scores")
    args = parser.parse_args(argv)
    try:
        if args.out is not None and args.out.exists() and not args.out.is_dir():
            raise DynsteerError(f"--out {args.out} is a file; pass a directory (it is created if missing)")
        scenarios = load_scenarios(args.scenarios)
        cov = verify_clean(scenarios)
        _print_coverage(cov)
        if args.variants:
            _print_variants(verify_variants(cov, scenarios))
        if args.out is not None:
            _write(args.out, cov, dict(scenarios))
            print(f"\nscripts written to {args.out} (clock-sensitive entries are valid for about a second)")
    except DynsteerError as exc:
        print(f"known_agents.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
