"""``dynsteer compare`` on recorded runs of agents of known quality: DS of both evaluators, saved progress, clean halts,
and what the adaptive judge ladder spends against every stage at Tier 3.

Five scripted agents (``known_agents``, built from ToolSandbox's hidden evaluation, which the
evaluator never reads) are recorded with ``--evaluator native`` (ToolSandbox alone, nothing
halts): ``clean`` plays the clean solver everywhere; ``repeat``, ``malformed``, ``loop`` and
``minefield`` play their fault-injected variant on a share of the scenarios where it can be built
(``--fault-share``, a different subset per agent) and the clean solver on the rest.

The base scenarios (offline, no distraction tools) are chosen by a rule that reads only the hidden
ground truth, never an evaluator's outcome (``known_quality.population``): a candidate is a
scenario where at least one selected fault kind's variant can be built; scenarios are taken one
at a time for the selected kind that has its variant on the fewest chosen scenarios so far (the
next candidate in a stride order over the names, ``--offset`` shifting where it starts); a
candidate is kept only when ToolSandbox scores its clean solver 1.0. No scenario carries every
kind (minefields the agent can call exist only on insufficient-information tasks, where the clean
solver makes no call to repeat, malform or loop on), so with the default agents about half the
scenarios carry the minefield variant and half the three others. The script prints how many
scenarios qualified and how many were left out for which reason.

The ``loop`` agent is stuck by default: it repeats its failing call until ToolSandbox's own limit
on a rollout's messages (``Scenario.max_messages``, 30 by default) ends the conversation, as a
stuck agent does; ``--loop-length N`` makes it give up after N failing calls instead.

Then, in the same run:

1. ``dynsteer compare`` with Tier 1 rules only (no model): DS(0.01) of dynsteer and of ToolSandbox's
   similarity and their ratio (goal >= 1.85), the mean saved progress on the virtually stopped runs
   (goal >= 45.41%), and the virtual stops of the clean agent (goal 0);
2. unless ``--no-judge``, ``dynsteer compare --against-all-tier3`` with a rules-based stand-in judge
   (``rules_judge.py``: a deterministic OpenAI-compatible server on 127.0.0.1 scoring each stage from its
   evidence by fixed rules, NOT a language model): the same figures with the LLM tiers in play, the LLM
   judge requests and tokens of the adaptive ladder against every stage at Tier 3 (goal <= 30%), and Kendall
   tau between the two agent rankings (goal >= 0.8). Its answers go to a judge cache; the second compare
   over the same replays (``--judge-cache``) is checked to ask the judge nothing.

    python scripts/bench_compare.py --scenarios 24 --out bench_compare_out
    python scripts/bench_compare.py --scenarios 24 --offset 1 --out bench_compare_other   # other scenarios
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from known_agents import KnownScript, Variant, clean_solver, fresh_variant, play_fresh, scores_one, variant
from known_quality import faults
from known_quality.population import Choice, choose_balanced, plays_fault, scan_order
from known_quality.verify import NATIVE
from known_quality.world import needs_network
from rules_judge import RulesJudgeServer

from dynsteer_hook.cli import configure_logging
from dynsteer_hook.cli import main as dynsteer
from dynsteer_hook.files.outputs import write_json_atomic
from dynsteer_hook.toolsandbox.live.runner import load_scenarios
from dynsteer_hook.toolsandbox.live.summaries import result_summary

from tool_sandbox.common.execution_context import ScenarioCategories

KINDS = ("repeat", "malformed", "loop", "minefield")
FAULTS: tuple[str, ...] = KINDS  # the faulty agents of this run (--agents)
GOAL_DS_RATIO, GOAL_SAVED, GOAL_SHARE, GOAL_TAU = 1.85, 0.4541, 0.30, 0.8


def _quiet(make: Any, sc: Any, out: Path) -> tuple[Any, dict[str, Any] | None]:
    """Play natively without ToolSandbox's progress bars on stderr."""
    with contextlib.redirect_stderr(io.StringIO()):
        return play_fresh(make, sc, out, NATIVE)


def buildable(names: list[str], scenarios: Any) -> dict[str, frozenset[str]]:
    """Per scenario, the selected fault kinds whose variant can be built on its clean solver (no play)."""
    out: dict[str, frozenset[str]] = {}
    for name in names:
        clean = clean_solver(name, scenarios[name], time.time())
        out[name] = frozenset(k for k in FAULTS if isinstance(variant(k, clean, scenarios[name]), Variant))
    return out


