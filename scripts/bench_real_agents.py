"""Real agents: recorded frontier-model rollouts re-executed with dynsteer live, against ToolSandbox's own verdict.

Reads trajectory records (``RRRR-SSSS.json``: run number RRRR = 6 x model + 2 x repeat + method, scenario index
SSSS; see the records' README), re-executes every one with ``dynsteer rerun``'s machinery (scripted agent and user,
the clock at the recording's start, dynsteer live with the shipped blueprints and Tier 1), and prints per model and
overall, beside the paper's Table 1 and 3 figures where it has them:

* runs, and re-execution agreement: re-executions whose ToolSandbox similarity equals the recorded one (unhalted
  runs), halted runs whose every answer matched the recording up to the halt; with ``--native`` every recording is
  also played without dynsteer, and agreement is counted on all of them;
* mean dynsteer score and ToolSandbox similarity (the recorded one, of the whole rollout);
* stop rate by reason, and the saved progress of stopped runs (1 - moves played / moves recorded);
* halts of runs ToolSandbox scores >= 0.9 (should be none);
* faults missed: ToolSandbox <= 0.6, dynsteer >= 0.9 and no first error;
* false alarms: ToolSandbox 1.0, dynsteer < 0.8;
* AUROC of the dynsteer score for runs that end right (ToolSandbox >= 0.9) against runs that end wrong (<= 0.6);
* Spearman correlation of the two scores; DS(0.01) of both evaluators and the model pairs each separates (paired
  Wilcoxon over the scenarios every model ran, p < 0.01).

It measures and prints; it asserts nothing. ``--json FILE`` keeps the figures and every run's row.

    python scripts/bench_real_agents.py --records ../shared/realmodel/records -p 2
    python scripts/bench_real_agents.py --records DIR --native --json figures.json --keep OUT
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from statistics import fmean
from typing import Any

from dynsteer_hook.cli import configure_logging
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.toolsandbox.live.playing import RunOptions
from dynsteer_hook.toolsandbox.offline.metaeval import all_pairs, discriminability
from dynsteer_hook.toolsandbox.offline.rerun import label_transcripts, rerun_recordings
from dynsteer_hook.toolsandbox.offline.transcripts import Transcript, TranscriptError, find_transcripts

MODELS = ("deepseek-v4-flash", "deepseek-v4-pro", "qwen-plus-2025-12-01", "qwen3-max-2026-01-23")
# The paper's Table 1 (mean score per model, 1,527 runs each) and Table 3 (stops).
PAPER = {
    "default_mean": {"deepseek-v4-flash": 0.7880, "deepseek-v4-pro": 0.7718, "qwen-plus-2025-12-01": 0.7362, "qwen3-max-2026-01-23": 0.7368},
    "dynsteer_mean": {"deepseek-v4-flash": 0.7338, "deepseek-v4-pro": 0.7111, "qwen-plus-2025-12-01": 0.6615, "qwen3-max-2026-01-23": 0.6503},
    "stop_rate": {"deepseek-v4-flash": 0.1663, "deepseek-v4-pro": 0.1768, "qwen-plus-2025-12-01": 0.1853, "qwen3-max-2026-01-23": 0.2724},
    "ds_default": (0.0270, 5), "ds_dynsteer": (0.0500, 6), "saved_progress": 0.4541,
}
_RECORD = re.compile(r"^(\d{4})-(\d{4})$")


def model_of(source: str) -> tuple[str, int]:
    """The model and repeat of a record file named ``RRRR-SSSS.json`` (unknown names: the file's folder, repeat 0)."""
    path = Path(source)
    found = _RECORD.match(path.stem)
    if not found:
        return path.parent.name, 0
    run = int(found.group(1))
    return (MODELS[run // 6] if run // 6 < len(MODELS) else f"run{run // 6}"), (run % 6) // 2


def auroc(positives: list[float], negatives: list[float]) -> float | None:
    """Probability that a random positive scores above a random negative (ties count half)."""
    if not positives or not negatives:
        return None
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def spearman(x: list[float], y: list[float]) -> float | None:
    if len(x) < 3:
        return None
    from scipy.stats import spearmanr

    value = float(spearmanr(x, y).statistic)
    return None if math.isnan(value) else value


def rows_of(results: list[dict[str, Any]], jobs: dict[str, Transcript], native: dict[str, dict[str, Any]] | None) -> list[dict[str, Any]]:
    rows = []
    for r in results:
        transcript = jobs[r["name"]]
        model, repeat = model_of(transcript.source)
        d = r.get("dynsteer") or {}
        rec = r.get("recording") or {}
        stop = d.get("stop") or {}
        halted = bool(d.get("halted"))
        played, moves = rec.get("played", 0), rec.get("moves", 0)
        row = {
            "name": r["name"], "scenario": transcript.scenario, "model": model, "repeat": repeat, "source": transcript.source,
            "ts": transcript.similarity, "reexecuted": r.get("similarity"), "dynsteer": d.get("score"),
            "halted": halted, "stop": stop.get("reason"), "stop_cause": stop.get("cause"),
            "first_error": d.get("first_error"), "crashed": r.get("exception_type"),
            "reproduced": rec.get("reproduced"), "divergence": rec.get("divergence"),
            "saved": (1.0 - played / moves) if halted and moves else None,
        }
        if native is not None and r["name"] in native:
            n = native[r["name"]]
            row["native_reproduced"] = (n.get("recording") or {}).get("reproduced")
            row["native_divergence"] = (n.get("recording") or {}).get("divergence")
        rows.append(row)
    return rows


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r["dynsteer"] is not None and r["ts"] is not None and not r["crashed"]]
    unhalted = [r for r in scored if not r["halted"]]
    halted = [r for r in scored if r["halted"]]
    out: dict[str, Any] = {"runs": len(rows), "scored": len(scored), "crashed": sum(1 for r in rows if r["crashed"])}
    out["agreement_unhalted"] = (sum(1 for r in unhalted if r["reproduced"] is True), len(unhalted))
    out["halted_equal_to_halt"] = (sum(1 for r in halted if not r["divergence"]), len(halted))
    native = [r for r in rows if "native_reproduced" in r]
    if native:
        out["agreement_native"] = (sum(1 for r in native if r["native_reproduced"] is True), len(native))
    out["mean_dynsteer"] = fmean(r["dynsteer"] for r in scored) if scored else None
    out["mean_ts"] = fmean(r["ts"] for r in scored) if scored else None
    out["stops"] = dict(Counter(r["stop"] for r in halted))
    out["stop_rate"] = len(halted) / len(scored) if scored else None
    saved = [r["saved"] for r in halted if r["saved"] is not None]
    out["saved_progress"] = fmean(saved) if saved else None
    out["halts_of_good_runs"] = [r["name"] for r in halted if r["ts"] >= 0.9]
    out["faults_missed"] = [r["name"] for r in scored if r["ts"] <= 0.6 and r["dynsteer"] >= 0.9 and not r["first_error"]]
    out["false_alarms"] = [r["name"] for r in scored if r["ts"] >= 1.0 - 1e-9 and r["dynsteer"] < 0.8]
    out["auroc"] = auroc([r["dynsteer"] for r in scored if r["ts"] >= 0.9], [r["dynsteer"] for r in scored if r["ts"] <= 0.6])
    out["auroc_counts"] = (sum(1 for r in scored if r["ts"] >= 0.9), sum(1 for r in scored if r["ts"] <= 0.6))
    out["spearman"] = spearman([r["dynsteer"] for r in scored], [r["ts"] for r in scored])
    return out


def discrimination(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """DS(0.01) of both evaluators over the models, on (scenario, repeat) pairs every model ran."""
    out = {}
    for evaluator in ("dynsteer", "ts"):
        scores: dict[str, dict[tuple[str, int], float]] = defaultdict(dict)
        for r in rows:
            if r["dynsteer"] is not None and r["ts"] is not None and not r["crashed"]:
                scores[r["model"]][(r["scenario"], r["repeat"])] = float(r[evaluator])
        if len(scores) < 2:
            continue
        tests = all_pairs(scores, 0.01, 0.01)
        ds = discriminability({m: fmean(s.values()) for m, s in scores.items()}, tests)
        out[evaluator] = {"ds": ds.ds, "separated": ds.significant, "pairs": ds.pairs,
                          "tests": [(t.a, t.b, round(t.mean_a - t.mean_b, 4), t.p_value) for t in tests]}
    return out


def _share(pair: tuple[int, int]) -> str:
    return f"{pair[0]}/{pair[1]} ({pair[0] / pair[1]:.1%})" if pair[1] else "-"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(per: dict[str, dict[str, Any]], ds: dict[str, Any]) -> None:
    cols = list(per)
    def line(label: str, cells: list[str]) -> None:
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("| figure | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    line("runs", [str(per[c]["runs"]) for c in cols])
    line("re-execution: unhalted runs with the recorded similarity", [_share(per[c]["agreement_unhalted"]) for c in cols])
    line("re-execution: halted runs equal up to the halt", [_share(per[c]["halted_equal_to_halt"]) for c in cols])
    if all("agreement_native" in per[c] for c in cols):
        line("re-execution without dynsteer: recorded similarity reproduced", [_share(per[c]["agreement_native"]) for c in cols])
    line("mean dynsteer score (paper)", [f"{_num(per[c]['mean_dynsteer'])} ({_num(PAPER['dynsteer_mean'].get(c), 4)})" for c in cols])
    line("mean ToolSandbox similarity (paper)", [f"{_num(per[c]['mean_ts'])} ({_num(PAPER['default_mean'].get(c), 4)})" for c in cols])
    line("stop rate (paper)", [f"{_num(per[c]['stop_rate'])} ({_num(PAPER['stop_rate'].get(c), 4)})" for c in cols])
    line("stops by reason", [", ".join(f"{k} {v}" for k, v in sorted(per[c]["stops"].items())) or "-" for c in cols])
    line(f"saved progress of stopped runs (paper {PAPER['saved_progress']})", [_num(per[c]["saved_progress"]) for c in cols])
    line("halts of runs ToolSandbox scores >= 0.9", [str(len(per[c]["halts_of_good_runs"])) for c in cols])
    line("faults missed (TS <= 0.6, dynsteer >= 0.9, no first error)",
         [f"{len(per[c]['faults_missed'])} ({len(per[c]['faults_missed']) / max(1, per[c]['scored']):.1%})" for c in cols])
    line("false alarms (TS 1.0, dynsteer < 0.8)", [str(len(per[c]["false_alarms"])) for c in cols])
    line("AUROC, TS >= 0.9 vs <= 0.6 (runs)", [f"{_num(per[c]['auroc'])} {per[c]['auroc_counts']}" for c in cols])
    line("Spearman dynsteer vs TS", [_num(per[c]["spearman"]) for c in cols])
    for key, label, paper in (("dynsteer", "dynsteer", PAPER["ds_dynsteer"]), ("ts", "ToolSandbox", PAPER["ds_default"])):
        if key in ds:
            print(f"DS(0.01) {label}: {ds[key]['ds']:.4f}, {ds[key]['separated']} of {ds[key]['pairs']} pairs separated "
                  f"(paper {paper[0]:.4f}, {paper[1]} of 6)")
            for a, b, diff, p in ds[key]["tests"]:
                print(f"    {a} - {b}: {diff:+.4f}, p = {_num(p, 4)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=Path, nargs="+", required=True, help="record files or folders of them")
    ap.add_argument("-p", "--parallel", type=int, default=2)
    ap.add_argument("--native", action="store_true", help="also re-execute every recording without dynsteer (agreement on all)")
    ap.add_argument("--blueprints", type=Path, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep the rerun folders here (default: a temporary folder)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures and every run's row here")
    ap.add_argument("--limit", type=int, default=None, help="only the first N recordings (in file order)")
    ap.add_argument("--list", action="store_true", help="print every fault missed, halt of a good run and false alarm")
    args = ap.parse_args()
    configure_logging(False)
    transcripts, skipped = [], []
    for found in find_transcripts(args.records):
        (skipped if isinstance(found, TranscriptError) else transcripts).append(found)
    transcripts = transcripts[: args.limit] if args.limit else transcripts
    for problem in skipped:
        print(f"skipped: {problem}", file=sys.stderr)
    jobs = label_transcripts(transcripts)
    by_name = dict(jobs)
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_real_agents_"))
    start = time.perf_counter()
    live = RunOptions(agent="Scripted", user="Scripted", evaluator="dynsteer", blueprint_dir=args.blueprints, config=EvaluatorConfig(),
                      write_events=False)
    results = rerun_recordings(jobs, live, base / "live", args.parallel)
    native = None
    if args.native:
        plain = RunOptions(agent="Scripted", user="Scripted", evaluator="native")
        native = {r["name"]: r for r in rerun_recordings(jobs, plain, base / "native", args.parallel)}
    seconds = time.perf_counter() - start
    rows = rows_of(results, by_name, native)
    per = {m: figures([r for r in rows if r["model"] == m]) for m in sorted({r["model"] for r in rows}, key=lambda m: (m not in MODELS, MODELS.index(m) if m in MODELS else 0, m))}
    per["overall"] = figures(rows)
    ds = discrimination(rows)
    print(f"{len(rows)} recordings re-executed in {seconds:.0f} s ({len(skipped)} skipped); rerun folders in {base}")
    print_table(per, ds)
    if args.list:
        for key in ("faults_missed", "halts_of_good_runs", "false_alarms"):
            names = set(per["overall"][key])
            print(f"\n{key}:")
            for r in sorted((r for r in rows if r["name"] in names), key=lambda r: r["name"]):
                print(f"  {r['name']}: TS {r['ts']:.3f}, dynsteer {r['dynsteer']:.3f}, stop {r['stop']} {r['stop_cause'] or ''}, "
                      f"first error {(r['first_error'] or {}).get('cause')}")
        print("\nnot reproduced:")
        for r in rows:
            if r["reproduced"] is False or r.get("native_reproduced") is False:
                print(f"  {r['name']}: {r['divergence'] or r.get('native_divergence')}")
    if args.json:
        args.json.write_text(json.dumps({"figures": per, "discrimination": ds, "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
