"""ToolSandbox's similarity with and without dynsteer's per-snapshot views, side by side: times and equality.

Plays rollouts the way ``dynsteer run`` does (scripted agents on real scenarios, into a temporary
folder) and, when ToolSandbox comes to evaluate each played execution context, evaluates that
very context twice with ToolSandbox's own ``Evaluation.evaluate``: alone ("plain"), and through
dynsteer's ``toolsandbox.similarity.evaluate`` with every database view computed once per
snapshot and no budget ("views"); the run goes on with the views' result. It prints each
evaluation's seconds, the speed-up, and whether the two results are bit-identical (every
mapping, similarity and turn count, floats compared by their exact bits). It measures and never
asserts. ``--runs`` evaluates the contexts of recorded ToolSandbox run folders instead (read back
from ``execution_context.json``: tables read back whole are faster to filter than the live ones,
grown a row at a time, so their times are lower than a live run's).

Cases: the shipped scripts by name (each on the scenarios it covers), and ``parallel``: one agent
turn of ``--calls`` parallel calls (dynsteer refuses the calls past its cap of 32, as live).
``--evaluator native`` plays them without dynsteer, so that nothing halts them (the looping
agent's 14 turns). Run it as the command line runs (one polars thread, ``POLARS_MAX_THREADS=1``,
which it sets unless given).

    python scripts/bench_similarity.py                                  # every shipped script and a 1000-call turn
    python scripts/bench_similarity.py --cases looping_agent --evaluator native   # its 14 turns, no halt
    python scripts/bench_similarity.py --cases parallel --calls 200
    python scripts/bench_similarity.py --cases looping_agent --mode views   # one way only, to time whole processes
    python scripts/bench_similarity.py --runs RUN_DIR [RUN_DIR ...]     # recorded ToolSandbox run folders instead
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("POLARS_MAX_THREADS", "1")  # as the command line sets it, before polars is imported

import dynsteer_hook.toolsandbox.similarity as similarity
from dynsteer_hook.data import shipped_scripts
from dynsteer_hook.logs import configure_logging
from dynsteer_hook.toolsandbox.live.runner import RunOptions, load_scenarios, run_scenarios
from dynsteer_hook.toolsandbox.offline.recording import load_recording
from dynsteer_hook.toolsandbox.roles.scripted import load_script
from dynsteer_hook.toolsandbox.similarity import SimilarityOptions

PARALLEL_SCENARIO = "send_message_with_contact_content_cellular_off_insufficient_information"
MODES = ("both", "plain", "views")


def _canonical(value: Any) -> Any:
    """A value with every float as its exact bits (``float.hex``), mappings as sorted pairs: equal iff bit-identical."""
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, dict):
        return tuple(sorted((repr(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    return value


def _result(evaluation: Any) -> dict[str, Any]:
    return {key: getattr(evaluation, key) for key in ("milestone_mapping", "minefield_mapping", "milestone_similarity",
                                                      "minefield_similarity", "similarity", "turn_count")}


class Measure:
    """Both evaluations of each context ToolSandbox comes to evaluate, side by side (see the module's text)."""

    def __init__(self, mode: str, as_json: bool) -> None:
        self.mode = mode
        self.as_json = as_json
        self.case = ""
        self.rows: list[dict[str, Any]] = []
        self._views = similarity.evaluate

    def evaluate(self, evaluation: Any, context: Any, max_turn_count: int, options: Any = None, control: Any = None,
                 scenario: str = "") -> Any:
        row: dict[str, Any] = {"case": self.case, "scenario": scenario, "messages": context.max_sandbox_message_index + 1}
        outcomes: dict[str, Any] = {}
        if self.mode in ("both", "plain"):
            start = time.perf_counter()
            outcomes["plain"] = evaluation.evaluate(execution_context=context, max_turn_count=max_turn_count)
            row["plain_s"] = round(time.perf_counter() - start, 3)
        if self.mode in ("both", "views"):
            start = time.perf_counter()
            outcomes["views"] = self._views(evaluation, context, max_turn_count, SimilarityOptions(budget=None))
            row["views_s"] = round(time.perf_counter() - start, 3)
        for way, outcome in outcomes.items():
            row[f"{way}_similarity"] = outcome.similarity
        if len(outcomes) == 2:
            row["identical"] = _canonical(_result(outcomes["plain"])) == _canonical(_result(outcomes["views"]))
            row["speedup"] = round(row["plain_s"] / row["views_s"], 1) if row["views_s"] else None
        self.rows.append(row)
        self._print(row)
        return outcomes.get("views", outcomes.get("plain"))

    def _print(self, row: dict[str, Any]) -> None:
        if self.as_json:
            print(json.dumps(row), flush=True)
            return
        times = "  ".join(f"{way} {row[way + '_s']:8.3f} s" for way in ("plain", "views") if way + "_s" in row)
        same = "" if "identical" not in row else f"  x{row['speedup']}  {'bit-identical' if row['identical'] else 'DIFFERENT'}"
        similar = row.get("views_similarity", row.get("plain_similarity"))
        print(f"{row['case']:20} {row['scenario'][:70]:70} {row['messages']:5} msgs  {times}{same}  similarity {similar}", flush=True)

    def summary(self) -> None:
        for way in ("plain", "views"):
            spent = [r[way + "_s"] for r in self.rows if way + "_s" in r]
            if spent:
                print(f"{way}: {len(spent)} evaluations, total {sum(spent):.3f} s, median {statistics.median(spent):.3f} s")
        checked = [r["identical"] for r in self.rows if "identical" in r]
        if checked:
            print(f"bit-identical: {sum(checked)} of {len(checked)}")


def _play(measure: Measure, cases: list[str], calls: int, work: Path, evaluator: str, parallel: str) -> None:
    """Play every case as `dynsteer run` plays it, ToolSandbox's evaluation of each rollout measured by ``measure``."""
    scripts = shipped_scripts()
    for case in cases:
        if case == "parallel":
            script = work / "parallel.json"
            call = {"name": "get_cellular_service_status", "arguments": {}}
            script.write_text(json.dumps({parallel: {"agent": [{"tool_calls": [call] * calls}], "user": []}}), encoding="utf-8")
        else:
            script = scripts[case]
        names = sorted(load_script(script))
        scenarios = load_scenarios(names)
        measure.case = case
        for name in names:  # one at a time, so that each measured evaluation knows its scenario
            options = RunOptions(agent="Scripted", user="Scripted", evaluator=evaluator, script=script)
            similarity.evaluate = lambda *a, _name=name, **k: measure.evaluate(*a, scenario=_name, **k)  # type: ignore[assignment]
            try:
                [result] = run_scenarios({name: scenarios[name]}, options, work / case / name, 1)
            finally:
                similarity.evaluate = measure._views  # type: ignore[method-assign]
            if result.get("exception_type") or result.get("similarity_unknown"):
                print(f"{case} {name}: {result.get('exception_type') or result['similarity_unknown']}", file=sys.stderr)


def _recorded(measure: Measure, runs: list[Path]) -> None:
    """Measure ToolSandbox's evaluation of every scenario of recorded run folders (contexts read back from their files)."""
    for run in runs:
        summary = json.loads((run / "result_summary.json").read_text(encoding="utf-8"))
        measure.case = run.name
        for result in summary["per_scenario_results"]:
            name = result["name"]
            scenario = load_scenarios([name])[name]
            measure.evaluate(scenario.evaluation, load_recording(run, name, result).context, scenario.max_messages, scenario=name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=[*shipped_scripts(), "parallel"],
                        help="shipped script names and/or 'parallel' (default: all of them)")
    parser.add_argument("--calls", type=int, default=1000, help="parallel calls in the 'parallel' case's one turn (default 1000)")
    parser.add_argument("--parallel-scenario", default=PARALLEL_SCENARIO, help=f"the 'parallel' case's scenario (default {PARALLEL_SCENARIO})")
    parser.add_argument("--runs", nargs="+", type=Path, default=None, help="recorded ToolSandbox run folders to evaluate instead")
    parser.add_argument("--mode", choices=MODES, default="both", help="evaluate both ways (default), or only one (for timing processes)")
    parser.add_argument("--evaluator", choices=("dynsteer", "native"), default="dynsteer",
                        help="play with dynsteer live (its halts cut looping agents short) or natively (every scripted turn)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per rollout instead of a table")
    args = parser.parse_args()
    unknown = [c for c in args.cases if c != "parallel" and c not in shipped_scripts()]
    if unknown:
        parser.error(f"unknown case(s) {unknown}: pass shipped script names ({', '.join(shipped_scripts())}) or 'parallel'")
    configure_logging(False)

    measure = Measure(args.mode, args.json)
    with tempfile.TemporaryDirectory(prefix="bench_similarity_") as tmp:
        if args.runs:
            _recorded(measure, args.runs)
        else:
            _play(measure, args.cases, args.calls, Path(tmp), args.evaluator, args.parallel_scenario)
    if not args.json:
        measure.summary()
    return 0

if __name__ == "__main__":
    sys.exit(main())
