"""What a run tells about its scenarios, as dynsteer sees them: the block each scenario adds to its entry
of ``result_summary.json`` (``DynsteerBlock``), and ``dynsteer_summary.json`` over the run.

A result carrying ``interrupted`` (Ctrl-C) is listed under ``interrupted`` (in flight: its
report is marked interrupted; not started: nothing was written for it). Pure: values in,
values out; the live runner writes the files.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from dynsteer_hook.model.records import CostRecord, FirstError, IncompleteLog, Report

Stopping = Literal["in_flight", "not_started"]
IN_FLIGHT: Literal["in_flight"] = "in_flight"
NOT_STARTED: Literal["not_started"] = "not_started"


class StopBrief(BaseModel):
    """Where and why the evaluator stopped the rollout (the report has the full stop record)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reason: str
    k: int
    t: int
    anchor: str
    dimension: str
    cause: str | None = None  # the stop record's detail, clipped (older files have none)
    minefield: str | None = None
    tool: str | None = None


class ErrorBrief(BaseModel):
    """The run's first faulty step in words: where (both clocks, stage), what it cost (dimension) and why (cause)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int
    t: int
    stage: str | None = None
    dimension: str | None = None
    cause: str | None = None
    detail: str | None = None

    @classmethod
    def of(cls, fe: FirstError) -> ErrorBrief:
        """The brief of a report's first error (its detail clipped)."""
        return cls(k=fe.k, t=fe.t, stage=fe.stage, dimension=fe.dimension, cause=fe.cause, detail=clip(fe.detail))


BRIEF_CHARS = 300
"""How much of a stop's or a fault's free text the run's summaries keep (the report has all of it)."""


def clip(text: str | None) -> str | None:
    """Free text as the run's summaries keep it: at most ``BRIEF_CHARS`` characters."""
    if text is None or len(text) <= BRIEF_CHARS:
        return text
    return text[: BRIEF_CHARS - 1] + "…"


class DynsteerBlock(BaseModel):
    """The ``dynsteer`` entry of one scenario's result in ``result_summary.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    outcome: str
    crash: str | None
    halted: bool
    stop: StopBrief | None
    score: float
    settled: list[str]
    unsettled: list[str]
    first_error: ErrorBrief | None
    stage_dimensions_by_tier: dict[str, int]
    stages: int
    k: int
    t: int
    rows_seen: int
    max_messages: int
    scripted_steps_not_played: int | None
    rollout_seconds: float
    evaluator_seconds: float
    blueprint: str | None
    blueprint_stale: bool
    incomplete_logs: list[IncompleteLog]
    report_written: bool
    report_error: str | None
    judge_cache: dict[str, Any] | None = None  # what the judge cache did (set only when one was used)
    judge_calls: int = 0  # judge invocations over all tiers
    judge_cost_usd: float = 0.0
    cost: CostRecord | None = None  # what the rollout's models cost, per role and in all (the report's ``cost``)

    @classmethod
    def of(cls, report: Report, *, rows_seen: int, max_messages: int, steps_not_played: int | None, seconds: float,
           evaluator_seconds: float, report_error: str | None) -> DynsteerBlock:
        """The block of a finished report and what the rollout measured around it."""
        tiers: dict[str, int] = {}
        for st in report.stages:
            for use in st.tiers.values():
                tiers[str(use.used)] = tiers.get(str(use.used), 0) + 1
        stop = report.stop
        return cls(
            outcome=report.outcome,
            crash=report.crash,
            halted=report.halted,
            stop=None if stop is None else StopBrief(reason=stop.reason, k=stop.k, t=stop.t, anchor=stop.anchor, dimension=stop.dimension,
                                                     cause=clip(stop.detail), minefield=stop.minefield, tool=stop.tool),
            score=report.score,
            settled=report.settled,
            unsettled=report.unsettled,
            first_error=None if report.first_error is None else ErrorBrief.of(report.first_error),
            stage_dimensions_by_tier=dict(sorted(tiers.items())),
            stages=len(report.stages),
            k=report.k,
            t=report.t,
            rows_seen=rows_seen,
            max_messages=max_messages,
            scripted_steps_not_played=steps_not_played,
            rollout_seconds=round(seconds, 4),
            evaluator_seconds=round(evaluator_seconds, 4),
            blueprint=report.blueprint.get("sha256_16"),
            blueprint_stale=report.blueprint_stale,
            incomplete_logs=list(report.incomplete_logs),
            report_written=report_error is None,
            report_error=report_error,
            judge_calls=sum(report.judge_usage.calls_by_tier.values()),
            judge_cost_usd=round(report.judge_usage.cost_usd, 6),
            cost=report.cost,
        )


    @classmethod
    def failed(cls, crash: str, *, stale: bool, rows_seen: int, max_messages: int, seconds: float,
               evaluator_seconds: float) -> DynsteerBlock:
        """The block of a scenario whose evaluator could not be built or could not finish its report: no report,
        outcome ``crashed`` with the evaluator's error as the reason."""
        return cls(
            outcome="crashed", crash=crash, halted=False, stop=None, score=0.0, settled=[], unsettled=[], first_error=None,
            stage_dimensions_by_tier={}, stages=0, k=0, t=0, rows_seen=rows_seen, max_messages=max_messages,
            scripted_steps_not_played=None, rollout_seconds=round(seconds, 4), evaluator_seconds=round(evaluator_seconds, 4),
            blueprint=None, blueprint_stale=stale, incomplete_logs=[], report_written=False, report_error=None,
        )