def record(order: list[str], count: int, scenarios: Any, root: Path, share: float) -> tuple[Choice, dict[str, dict[str, str]]]:
    """Choose the scenarios (``population``), record every agent natively into ``root/<agent>/repeat_0``.

    Returns the choice and what each agent played per chosen scenario.
    """
    able = buildable(order, scenarios)
    cleans: dict[str, dict[str, Any]] = {}

    def qualifies(name: str) -> str | None:
        sc = scenarios[name]
        run = root / "clean" / "repeat_0"
        made, result = _quiet(partial(clean_solver, name, sc), sc, run)
        if not isinstance(made, KnownScript) or result is None or not scores_one(result):
            shutil.rmtree(run / "trajectories" / name, ignore_errors=True)
            return "ToolSandbox does not score the clean solver 1.0"
        cleans[name] = result
        return None

    choice = choose_balanced(order, able, FAULTS, count, qualifies)
    chosen = sorted(choice.chosen)
    faulty = {kind: plays_fault(chosen, able, kind, KINDS.index(kind), share) for kind in FAULTS}
    played: dict[str, dict[str, str]] = {a: {} for a in ("clean", *FAULTS)}
    results: dict[str, list[dict[str, Any]]] = {a: [] for a in played}
    for i, name in enumerate(chosen):
        sc = scenarios[name]
        row = {"clean": (cleans[name], "clean")}
        for kind in FAULTS:
            out = root / kind / "repeat_0"
            made, result = None, None
            if name in faulty[kind]:
                made, result = _quiet(partial(fresh_variant, kind, name, sc), sc, out)
            if not isinstance(made, Variant) or result is None:  # not chosen, or (played later) no such fault after all
                if name in faulty[kind]:
                    print(f"  {name}: the {kind} variant could not be built when played; {kind} plays the clean solver", flush=True)
                made, result = _quiet(partial(clean_solver, name, sc), sc, out)
                row[kind] = (result, "clean")
            else:
                row[kind] = (result, kind)
        for agent, (res, what) in row.items():
            results[agent].append(res)
            played[agent][name] = what
        print(f"  [{i + 1}/{len(chosen)}] {name}: " + ", ".join(f"{a} {r['similarity']:.2f}{'' if w != 'clean' or a == 'clean' else ' (clean)'}"
                                                           for a, (r, w) in row.items()), flush=True)
    for agent, rs in results.items():
        write_json_atomic(root / agent / "repeat_0" / "result_summary.json", result_summary(rs))
    return choice, played


def print_choice(choice: Choice, candidates: int, count: int, offset: int) -> None:
    """How many scenarios qualified, and how many were left out for which reason."""
    able = candidates - len(choice.no_variant)
    print(f"scenarios (rule: known_quality.population, offset {offset}): {candidates} offline base scenarios; "
          f"{len(choice.no_variant)} left out as no selected fault variant can be built on them; {able} candidates")
    print(f"  considered {len(choice.chosen) + len(choice.skipped)}: {len(choice.chosen)} chosen (asked for {count})"
          + "".join(f", {n} skipped: {reason}" for reason, n in sorted(choice.reasons().items()))
          + f"; {able - len(choice.chosen) - len(choice.skipped)} candidates not needed")
    print("  chosen scenarios carrying each fault variant: " + ", ".join(f"{k} {n}" for k, n in choice.carried.items()), flush=True)


def compare(root: Path, out: Path, extra: list[str]) -> tuple[dict[str, Any], float]:
    argv = ["compare", *(f"{a}={root / a}" for a in ("clean", *FAULTS)), "-o", str(out), "--no-progress", *extra]
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = dynsteer(argv)
    if code != 0:
        raise SystemExit(f"dynsteer compare failed with status {code}")
    return json.loads((out / "compare.json").read_text()), time.perf_counter() - start


