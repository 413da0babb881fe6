"""Figures of ``dynsteer diff``: two synthetic folders of 1,032 scenarios each (ToolSandbox's count), timed as a user runs
the command (a fresh ``dynsteer diff`` process, from start to exit, with diff.html, diff.md and diff.json written).

Both kinds of folder are measured: two replays (``replay_summary.json``, reports one run folder down) and two runs
(``result_summary.json`` with dynsteer blocks). Each scenario gets a page under ``trajectories/``, so every row is
linked; the second folder changes about a third of the scores, outcomes and stops of the first, and each side holds a
few scenarios the other does not.

    python scripts/bench_diff.py                  # 1,032 scenarios per side, 5 repeats
    python scripts/bench_diff.py --repeats 3 --keep /tmp/diffbench

Budget (issue 32): a diff of two 1,032-scenario replays written in <= 2 s. The page's load in headless Chromium (to the
first sorted, filtered table) is measured too, when Playwright and Chromium are installed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = 1032
ONE_SIDED = 6
REASONS = ("fatal_minefield", "structural_failure", "repeated_failure", "low_score", "frontier_stagnation")
CATS = ("SINGLE_TOOL_CALL", "MULTIPLE_TOOL_CALL", "STATE_DEPENDENCY", "CANONICALIZATION", "INSUFFICIENT_INFORMATION")
PAGE = "<!DOCTYPE html><html><body>scenario page</body></html>"


def _scenario(rng: random.Random, i: int) -> dict[str, Any]:
    """One scenario's result: outcome, score, stop and first error with 300-character causes, as a long run has them."""
    roll = rng.random()
    outcome = "completed" if roll < 0.45 else "halted" if roll < 0.7 else "incomplete" if roll < 0.95 else "crashed"
    k, t = rng.randint(3, 60), rng.randint(1, 25)
    long = "call search_contacts({\"name\": \"Fredrik Thordendal\"}) " * 6
    return {
        "name": f"scenario_{i:04d}_send_message_with_contact_content_cellular_off",
        "categories": [CATS[i % 5], CATS[(i * 7) % 5]],
        "outcome": outcome,
        "score": 0.0 if outcome == "crashed" else round(rng.random(), 4),
        "similarity": round(rng.random(), 4),
        "stop": {"reason": rng.choice(REASONS), "k": k, "t": t, "anchor": "m1", "dimension": "safety", "cause": long[:300]}
        if outcome == "halted" else None,
        "first_error": {"k": k, "t": t, "stage": "m2", "dimension": "correctness", "cause": "tool_error", "detail": long[:300]}
        if outcome != "completed" else None,
    }


def _changed(rng: random.Random, s: dict[str, Any]) -> dict[str, Any]:
    return {**_scenario(rng, 0), "name": s["name"], "categories": s["categories"]} if rng.random() < 0.33 else s


def _sides(seed: int = 7) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    before = [_scenario(rng, i) for i in range(SCENARIOS)]
    after = [_changed(rng, s) for s in before[ONE_SIDED:]] + [_scenario(rng, SCENARIOS + i) for i in range(ONE_SIDED)]
    return before, after


def _page(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PAGE, encoding="utf-8")


def write_replay(folder: Path, scenarios: list[dict[str, Any]], run: str = "agent_GPT_4_o_user_GPT_4_o_01_01_2026_00_00_00") -> Path:
    """A replay of one recorded run: ``replay_summary.json`` at the top, the reports one run folder down."""
    per = []
    for s in scenarios:
        rel = f"{run}/trajectories/{s['name']}"
        per.append({"run": f"/recordings/{run}", "scenario": s["name"], "categories": s["categories"], "outcome": s["outcome"],
                    "score": s["score"], "native_similarity": s["similarity"], "native_milestone_similarity": s["similarity"],
                    "native_minefield_similarity": 0, "halted": s["stop"] is not None, "stop": s["stop"],
                    "virtual_stop": {"saved_batches": 2, "stop_progress": 0.5, "saved_progress": 0.5} if s["stop"] else None,
                    "batches": 4, "t": 3, "first_error": s["first_error"], "recorded_live_stop": None,
                    "judge_usage": {"calls_by_tier": {"1": 4}, "cost_usd": 0.0}, "seconds": 0.2, "folder": rel, "incomplete_logs": [],
                    "report_error": None})
        _page(folder / rel / "dynsteer_report.html")
    (folder / "replay_summary.json").write_text(json.dumps({"replayed": len(per), "skipped": 0, "per_scenario": per,
                                                            "skipped_scenarios": []}, indent=2), encoding="utf-8")
    return folder