def interruption(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Which scenarios a Ctrl-C stopped while playing and which it kept from starting (None: no interruption)."""
    in_flight = sorted(r["name"] for r in results if r.get("interrupted") == IN_FLIGHT)
    not_started = sorted(r["name"] for r in results if r.get("interrupted") == NOT_STARTED)
    if not in_flight and not not_started:
        return None
    return {"finished": sum(1 for r in results if not r.get("interrupted")), IN_FLIGHT: in_flight, NOT_STARTED: not_started}


def _recorded(rec: Any) -> dict[str, Any]:
    """A re-executed recording's similarity as recorded and whether it reproduced (``dynsteer rerun``), else nothing."""
    if not isinstance(rec, dict):
        return {}
    return {"recorded_similarity": rec.get("recorded_similarity"), "reproduced": rec.get("reproduced"),
            "divergence": rec.get("divergence")}


COST_FIELDS = ("calls", "prompt_tokens", "completion_tokens", "cost_usd")


def _add(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a + b


def cost_totals(costs: list[dict[str, Any] | None]) -> dict[str, Any]:
    """The cost of many rollouts (their reports' ``cost`` blocks), per role and in all: a figure is null when any rollout
    did not know it, never a sum that reads as all of it; ``unknown`` counts the rollouts without a cost block."""
    roles: dict[str, dict[str, Any]] = {}
    total: dict[str, Any] = dict.fromkeys(COST_FIELDS, 0)
    for c in costs:
        if c is None:
            continue
        for role, spent in c["roles"].items():
            into = roles.setdefault(role, dict.fromkeys(COST_FIELDS, 0))
            for f in COST_FIELDS:
                into[f] = _add(into[f], spent.get(f))
        for f in COST_FIELDS:
            total[f] = _add(total[f], c["total"].get(f))
    for part in (*roles.values(), total):
        if part["cost_usd"] is not None:
            part["cost_usd"] = round(part["cost_usd"], 6)
    return {"roles": roles, "total": total, "unknown": sum(1 for c in costs if c is None)}


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
            "categories": r.get("categories", []),
            "stop": d["stop"],
            "stop_cause": (d["stop"] or {}).get("cause"),
            "first_error": d.get("first_error"),
            "score": d["score"],
            "similarity": r.get("similarity"),
            "milestone_similarity": r.get("milestone_similarity"),
            "minefield_similarity": r.get("minefield_similarity"),
            "similarity_unknown": r.get("similarity_unknown"),
            "crashed": r.get("exception_type") is not None,
            "k": d["k"],
            "t": d["t"],
            "blueprint_stale": d.get("blueprint_stale", False),
            "incomplete_logs": d.get("incomplete_logs", []),
            "report_written": d.get("report_written", True),
            "steps": d["t"],
            "steps_saved": d["scripted_steps_not_played"] if d["halted"] else None,
            "judge_calls": d.get("judge_calls", 0),
            "judge_cost_usd": d.get("judge_cost_usd", 0.0),
            "cost": d.get("cost"),
            **_recorded(r.get("recording")),
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
        "judge_calls": sum(p["judge_calls"] for p in per),
        "judge_cost_usd": round(sum(p["judge_cost_usd"] for p in per), 6),
        "cost": cost_totals([p["cost"] for p in per]),
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
