"""Figures of the run page, printed side by side in one run:

1. writing index.html for ToolSandbox's 1,032 scenarios (names and categories from ToolSandbox when it is
   installed; outcomes, stops and first errors made up, with 300-character causes): seconds and size;
2. loading it in headless Chromium to the first sorted and filtered table (the URL fragment asks for a sort
   and two filters): seconds from navigation to the table drawn;
3. what report writing adds to a `dynsteer run`: the shipped clean solver played live over its scenarios
   (``--rollouts`` rollouts in all, in batches of one run each) with the report files and the run page, and the
   same batches with ``RunOptions(write_reports=False)``, interleaved; plus the seconds spent inside the writers.

    python scripts/bench_run_page.py                 # 1,032 rows, 60 rollouts per side
    python scripts/bench_run_page.py --rollouts 20 --repeats 3

Budgets (issue: a run a person can read): 1 is <= 2 s and <= 5 MB, 2 is <= 2 s, 3 is <= 1 %.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SCENARIOS = 1032
REASONS = ("fatal_minefield", "structural_failure", "repeated_failure", "low_score", "frontier_stagnation")


def _names() -> list[tuple[str, list[str]]]:
    """ToolSandbox's scenario names and categories (made-up ones when ToolSandbox is not installed)."""
    try:
        from dynsteer_hook.toolsandbox.scenarios import load_scenarios

        found = [(n, [str(c) for c in s.categories]) for n, s in load_scenarios(None).items()]
    except ImportError:
        found = []
    cats = ["SINGLE_TOOL_CALL", "MULTIPLE_TOOL_CALL", "STATE_DEPENDENCY", "CANONICALIZATION", "INSUFFICIENT_INFORMATION"]
    while len(found) < SCENARIOS:
        i = len(found)
        found.append((f"made_up_scenario_{i}_with_a_long_snake_case_name", [cats[i % 5], cats[(i * 7) % 5]]))
    return found[:SCENARIOS]


def _records(names: list[tuple[str, list[str]]]) -> list[dict[str, Any]]:
    rng = random.Random(7)
    out = []
    for name, cats in names:
        roll = rng.random()
        halted = 0.4 <= roll < 0.7
        outcome = "completed" if roll < 0.4 else "halted" if halted else "incomplete" if roll < 0.9 else "crashed"
        reason = rng.choice(REASONS)
        k, t = rng.randint(3, 60), rng.randint(1, 25)
        long = "call search_contacts({\"name\": \"Fredrik Thordendal\"}) " * 6
        fe = {"k": k, "t": t, "stage": "m2", "dimension": "correctness", "cause": "tool_error", "detail": long[:300]} if outcome != "completed" else None
        block = {"outcome": outcome, "crash": "ConnectionError: agent unreachable" if outcome == "crashed" else None, "halted": halted,
                 "stop": {"reason": reason, "k": k, "t": t, "anchor": "m1", "dimension": "safety", "cause": long[:300]} if halted else None,
                 "score": 0.0 if outcome == "crashed" else round(rng.random(), 4), "first_error": fe, "k": k, "t": t,
                 "scripted_steps_not_played": rng.randint(0, 9) if halted else None, "rollout_seconds": rng.random() * 30,
                 "report_written": True, "judge_calls": rng.randint(0, 12), "judge_cost_usd": rng.random() / 100}
        out.append({"name": name, "categories": cats, "traceback": None, "exception_type": "ConnectionError" if outcome == "crashed" else None,
                    "milestone_similarity": rng.random(), "minefield_similarity": 0, "similarity": rng.random(), "dynsteer": block})
    return out


def bench_page(out: Path, repeats: int) -> dict[str, Any]:
    """Seconds to write index.html for 1,032 scenarios (rows from their records, links checked, rendered, written)."""
    from dynsteer_hook.report.run_page import run_rows, write_run_page

    records = _records(_names())
    for r in records:
        page = out / "trajectories" / r["name"] / "dynsteer_report.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("<html><body>scenario</body></html>")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        path = write_run_page(out, "dynsteer run: 1,032 scenarios", run_rows(records))
        times.append(time.perf_counter() - start)
    return {"path": path, "seconds": statistics.median(times), "best": min(times), "bytes": path.stat().st_size,
            "rows": len(records), "halted": sum(1 for r in records if r["dynsteer"]["halted"])}