def write_run(folder: Path, scenarios: list[dict[str, Any]]) -> Path:
    """A run: ``result_summary.json`` with a dynsteer block per scenario, the reports under ``trajectories/``."""
    entries = []
    for s in scenarios:
        crashed = s["outcome"] == "crashed"
        block = {"outcome": s["outcome"], "crash": "ConnectionError: agent unreachable" if crashed else None, "halted": s["stop"] is not None,
                 "stop": s["stop"], "score": s["score"], "settled": [], "unsettled": [], "first_error": s["first_error"],
                 "stage_dimensions_by_tier": {"1": 4}, "stages": 2, "k": 9, "t": 4, "rows_seen": 9, "max_messages": 30,
                 "scripted_steps_not_played": None, "rollout_seconds": 3.0, "evaluator_seconds": 0.01, "blueprint": "ab",
                 "blueprint_stale": False, "incomplete_logs": [], "report_written": not crashed, "report_error": None}
        entries.append({"name": s["name"], "categories": s["categories"], "traceback": None, "exception_type": "ConnectionError" if crashed else None,
                        "milestone_similarity": s["similarity"], "minefield_similarity": 0, "similarity": s["similarity"], "turn_count": 6,
                        "dynsteer": block})
        if not crashed:
            _page(folder / "trajectories" / s["name"] / "dynsteer_report.html")
    (folder / "result_summary.json").write_text(json.dumps({"per_scenario_results": entries, "category_aggregated_results": {},
                                                            "git_sha": None}, indent=2), encoding="utf-8")
    return folder


def time_diff(a: Path, b: Path, out: Path, repeats: int) -> dict[str, Any]:
    """Seconds of a fresh ``dynsteer diff`` process, start to exit (median and best of ``repeats``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))}
    command = [sys.executable, "-m", "dynsteer_hook.cli", "diff", str(a), str(b), "-o", str(out)]
    subprocess.run(command, env=env, capture_output=True, check=True)  # once to fill the template cache, as any later run finds it
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"dynsteer diff failed ({done.returncode}): {done.stderr}")
    doc = json.loads((out / "diff.json").read_text(encoding="utf-8"))
    return {"seconds": statistics.median(times), "best": min(times), "shared": doc["totals"]["shared"],
            "worse": doc["totals"]["worse"], "html_bytes": (out / "diff.html").stat().st_size,
            "linked": sum(1 for p in doc["per_scenario"] if p["before"]["href"] and p["after"]["href"])}


def time_load(page: Path, repeats: int) -> dict[str, Any]:
    """Seconds from navigation to the first sorted and filtered table of diff.html in headless Chromium (when installed)."""
    import shutil

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"skipped": "playwright is not installed"}
    if chromium is None:
        return {"skipped": "Chromium is not installed"}
    url = page.resolve().as_uri() + "#sort=-delta&change=worse"
    times, errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            for _ in range(repeats):
                tab = browser.new_page(viewport={"width": 1280, "height": 900})
                tab.on("pageerror", lambda e: errors.append(str(e)))
                start = time.perf_counter()
                tab.goto(url)
                tab.wait_for_selector("body[data-ready] #rows tr")
                times.append(time.perf_counter() - start)
                tab.close()
        finally:
            browser.close()
    return {"seconds": statistics.median(times), "errors": errors}


def main(argv: list[str] | None = None) -> int:
    """Build the folders, time the command on both kinds, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per kind (default 5)")
    parser.add_argument("--keep", type=Path, default=None, help="build the folders here and keep them (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        before, after = _sides()
        for kind, write in (("replays", write_replay), ("runs", write_run)):
            a, b = write(base / kind / "before", before), write(base / kind / "after", after)
            figures = time_diff(a, b, base / kind / "diff", args.repeats)
            print(f"dynsteer diff of two {SCENARIOS:,}-scenario {kind}: {figures['seconds']:.3f} s median, {figures['best']:.3f} s best "
                  f"of {args.repeats} (process start to exit; budget 2 s); {figures['shared']} shared, {figures['worse']} worse, "
                  f"{figures['linked']} linked both ways; diff.html {figures['html_bytes'] / 1e6:.2f} MB")
        load = time_load(base / "replays" / "diff" / "diff.html", args.repeats)
        if "skipped" in load:
            print(f"diff.html in headless Chromium: skipped ({load['skipped']})")
        else:
            print(f"diff.html of the replays in headless Chromium, navigation to the first sorted, filtered table: {load['seconds']:.3f} s "
                  f"median (budget 2 s); page errors: {load['errors'] or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
