"""What playing one scenario yields: ToolSandbox's per-scenario result with dynsteer's additions, typed.

A ``ScenarioResult`` holds exactly the keys of an entry of ToolSandbox's ``per_scenario_results``
(name, categories, traceback, exception type, similarities, turn count, mappings), plus the
``dynsteer`` block, the LiteLLM roles' spending and, for a scenario Ctrl-C stopped, how it was
stopped. ``record()`` is the entry as ``result_summary.json`` holds it: the keys that were set, in
ToolSandbox's order, so the files read the same as ToolSandbox's own.
"""

from __future__ import annotations

import json
import traceback
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from dynsteer_hook.model.records import IncompleteLog, Report

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
    first_error: dict[str, int] | None
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
            stop=None if stop is None else StopBrief(reason=stop.reason, k=stop.k, t=stop.t, anchor=stop.anchor, dimension=stop.dimension),
            score=report.score,
            settled=report.settled,
            unsettled=report.unsettled,
            first_error=None if report.first_error is None else {"k": report.first_error.k, "t": report.first_error.t},
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


class ScenarioResult(BaseModel):
    """One played (or stopped) scenario; fields that were never set stay out of its record."""

    model_config = ConfigDict(extra="forbid")

    name: str
    categories: list[str]
    traceback: str | None
    exception_type: str | None
    milestone_similarity: int | float | None = None  # as ToolSandbox computed it (0 stays an integer in the file)
    minefield_similarity: int | float | None = None
    similarity: int | float | None = None
    turn_count: int | None = None
    milestone_mapping: dict[Any, Any] | None = None
    minefield_mapping: dict[Any, Any] | None = None
    interrupted: Stopping | None = None
    dynsteer: DynsteerBlock | None = None
    agent_llm: dict[str, Any] | None = None
    user_llm: dict[str, Any] | None = None

    @classmethod
    def evaluated(cls, name: str, categories: list[Any], evaluation: Any) -> ScenarioResult:
        """A rollout ToolSandbox played to its end and evaluated (``evaluation`` is its ``EvaluationResult``)."""
        return cls(
            name=name, categories=[str(c) for c in categories], traceback=None, exception_type=None,
            milestone_similarity=evaluation.milestone_similarity, minefield_similarity=evaluation.minefield_similarity,
            similarity=evaluation.similarity, turn_count=evaluation.turn_count,
            milestone_mapping=evaluation.milestone_mapping, minefield_mapping=evaluation.minefield_mapping,
        )

    @classmethod
    def crashed(cls, name: str, categories: list[Any], exc: BaseException, max_messages: int) -> ScenarioResult:
        """A rollout that raised: similarity 0 and the traceback, as ToolSandbox records a crash."""
        return cls(
            name=name, categories=[str(c) for c in categories],
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), exception_type=type(exc).__name__,
            milestone_similarity=0, minefield_similarity=0, similarity=0, turn_count=max_messages,
            milestone_mapping={}, minefield_mapping={},
        )

    @classmethod
    def stopped(cls, name: str, categories: list[Any], how: Stopping) -> ScenarioResult:
        """A scenario Ctrl-C stopped while it played (``in_flight``) or kept from starting (``not_started``)."""
        return cls(name=name, categories=[str(c) for c in categories], traceback=None, exception_type=None, interrupted=how)

    def crash_reason(self) -> str | None:
        """The crash in one line: the exception's last traceback line (None: no crash)."""
        if not self.exception_type:
            return None
        last = (self.traceback or "").strip().splitlines()[-1:]
        return last[0] if last else self.exception_type

    def record(self) -> dict[str, Any]:
        """The entry of ``per_scenario_results``: the fields that were set, in ToolSandbox's key order."""
        return self.model_dump(mode="python", exclude_unset=True, exclude_none=False)


def crash_reason(result: dict[str, Any]) -> str | None:
    """The crash of a result record in one line (None: no crash)."""
    if not result.get("exception_type"):
        return None
    last = (result.get("traceback") or "").strip().splitlines()[-1:]
    return last[0] if last else str(result["exception_type"])


def dumps_result(result: dict[str, Any]) -> str:
    """JSON text of one result record."""
    return json.dumps(result, default=str, ensure_ascii=False)
