"""Pieces of the report built once a run is over: step records, the judged tail, and the first
step of the stage that failed."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from dynsteer_hook.judges.steps import Step
from dynsteer_hook.model.config import DIMENSIONS, EvaluatorConfig
from dynsteer_hook.model.records import FirstError, StageRecord, StepRecord, StopRecord, TailRecord, capped
from dynsteer_hook.runtime.policy import composite
from dynsteer_hook.runtime.windows import StepLog


def step_record(s: Step) -> StepRecord:
    """The report's summary of one closed action; each of its lists holds the first ``MAX_LISTED`` entries (20 ungrounded
    values), and ``omitted`` counts the rest, so a turn of a million calls makes a record of a few kilobytes."""
    tools, n_tools = capped([c.tool[:200] for c in s.calls])
    settled, n_settled = capped(list(s.settled))
    out_of_order, n_order = capped(sorted({m for c in s.calls for m in c.out_of_order}))
    ungrounded, n_ungrounded = capped([v for c in s.calls for v in c.ungrounded], 20)
    omitted = {k: n for k, n in (("tools", n_tools), ("settled", n_settled), ("out_of_order", n_order), ("ungrounded", n_ungrounded)) if n}
    return StepRecord(
        t=s.t,
        k_start=s.k_start,
        k_end=s.k_end,
        kind=s.kind,
        tools=tools,
        failed=sum(1 for c in s.calls if not c.ok),
        structural=sum(1 for c in s.calls if c.structural),
        settled=settled,
        out_of_order=out_of_order,
        ungrounded=ungrounded,
        message=s.message[:500] if s.message is not None else None,
        omitted=omitted,
    )


def pending_fields(pending: list[str]) -> dict[str, Any]:
    """The report's ``pending_calls`` (the first ``MAX_LISTED``) and, when some were left out, their count in ``omitted``."""
    listed, left = capped(pending)
    return {"pending_calls": listed, "omitted": {"pending_calls": left} if left else {}}


def tail_record(records: Sequence[StepRecord], stages: Sequence[StageRecord], open_tools: Collection[str], config: EvaluatorConfig,
                n: int) -> TailRecord | None:
    """Judge the actions with tool calls that no stage window held.

    Calls that settled nothing and that no stage was judged with (repeats of settled work, the run's
    tail) each cost ``efficiency_step_penalty`` of efficiency, failed ones tool compliance, as in a
    stage of their own whose deficit, spread over the ``n`` milestones, comes off the score. Attempts
    at a milestone still open (a tool in ``open_tools``) are paid for by its stage scoring 0, not here.
    """
    covered = {x for st in stages for x in st.window.steps}
    idle = [r for r in records if r.tools and not r.settled and r.t not in covered and not set(open_tools) & set(r.tools)]
    if not idle:
        return None
    calls = sum(len(r.tools) + r.omitted.get("tools", 0) for r in idle)
    failed = sum(r.failed for r in idle)
    structural = sum(r.structural for r in idle)
    credit = (calls - failed) + 0.5 * (failed - structural)
    scores = dict.fromkeys(DIMENSIONS, 1.0)
    scores["efficiency"] = max(0.0, 1.0 - config.efficiency_step_penalty * calls)
    scores["tool_compliance"] = credit / calls
    value = composite(scores, config.normalized_initial_weights())
    return TailRecord(
        steps=[r.t for r in idle], calls=calls, scores={d: round(v, 6) for d, v in scores.items()},
        composite=round(value, 6), penalty=round((1.0 - value) / n, 6),
        rationale=f"{calls} call(s) outside every stage window settled nothing ({failed} failed, {structural} malformed)",
    )


def stage_error(stages: Sequence[StageRecord], log: StepLog, stop: StopRecord | None, config: EvaluatorConfig) -> FirstError | None:
    """The first blamed step of the first failing stage, or of the stop when it is earlier or no stage failed."""
    candidates: list[FirstError] = []
    for st in stages:
        failing = st.composite < config.pass_threshold_for_first_error or any(v < config.theta_fail for v in st.scores.values())
        if not failing:
            continue
        weak = [d for d in DIMENSIONS if st.scores[d] < config.theta_warn] or list(DIMENSIONS)
        blamed = sorted((t, d) for d in weak for t in (st.cited.get(d) or [st.t]))
        t, d = blamed[0]
        candidates.append(FirstError(k=log.record(t).k_start, t=t, stage=st.milestone, dimension=d, detail=st.rationale[d], cause="judged"))
        break
    if stop is not None and stop.blamed_k is not None and stop.blamed_t is not None:
        candidates.append(FirstError(k=stop.blamed_k, t=stop.blamed_t, stage=None, dimension=stop.dimension, detail=stop.detail,
                                     cause=stop.reason))
    return min(candidates, key=lambda f: (f.k, f.t)) if candidates else None
