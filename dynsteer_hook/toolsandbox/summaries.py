"""What a run tells about its scenarios: the ``dynsteer`` block of each result, the counts
ToolSandbox's CLI prints before a run, its per-category means, and ``dynsteer_summary.json``.

A result carrying ``interrupted`` (Ctrl-C) is not a ToolSandbox result: it stays out of
``per_scenario_results`` and of the category means, and both summaries list it under
``interrupted`` (in flight: its report is marked interrupted; not started: nothing was
written for it).
"""

from __future__ import annotations

import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from dynsteer_hook.report import Report
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.execution_context import ScenarioCategories
from tool_sandbox.common.scenario import Scenario

IN_FLIGHT = "in_flight"
NOT_STARTED = "not_started"

_AUGMENTED = {
    ScenarioCategories.TOOL_NAME_SCRAMBLED,
    ScenarioCategories.TOOL_DESCRIPTION_SCRAMBLED,
    ScenarioCategories.ARG_DESCRIPTION_SCRAMBLED,
    ScenarioCategories.ARG_TYPE_SCRAMBLED,
    ScenarioCategories.ARG_NAME_SCRAMBLED,
}


def dynsteer_block(report: Report, *, rows_seen: int, max_messages: int, steps_not_played: int | None, seconds: float,
                   evaluator_seconds: float, report_error: str | None) -> dict[str, Any]:
    """The ``dynsteer`` entry of one scenario's result in ``result_summary.json``."""
    tiers: Counter[str] = Counter()
    for st in report.stages:
        for use in st.tiers.values():
            tiers[str(use.used)] += 1
    stop = report.stop
    return {
        "outcome": report.outcome,
        "crash": report.crash,
        "halted": report.halted,
        "stop": None if stop is None else {
            "reason": stop.reason, "k": stop.k, "t": stop.t, "anchor": stop.anchor, "dimension": stop.dimension,
        },
        "score": report.score,
        "settled": report.settled,
        "unsettled": report.unsettled,
        "first_error": None if report.first_error is None else {"k": report.first_error.k, "t": report.first_error.t},
        "stage_dimensions_by_tier": dict(sorted(tiers.items())),
        "stages": len(report.stages),
        "k": report.k,
        "t": report.t,
        "rows_seen": rows_seen,
        "max_messages": max_messages,
        "scripted_steps_not_played": steps_not_played,
        "rollout_seconds": round(seconds, 4),
        "evaluator_seconds": round(evaluator_seconds, 4),
        "blueprint": report.blueprint.get("sha256_16"),
        "blueprint_stale": report.blueprint_stale,
        "incomplete_logs": [log.model_dump() for log in report.incomplete_logs],
        "report_written": report_error is None,
        "report_error": report_error,
    }


def scenario_counts(name_to_scenario: dict[str, Scenario]) -> tuple[Counter[str], Counter[str]]:
    """Scenarios per category and per necessary tool, as ToolSandbox's CLI prints them before a run.

    Necessary tools are the allow list of each undistracted scenario, counted once per tool
    augmentation present in the selection.
    """
    categories: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    augmentations: set[str] = set()
    tracked = _AUGMENTED | {
        ScenarioCategories.NO_DISTRACTION_TOOLS, ScenarioCategories.THREE_DISTRACTION_TOOLS,
        ScenarioCategories.TEN_DISTRACTION_TOOLS, ScenarioCategories.ALL_TOOLS_AVAILABLE,
    }
    for scenario in name_to_scenario.values():
        cats = set(scenario.categories)
        for cat in scenario.categories:
            if not (cat == ScenarioCategories.THREE_DISTRACTION_TOOLS and cats & _AUGMENTED):
                categories[str(cat)] += 1
        categories["ALL_CATEGORIES"] += 1
        if ScenarioCategories.NO_DISTRACTION_TOOLS in cats:
            tools.update(scenario.starting_context.tool_allow_list or [])
        augmentations |= {str(c) for c in cats & tracked}
    return categories, Counter({t: n * len(augmentations) for t, n in tools.items()})


