"""Diagnosis benchmark: agents of known quality, one injected fault each, judged by dynsteer live.

For offline base scenarios (one per base, its variant without distraction tools), the clean
scripted solver built from the hidden evaluation (``known_agents``; verified here by ToolSandbox
scoring it 1.0) and its variants with one fault at a recorded step (a repeated read call, a
malformed call then the right one, a wrong tool then a malformed call then the right one, a loop
of failing calls, a minefield call) are played with dynsteer in the loop. Measures and prints
(never asserts):

* first-error exact match per variant: the report's ``first_error`` is the injected faulty call
  on both clocks (k and t). Goal >= 0.92 on every variant with a fault;
* false halts on the clean and repeat variants (goal 0) and loops halted (goal all);
* the clean variants whose user answers between a look-up and its use (``known_quality.turns``: a
  look-up used only after a later user turn, a status read used by a change made after the user
  agreed): runs with a first error and runs halted (goal 0 each);
* strict quality ordering per scenario, clean > repeat > malformed > wrong tool > loop, by the
  dynsteer score (goal >= 95% of scenarios);
* DS(0.01) of eq. 10 with the variants as agents, for dynsteer and for ToolSandbox's similarity.

ToolSandbox builds some targets from the wall clock, so every case is generated when it is played.

    python scripts/bench_diagnosis.py                 # 60 bases
    python scripts/bench_diagnosis.py --bases 10 --json
    python scripts/bench_diagnosis.py --suffix _3_distraction_tools   # the same bases with three distraction tools
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from known_agents import CallNotPlayedError, KnownScript, Variant, call_clock, clean_solver, fresh_variant, play_fresh, scores_one
from known_quality.turns import TURN_KINDS, TurnVariant, fresh_turn_variant
from known_quality.world import needs_network

from dynsteer_hook.cli import configure_logging
from dynsteer_hook.toolsandbox.live.runner import RunOptions, load_scenarios
from dynsteer_hook.toolsandbox.offline.metaeval import all_pairs, discriminability

from tool_sandbox.common.execution_context import ScenarioCategories

ORDER = ("clean", "repeat", "malformed", "wrong_tool", "loop")
KINDS = ("repeat", "malformed", "wrong_tool", "loop", "minefield")
GOAL_MATCH, GOAL_ORDER = 0.92, 0.95
LIVE = RunOptions(agent="Scripted", user="Scripted", evaluator="dynsteer", write_events=True)


def _variant(kind: str, name: str, scenario: Any, now: float) -> Any:
    return fresh_variant(kind, name, scenario, now)


def _report(out: Path, name: str) -> dict[str, Any]:
    return json.loads((out / "trajectories" / name / "dynsteer_report.json").read_text())


def _fault_run(kind: str, name: str, sc: Any, out: Path) -> dict[str, Any] | None:
    """Play one fault variant; its run (with whether the first error is the injected fault), or None without one."""
    made, result = play_fresh(partial(_variant, kind, name, sc), sc, out, LIVE)
    if not isinstance(made, Variant) or result is None:
        return None
    report = _report(out, name)
    try:
        truth = call_clock(out / "trajectories" / name / "dynsteer_events.jsonl", made.fault.step, made.fault.call)
        expected: tuple[int, int] | None = (truth.k, truth.t)
    except CallNotPlayedError:
        expected = None
    fe = report["first_error"]
    return {
        "score": report["score"], "similarity": result["similarity"], "halted": report["halted"],
        "stop": report["stop"]["reason"] if report["stop"] else None,
        "first_error": None if fe is None else (fe["k"], fe["t"]), "expected": expected,
        "match": fe is not None and expected is not None and (fe["k"], fe["t"]) == expected,
    }


def _play_base(name: str, sc: Any, root: Path) -> dict[str, Any]:
    """The clean solver, each fault variant and each clean turn variant of one scenario, played live."""
    row: dict[str, Any] = {"scenario": name, "runs": {}}
    made, result = play_fresh(partial(clean_solver, name, sc), sc, root / name / "clean", LIVE)
    if not isinstance(made, KnownScript) or result is None or not scores_one(result):
        row["skipped"] = "no clean solver ToolSandbox scores 1.0 while dynsteer watches"
        return row
    row["runs"]["clean"] = {"score": result["dynsteer"]["score"], "similarity": result["similarity"],
                            "halted": result["dynsteer"]["halted"], "first_error": result["dynsteer"]["first_error"]}
    for kind in KINDS:
        run = _fault_run(kind, name, sc, root / name / kind)
        if run is not None:
            row["runs"][kind] = run
    for kind in TURN_KINDS:
        made, result = play_fresh(partial(fresh_turn_variant, kind, name, sc), sc, root / name / kind, LIVE)
        if isinstance(made, TurnVariant) and result is not None and scores_one(result):
            block = result["dynsteer"]
            row["runs"][kind] = {"score": block["score"], "similarity": result["similarity"], "halted": block["halted"],
                                 "first_error": block["first_error"]}
    return row


def _summary(rows: list[dict[str, Any]], bases: int) -> dict[str, Any]:
    """The figures over every played scenario."""
    done = [r for r in rows if "skipped" not in r]
    out: dict[str, Any] = {"bases": bases, "with_clean_solver": len(done)}
    out["first_error_match"] = {}
    for kind in KINDS:
        runs = [r["runs"][kind] for r in done if kind in r["runs"]]
        out["first_error_match"][kind] = {"n": len(runs), "exact": round(sum(x["match"] for x in runs) / len(runs), 4) if runs else None,
                                          "missing": sum(1 for x in runs if x["first_error"] is None)}
    out["false_halts"] = {k: sum(1 for r in done if k in r["runs"] and r["runs"][k]["halted"]) for k in ("clean", "repeat")}
    out["clean_turns"] = {}
    for kind in TURN_KINDS:
        runs = [r["runs"][kind] for r in done if kind in r["runs"]]
        out["clean_turns"][kind] = {"n": len(runs), "first_errors": sum(1 for x in runs if x["first_error"] is not None),
                                    "halted": sum(1 for x in runs if x["halted"])}
    out["clean_first_errors"] = sum(1 for r in done if r["runs"]["clean"]["first_error"] is not None)
    loops = [r["runs"]["loop"] for r in done if "loop" in r["runs"]]
    out["loops_halted"] = f"{sum(1 for x in loops if x['halted'])}/{len(loops)}"
    ordered = [r for r in done if all(k in r["runs"] for k in ORDER)]
    strict = [r for r in ordered if all(r["runs"][a]["score"] > r["runs"][b]["score"] for a, b in pairwise(ORDER))]
    out["strict_order"] = {"scenarios": len(ordered), "share": round(len(strict) / len(ordered), 4) if ordered else None}
    for evaluator, key in (("dynsteer", "score"), ("toolsandbox", "similarity")):
        scores = {k: {(r["scenario"], 0): float(r["runs"][k][key]) for r in ordered} for k in ORDER}
        tests = all_pairs(scores, eps=0.01, alpha=0.01)
        means = {k: sum(v.values()) / len(v) for k, v in scores.items() if v}
        ds = discriminability(means, tests)
        out[f"ds_{evaluator}"] = {"ds": round(ds.ds, 4), "significant_pairs": f"{ds.significant}/{ds.pairs}", "means": {k: round(v, 4) for k, v in means.items()}}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bases", type=int, default=60, help="offline base scenarios (default 60)")
    parser.add_argument("--offset", type=int, default=0, help="start the evenly spaced choice this many bases later (another sample)")
    parser.add_argument("--suffix", default="", help="play each base's augmented scenario named BASE+SUFFIX instead "
                        "(e.g. _3_distraction_tools, _10_distraction_tools_tool_name_scrambled); bases without one are left out")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    configure_logging(False)
    scenarios = load_scenarios(None)
    bases = sorted(n for n, s in scenarios.items()
                   if ScenarioCategories.NO_DISTRACTION_TOOLS in s.categories and not needs_network(s))
    chosen = bases[args.offset :: max(1, len(bases) // args.bases)][: args.bases]
    if args.suffix:
        chosen = [n + args.suffix for n in chosen if n + args.suffix in scenarios]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(chosen):
            row = _play_base(name, scenarios[name], Path(tmp))
            rows.append(row)
            if not args.json and "skipped" not in row:
                print(f"[{i + 1}/{len(chosen)}] {name}: " + ", ".join(
                    f"{k} {v['score']:.2f}{' H' if v['halted'] else ''}{' ok' if v.get('match') else ''}"
                    f"{' FE' if 'match' not in v and v['first_error'] else ''}" for k, v in row["runs"].items()),
                    flush=True)
    out = _summary(rows, len(chosen))
    if args.json:
        print(json.dumps({**out, "per_scenario": rows}, indent=2, default=str))
        return 0
    print(f"\nDiagnosis over {out['with_clean_solver']} of {out['bases']} offline bases")
    for kind, m in out["first_error_match"].items():
        print(f"  first error = injected fault ({kind:<10}): {m['exact']} of {m['n']} (no first error: {m['missing']}); goal >= {GOAL_MATCH}")
    print(f"  false halts: clean {out['false_halts']['clean']}, repeat {out['false_halts']['repeat']} (goal 0); loops halted {out['loops_halted']} (goal all)")
    turns = "; ".join(f"{k} {m['first_errors']} of {m['n']}, halted {m['halted']}" for k, m in out["clean_turns"].items())
    print(f"  clean runs with a first error: clean {out['clean_first_errors']}; {turns} (goal 0)")
    print(f"  strict order clean > repeat > malformed > wrong tool > loop: {out['strict_order']['share']} of {out['strict_order']['scenarios']} (goal >= {GOAL_ORDER})")
    for evaluator in ("dynsteer", "toolsandbox"):
        d = out[f"ds_{evaluator}"]
        print(f"  DS(0.01) {evaluator:<11}: {d['ds']} ({d['significant_pairs']} pairs separated); means {d['means']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
