"""Small run and replay folders written by the tests themselves, as ``dynsteer run`` and ``dynsteer replay`` write them
(the summaries' fields a diff reads, and a scenario page per scenario), without playing ToolSandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PAGE = "<!DOCTYPE html><html><body><h1>scenario page</h1></body></html>"


def stop(reason: str = "fatal_minefield", k: int = 5, t: int = 2, cause: str = "blocked remove_contact") -> dict[str, Any]:
    """A stop brief as the summaries keep it."""
    return {"reason": reason, "k": k, "t": t, "anchor": "<s0>", "dimension": "safety", "cause": cause, "minefield": None, "tool": None}


def first_error(cause: str = "tool_error", detail: str = "wrong argument", k: int = 5, t: int = 2) -> dict[str, Any]:
    """A first-error brief as the summaries keep it."""
    return {"k": k, "t": t, "stage": "m1", "dimension": "correctness", "cause": cause, "detail": detail}


def run_entry(name: str, score: float, outcome: str = "completed", *, halted: bool = False, stop_: dict[str, Any] | None = None,
              fe: dict[str, Any] | None = None, similarity: float | None = 1.0, crash: str | None = None,
              categories: tuple[str, ...] = ("SINGLE_TOOL_CALL",)) -> dict[str, Any]:
    """One entry of ``result_summary.json`` with its dynsteer block."""
    block = {"outcome": outcome, "crash": crash, "halted": halted, "stop": stop_, "score": score, "settled": [], "unsettled": [],
             "first_error": fe, "stage_dimensions_by_tier": {}, "stages": 1, "k": 6, "t": 3, "rows_seen": 6, "max_messages": 30,
             "scripted_steps_not_played": None, "rollout_seconds": 1.0, "evaluator_seconds": 0.01, "blueprint": "ab",
             "blueprint_stale": False, "incomplete_logs": [], "report_written": crash is None, "report_error": None}
    return {"name": name, "categories": list(categories), "traceback": f"Traceback ...\n{crash}" if crash else None,
            "exception_type": crash.split(":")[0] if crash else None, "milestone_similarity": similarity, "minefield_similarity": 0,
            "similarity": similarity, "turn_count": 6, "dynsteer": block}


def write_run(folder: Path, entries: list[Any], *, pages: bool = True, extra: dict[str, Any] | None = None) -> Path:
    """A run folder: ``result_summary.json``, ``index.html`` and a scenario page per entry with a safe folder name."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result_summary.json").write_text(json.dumps({"per_scenario_results": entries, "category_aggregated_results": {},
                                                            "git_sha": None, **(extra or {})}), encoding="utf-8")
    (folder / "index.html").write_text("<!DOCTYPE html><html><body>run page</body></html>", encoding="utf-8")
    for e in entries:
        name = e.get("name") if isinstance(e, dict) else None
        if pages and isinstance(name, str) and name and "/" not in name and name not in (".", "..") and (e.get("dynsteer") or {}).get("report_written"):
            page = folder / "trajectories" / name / "dynsteer_report.html"
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(PAGE, encoding="utf-8")
    return folder


def replay_entry(name: str, score: float, outcome: str = "completed", *, run: str = "agent_x", folder: str | None = None,
                 stop_: dict[str, Any] | None = None, fe: dict[str, Any] | None = None, similarity: float | None = 1.0) -> dict[str, Any]:
    """One entry of ``replay_summary.json``'s ``per_scenario``."""
    return {"run": f"/recordings/{run}", "scenario": name, "categories": ["SINGLE_TOOL_CALL"], "outcome": outcome, "score": score,
            "native_similarity": similarity, "native_milestone_similarity": similarity, "native_minefield_similarity": 0,
            "halted": stop_ is not None, "stop": stop_, "virtual_stop": None if stop_ is None else {"saved_batches": 1},
            "batches": 3, "t": 3, "first_error": fe, "recorded_live_stop": None, "judge_usage": {}, "seconds": 0.1,
            "folder": folder if folder is not None else f"{run}/trajectories/{name}", "incomplete_logs": [], "report_error": None}


def write_replay(folder: Path, entries: list[dict[str, Any]]) -> Path:
    """A replay folder: ``replay_summary.json`` over all runs, each run's own, and the pages its entries' folders name."""
    folder.mkdir(parents=True, exist_ok=True)
    summary = {"replayed": len(entries), "skipped": 0, "per_scenario": entries, "skipped_scenarios": []}
    (folder / "replay_summary.json").write_text(json.dumps(summary), encoding="utf-8")
    for e in entries:
        page = folder / e["folder"] / "dynsteer_report.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(PAGE, encoding="utf-8")
        run = e["folder"].split("/")[0]
        mine = [x for x in entries if x["folder"].split("/")[0] == run]
        (folder / run / "replay_summary.json").write_text(json.dumps({**summary, "per_scenario": mine}), encoding="utf-8")
    return folder