def category_summary(results: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean similarity and turn count per scenario category (augmented variants are not
    counted again under THREE_DISTRACTION_TOOLS), and over all categories."""
    acc: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        cats = set(r["categories"])
        for cat in r["categories"]:
            if cat == ScenarioCategories.THREE_DISTRACTION_TOOLS and cats & _AUGMENTED:
                continue
            acc[str(cat)]["similarity"].append(r["similarity"])
            acc[str(cat)]["turn_count"].append(r["turn_count"])
        acc["ALL_CATEGORIES"]["similarity"].append(r["similarity"])
        acc["ALL_CATEGORIES"]["turn_count"].append(r["turn_count"])
    return {cat: {k: sum(v) / len(v) for k, v in vals.items()} for cat, vals in acc.items()}


def _git_sha() -> str | None:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--exit-code", "--quiet"], capture_output=True).returncode == 1
    except (OSError, subprocess.CalledProcessError):
        return None
    return sha + (" + local changes" if dirty else "")


def interruption(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Which scenarios a Ctrl-C stopped while playing and which it kept from starting (None: no interruption)."""
    in_flight = sorted(r["name"] for r in results if r.get("interrupted") == IN_FLIGHT)
    not_started = sorted(r["name"] for r in results if r.get("interrupted") == NOT_STARTED)
    if not in_flight and not not_started:
        return None
    return {"finished": sum(1 for r in results if not r.get("interrupted")), IN_FLIGHT: in_flight, NOT_STARTED: not_started}


def result_summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """ToolSandbox's ``result_summary.json`` over the finished scenarios, plus the interruption if any."""
    finished = [r for r in results if not r.get("interrupted")]
    summary: dict[str, Any] = {
        "per_scenario_results": finished,
        "category_aggregated_results": category_summary(finished),
        "git_sha": _git_sha(),
    }
    stopped = interruption(results)
    if stopped is not None:
        summary["interrupted"] = stopped | {"in_flight_results": [r for r in results if r.get("interrupted") == IN_FLIGHT]}
    return summary


def dynsteer_summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-run summary of the dynsteer evaluator over all scenarios."""
    halts: Counter[str] = Counter()
    tiers: Counter[str] = Counter()
    outcome: Counter[str] = Counter()
    steps_saved = 0
    per: list[dict[str, Any]] = []
    blocks = [(r, r["dynsteer"]) for r in results if r.get("dynsteer") is not None]
    for r, d in blocks:
        outcome[d["outcome"]] += 1
        if d["halted"]:
            halts[d["stop"]["reason"]] += 1
            steps_saved += d["scripted_steps_not_played"] or 0
        for tier, n in d["stage_dimensions_by_tier"].items():
            tiers[tier] += n
        per.append({
            "name": r["name"],
            "outcome": d["outcome"],
            "crash": d.get("crash"),
            "stop": d["stop"],
            "score": d["score"],
            "similarity": r.get("similarity"),
            "crashed": r.get("exception_type") is not None,
            "k": d["k"],
            "t": d["t"],
            "blueprint_stale": d.get("blueprint_stale", False),
            "incomplete_logs": d.get("incomplete_logs", []),
            "report_written": d.get("report_written", True),
        })
    judged = [p for p in per if not p["crashed"] and p["outcome"] != "interrupted"]
    cached = [d["judge_cache"] for _, d in blocks if "judge_cache" in d]
    summary = {
        "scenarios": len(per),
        "crashed": sum(1 for p in per if p["crashed"]),
        "outcomes": dict(sorted(outcome.items())),
        "halted": sum(halts.values()),
        "halts_by_reason": dict(sorted(halts.items())),
        "stage_dimensions_by_tier": dict(sorted(tiers.items())),
        "mean_score": round(sum(p["score"] for p in judged) / len(judged), 6) if judged else None,
        "scripted_steps_not_played": steps_saved,
        "evaluator_seconds": round(sum(d["evaluator_seconds"] for _, d in blocks), 4),
        "rollout_seconds": round(sum(d["rollout_seconds"] for _, d in blocks), 4),
        "stale_blueprints": sorted(p["name"] for p in per if p["blueprint_stale"]),
        "incomplete_files": sorted(p["name"] for p in per if p["incomplete_logs"] or not p["report_written"]),
        "per_scenario": sorted(per, key=lambda p: p["name"]),
    }
    if cached:
        summary["judge_cache"] = {k: sum(c[k] for c in cached) for k in ("hits", "misses", "corrupt", "unwritable")}
    stopped = interruption(results)
    if stopped is not None:
        summary["interrupted"] = stopped
    return summary