def bench_load(path: Path, repeats: int) -> dict[str, Any]:
    """Seconds from navigation to the first sorted and filtered table in headless Chromium (the browser already running)."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return {"skipped": "Chromium is not installed"}
    url = path.resolve().as_uri() + "#sort=-score&outcome=halted&q=_"
    times, inside, rows, errors = [], [], 0, []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            for _ in range(repeats):
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("pageerror", lambda e: errors.append(str(e)))
                start = time.perf_counter()
                page.goto(url)
                page.wait_for_selector("body[data-ready] #rows tr")
                times.append(time.perf_counter() - start)
                inside.append(page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
                rows = page.locator("#rows tr").count()
                page.close()
        finally:
            browser.close()
    return {"seconds": statistics.median(times), "best": min(times), "browser": statistics.median(inside), "rows_shown": rows,
            "errors": errors}


class _Timed:
    """A writer wrapped to add up the seconds spent in it."""

    def __init__(self, fn: Any) -> None:
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


def bench_run(rollouts: int, base: Path) -> dict[str, Any]:
    """A live run of the clean solver with and without report writing, interleaved batch by batch (one process)."""
    import dynsteer_hook.report.writer as writer
    import dynsteer_hook.toolsandbox.live.hook as hook
    import dynsteer_hook.toolsandbox.live.runner as runner
    from dynsteer_hook.toolsandbox.live.runner import RunOptions, load_scenarios, run_scenarios

    script = ROOT / "dynsteer_hook" / "data" / "scripts" / "clean_solver.json"
    names = sorted(k for k in json.loads(script.read_text()) if not k.startswith("_"))
    scenarios = load_scenarios(names)
    reports, pages = _Timed(hook.write_run_report), _Timed(runner.write_run_page)
    hook.write_run_report, runner.write_run_page = reports, pages  # type: ignore[assignment]
    html, markdown = _Timed(writer.render_run), _Timed(writer.render_markdown)
    writer.render_run, writer.render_markdown = html, markdown  # type: ignore[assignment]
    seconds = {True: 0.0, False: 0.0}
    batches = max(1, rollouts // len(names))
    run_scenarios(scenarios, RunOptions(agent="Scripted", user="Scripted", script=script), base / "warm-up", 1)  # imports, caches
    reports.seconds = pages.seconds = html.seconds = markdown.seconds = 0.0
    for i in range(batches):
        for write in ((True, False) if i % 2 == 0 else (False, True)):
            start = time.perf_counter()
            run_scenarios(scenarios, RunOptions(agent="Scripted", user="Scripted", script=script, write_reports=write), base / f"{i}-{write}", 1)
            seconds[write] += time.perf_counter() - start
    return {"rollouts": batches * len(names), "with": seconds[True], "without": seconds[False],
            "in_writers": reports.seconds + pages.seconds, "in_page": pages.seconds, "rendering": html.seconds + markdown.seconds}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rollouts", type=int, default=60, help="rollouts per side of the run comparison (0: skip it)")
    ap.add_argument("--repeats", type=int, default=5, help="repeats of the page and load timings (median)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        page = bench_page(Path(tmp) / "page", args.repeats)
        load = bench_load(page["path"], args.repeats)
        run = bench_run(args.rollouts, Path(tmp) / "runs") if args.rollouts else None
    print(f"{'figure':<58} {'measured':>16} {'budget':>10}")
    print(f"{'write index.html, ' + str(page['rows']) + ' scenarios (median; best)':<58} "
          f"{page['seconds']:>7.3f} s; {page['best']:.3f} {'<= 2 s':>10}")
    print(f"{'  its size':<58} {page['bytes'] / 1e6:>14.2f} MB {'<= 5 MB':>10}")
    if "skipped" in load:
        print(f"{'load in headless Chromium':<58} {'skipped: ' + load['skipped']:>16}")
    else:
        print(f"{'load to the first sorted, filtered table (median; best)':<58} "
              f"{load['seconds']:>7.3f} s; {load['best']:.3f} {'<= 2 s':>10}")
        print(f"{'  the browser clock, navigation to load end (median)':<58} {load['browser']:>7.3f} s {'':>10}")
        print(f"{'  rows shown (halted, matching _) / page errors':<58} {load['rows_shown']:>11} / {len(load['errors'])}")
    if run is not None:
        added = run["with"] / run["without"] - 1
        share = run["in_writers"] / run["with"]
        print(f"{'dynsteer run, ' + str(run['rollouts']) + ' rollouts: with reports / without':<58} "
              f"{run['with']:>6.2f} s / {run['without']:.2f} s")
        print(f"{'  report writing adds (wall clock, side by side)':<58} {added:>15.2%} {'<= 1 %':>10}")
        print(f"{'  seconds inside the writers, share of the run':<58} {run['in_writers']:>6.3f} s = {share:.2%} {'<= 1 %':>10}")
        print(f"{'  of which rendering the scenario pages (HTML, Markdown)':<58} {run['rendering']:>6.3f} s = {run['rendering'] / run['with']:.2%}")
        print(f"{'  of which the run page':<58} {run['in_page']:>6.3f} s = {run['in_page'] / run['with']:.2%}")
        print(f"{'  the rest: the files written, each synced to disk':<58} "
              f"{run['in_writers'] - run['rendering'] - run['in_page']:>6.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