def figures(result: dict[str, Any], label: str) -> None:
    ds = {e: result["evaluators"][e]["discriminability"] for e in ("dynsteer", "native")}
    ratio = ds["dynsteer"]["ds"] / ds["native"]["ds"] if ds["native"]["ds"] else float("inf")
    print(f"\n{label}")
    print(f"  {'agent':<10} {'dynsteer':>9} {'native':>7} {'stop rate':>10} {'saved on halted':>16}")
    for name, a in result["agents"].items():
        saved = a["mean_saved_progress_on_halted"]
        print(f"  {name:<10} {a['dynsteer']['mean']:>9.4f} {a['native']['mean']:>7.4f} {a['stop_rate']:>10.2%} "
              f"{'-' if saved is None else f'{saved:.2%}':>16}")
    for e in ("dynsteer", "native"):
        d = ds[e]
        print(f"  DS(0.01) {e:<8} {d['ds']:.4f} (CV {d['cv']:.4f}, {d['significant']}/{d['pairs']} pairs separated)")
    print(f"  DS ratio dynsteer / native: {ratio:.2f} (goal >= {GOAL_DS_RATIO})")
    every = result["stops_by_criterion"].get("all")
    saved = every["mean_saved_progress"] if every else None
    print(f"  saved progress on virtually stopped runs: {'-' if saved is None else f'{saved:.2%}'} over "
          f"{every['halted_runs'] if every else 0} runs (goal >= {GOAL_SAVED:.2%})")
    for reason, s in result["stops_by_criterion"].items():
        if reason != "all":
            print(f"    {reason:<22} {s['halted_runs']:>3} runs, mean saved progress {s['mean_saved_progress']:.2%}")
    clean = result["agents"]["clean"]
    print(f"  clean agent halts: {round(clean['stop_rate'] * clean['trajectories'])} of {clean['trajectories']} (goal 0)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=24, help="offline base scenarios (default 24)")
    parser.add_argument("--fault-share", type=float, default=0.75, help="share of scenarios a faulty agent plays its fault on (default 0.75)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the recordings, replays and tables (must not exist)")
    parser.add_argument("--no-judge", action="store_true", help="skip the rules-based judge part")
    parser.add_argument("--agents", nargs="+", choices=KINDS, default=list(KINDS), metavar="KIND",
                        help=f"faulty agents besides clean (default all: {' '.join(KINDS)})")
    parser.add_argument("--loop-length", type=int, default=None, metavar="N",
                        help="failing calls of the loop fault before the agent gives up (default: it never gives up; "
                             "ToolSandbox's own limit on a rollout's messages ends it)")
    parser.add_argument("--offset", type=int, default=0,
                        help="where the stride over the scenario names starts (default 0; another value takes other scenarios)")
    args = parser.parse_args()
    global FAULTS
    FAULTS = tuple(k for k in KINDS if k in args.agents)
    if args.loop_length is not None and args.loop_length < 1:
        parser.error("--loop-length must be at least 1")
    faults.BUILDERS["loop"] = partial(faults.loop, length=args.loop_length)
    if args.out.exists():
        print(f"bench_compare.py: --out {args.out} exists; pass a new folder", file=sys.stderr)
        return 2
    configure_logging(False)
    warnings.filterwarnings("ignore", message="Sample size too small")  # scipy, on pairs with few differences
    scenarios = load_scenarios(None)
    bases = sorted(n for n, s in scenarios.items() if ScenarioCategories.NO_DISTRACTION_TOOLS in s.categories and not needs_network(s))
    loop = ("until ToolSandbox's limit (max_messages " + "/".join(sorted({str(scenarios[n].max_messages) for n in bases})) + ")"
            if args.loop_length is None else str(args.loop_length))
    print(f"recording up to {args.scenarios} offline base scenarios x {1 + len(FAULTS)} agents natively (fault share {args.fault_share} "
          f"of the scenarios where the fault can be built, loop length {loop})", flush=True)
    start = time.perf_counter()
    choice, played = record(scan_order(bases, args.scenarios, args.offset), args.scenarios, scenarios, args.out / "agents", args.fault_share)
    print_choice(choice, len(bases), args.scenarios, args.offset)
    if not choice.chosen:
        print("bench_compare.py: no scenario qualified", file=sys.stderr)
        return 1
    print(f"recorded in {time.perf_counter() - start:.0f} s; faults played: "
          + ", ".join(f"{k} {sum(1 for w in played[k].values() if w != 'clean')}/{len(played[k])}" for k in FAULTS))

    tier1, seconds = compare(args.out / "agents", args.out / "compare_tier1", [])
    figures(tier1, f"dynsteer compare, Tier 1 rules only ({seconds:.0f} s): {args.out / 'compare_tier1' / 'compare.md'}")
    if args.no_judge:
        return 0
    server = RulesJudgeServer().start()
    try:
        judge = ["--judge-model", "openai/rules-judge", "--judge-api-base", server.url, "--judge-max-retries", "0",
                 "--judge-cache", str(args.out / "judge_cache")]
        routed, seconds = compare(args.out / "agents", args.out / "compare_rules_judge", ["--against-all-tier3", *judge])
        asked = server.requests
        _, again = compare(args.out / "agents", args.out / "compare_rules_judge_again", ["--against-all-tier3", *judge])
        asked_again = server.requests - asked
    finally:
        server.stop()
    figures(routed, f"dynsteer compare, adaptive ladder with the rules-based judge ({seconds:.0f} s): "
                    f"{args.out / 'compare_rules_judge' / 'compare.md'}")
    r = routed["routing"]
    print("\nadaptive ladder against every stage at Tier 3 (rules-based judge)")
    print(f"  {'agent':<10} {'requests':>9} {'all T3':>7} {'share':>7} {'tokens':>9} {'all T3':>9} {'mean':>7} {'all T3':>7}")
    for name, a in r["agents"].items():
        share = "-" if a["call_share"] is None else f"{a['call_share']:.1%}"
        print(f"  {name:<10} {a['adaptive']['llm_requests']:>9} {a['all_tier3']['llm_requests']:>7} {share:>7} "
              f"{a['adaptive']['tokens']:>9} {a['all_tier3']['tokens']:>9} {a['dynsteer_mean']['adaptive']:>7.4f} {a['dynsteer_mean']['all_tier3']:>7.4f}")
    print(f"  LLM judge requests: {r['adaptive']['llm_requests']} adaptive against {r['all_tier3']['llm_requests']} all Tier 3 = "
          f"{r['call_share']:.1%} (goal <= {GOAL_SHARE:.0%}); tokens {r['token_share']:.1%}; cost: the stand-in has no price")
    print(f"  Kendall tau between the agent rankings: {r['kendall_tau']} (goal >= {GOAL_TAU}); DS(0.01) adaptive {r['ds']['adaptive']:.4f}, "
          f"all Tier 3 {r['ds']['all_tier3']:.4f}")
    print(f"  judge cache: first compare asked the judge {asked} times (distinct requests); the same compare again asked "
          f"{asked_again} times ({again:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
