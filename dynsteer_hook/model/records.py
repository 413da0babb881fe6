"""Audit records: stages, the stop, first-error localisation, and the final report.

Pydantic models, because reports are files other tools read. Writing them to disk is the
job of ``storage``; an ``AuditSink`` receives each record as it happens.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from pydantic.dataclasses import dataclass

from dynsteer_hook.model.untrusted import for_markdown as md

StopReason = Literal["fatal_minefield", "structural_failure", "repeated_failure", "low_score", "frontier_stagnation"]
Outcome = Literal["completed", "halted", "incomplete", "crashed", "interrupted"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Window(_Model):
    """The dominator-bounded evidence window W(m*) = [t_idom(m*), t] on both clocks."""

    anchor: str = Field(description="idom(m*): the milestone (or <s0>) that bounds the window.")
    t_start: int
    t_end: int
    k_start: int
    k_end: int
    steps: list[int] = Field(description="Closed actions (t) given to the judges; parallel-branch actions excluded.")


class TierUse(_Model):
    """The tier the ladder asked for and the tier that judged."""

    requested: int
    used: int


class BindingRecord(_Model):
    name: str
    arg: str
    value: Any
    from_producer: bool
    seen_elsewhere: bool


class StageRecord(_Model):
    """One judged stage."""

    milestone: str
    tool: str
    role: str
    t: int
    k: int
    window: Window
    tiers: dict[str, TierUse]
    scores: dict[str, float]
    uncertainty: dict[str, float]
    composite: float
    weights_used: dict[str, float]
    weights: dict[str, float] = Field(description="Weights after the eq. 7 update.")
    next_tiers: dict[str, int]
    rationale: dict[str, str]
    cited: dict[str, list[int]]
    judges: list[str]
    degraded: list[str] = Field(default_factory=list)
    bindings: list[BindingRecord] = Field(default_factory=list)


class StopRecord(_Model):
    """Why and where the run was stopped."""

    reason: str = Field(description="fatal_minefield, structural_failure, repeated_failure, low_score, frontier_stagnation, "
                        "or a custom rule's reason.")
    k: int
    t: int
    anchor: str
    dimension: str
    frontier: list[str]
    detail: str
    blamed_k: int | None = None
    blamed_t: int | None = None
    minefield: str | None = None
    tool: str | None = None


class FirstError(_Model):
    """A blamed step on both clocks: the run's first faulty step, or the first step of the stage that failed."""

    k: int
    t: int
    stage: str | None
    dimension: str
    detail: str
    cause: str | None = Field(default=None, description="The rule or judge that blamed the step (see FaultRecord.cause).")
    recovered: bool | None = Field(default=None, description="Whether the run settled a milestone after the fault.")


FaultCause = Literal[
    "malformed", "tool_error", "repeat", "off_task", "invented_value", "warning_minefield", "fatal_minefield", "judged",
    "structural_failure", "repeated_failure", "low_score", "frontier_stagnation",
]


class FaultRecord(_Model):
    """One faulty step: a call (or an action) that a rule, a judge or a stop rule blamed, recovered from or not."""

    k: int = Field(description="Raw event of the faulty call (the action's first event when a judge blamed a whole step).")
    t: int = Field(description="Closed action holding it.")
    tool: str | None = Field(default=None, description="The call's tool; None when the whole action was blamed.")
    dimension: str = Field(description="The stage dimension the fault costs.")
    cause: str = Field(description="malformed (schema or payload error), tool_error (the call raised or got no result), "
                       "repeat (the same call again with the world unchanged), off_task (a successful reading of a tool "
                       "no milestone uses, settling nothing, whose result nothing later used), invented_value, warning_minefield, fatal_minefield, judged "
                       "(a stage judge scored a dimension under theta_warn citing the step), or the reason of the stop "
                       "rule that blamed it.")
    stage: str | None = Field(default=None, description="The milestone whose stage holds the step (settled by it or "
                              "judged with it in its window); None outside every window (the run's tail).")
    recovered: bool = Field(description="Whether the run settled a milestone after the fault (or in the same action).")
    detail: str


class TailRecord(_Model):
    """The closed actions no stage window held, judged once the run is over, so that redundancy is never free."""

    steps: list[int] = Field(description="Closed actions (t) outside every stage window that made tool calls.")
    calls: int
    scores: dict[str, float]
    composite: float
    penalty: float = Field(description="Subtracted from the run score: (1 - composite) / number of milestones.")
    rationale: str


@dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class StepRecord:
    """One closed action, summarised.

    A pydantic dataclass with slots, not a model: a report keeps one per closed action,
    and a model instance takes about three times the memory.
    """

    t: int
    k_start: int
    k_end: int
    kind: str
    tools: list[str]
    failed: int
    structural: int
    settled: list[str]
    out_of_order: list[str]
    message: str | None = None
    ungrounded: list[str] = Field(default_factory=list, description="Identifier-like argument values (arg=value) never shown to the agent.")


class TraceFaultRecord(_Model):
    """A tool call and result that did not pair up (the evaluation went on; see ``pairing``)."""

    kind: str = Field(description="orphan_result, late_result, result_before_call, duplicate_call_id or unanswered_call.")
    k: int = Field(description="Raw event of the offending record (the call, for an unanswered call).")
    call_id: str
    tool: str | None = None
    detail: str


class JudgeUsage(_Model):
    calls_by_tier: dict[str, int] = Field(description="judge invocations per tier (one per stage and tier used)")
    dimensions_by_tier: dict[str, int]
    llm_requests_by_tier: dict[str, int] = Field(default_factory=dict, description="model requests per LLM tier (Tier 2 samples, "
                                                 "Tier 3 dimensions x passes); answers read from the judge cache count as requests")
    degraded: int
    tokens: int
    cost_usd: float


class IncompleteLog(_Model):
    """A log file that stopped being written before the run ended (a full disk, a file-size limit)."""

    file: str
    from_record: int = Field(description="0-based index of the first record missing; the records before it are whole.")
    reason: str


class Report(_Model):
    """The audit report of one evaluated run.

    What grows with the run: ``steps`` holds one small record per closed action (a few
    hundred bytes in memory and in the JSON file); ``stages`` one record per settled milestone,
    whose ``window.steps`` lists the closed actions the judges saw, so a stage whose window
    spans a long stretch of the run lists all of it. Everything else is bounded by the
    blueprint.
    """

    format: Literal["dynsteer-report"] = "dynsteer-report"
    version: Literal[1] = 1
    task: str
    outcome: Outcome = Field(
        description="completed or incomplete (milestones), halted (a stop rule fired), crashed (the rollout raised), "
        "interrupted (stopped by Ctrl-C)."
    )
    crash: str | None = Field(default=None, description="Why the rollout crashed (outcome crashed).")
    halted: bool
    stop: StopRecord | None
    score: float = Field(description="Mean stage score over all milestones (unsettled = 0; fatal minefield = 0), less the "
                         "tail's penalty.")
    stages: list[StageRecord]
    first_error: FirstError | None = Field(description="The earliest faulty step on both clocks (k, t), whether or not its "
                                           "stage passed; the first of ``faults``.")
    stage_error: FirstError | None = Field(default=None, description="The first blamed step of the first stage that "
                                           "failed, or of the stop when no stage failed.")
    faults: list[FaultRecord] = Field(default_factory=list, description="Faulty steps in order of k (the first 200).")
    fault_count: int = Field(default=0, description="How many faulty calls and steps the run had in all.")
    tail: TailRecord | None = Field(default=None, description="The judgement of the actions outside every stage window.")
    settled: list[str]
    unsettled: list[str]
    frontier: list[str]
    k: int
    t: int
    steps: list[StepRecord]
    pending_calls: list[str] = Field(default_factory=list, description="Agent calls left without a result.")
    trace_faults: list[TraceFaultRecord] = Field(default_factory=list, description="Calls and results that did not pair up (the first 100).")
    trace_fault_count: int = Field(default=0, description="How many pairing faults the trace had in all.")
    judge_usage: JudgeUsage
    judges: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="How each judge tier the ladder could use was made, by tier: the judge, its model, the endpoint "
        "without secrets, samples or passes, temperature (never an API key).",
    )
    blueprint: dict[str, Any]
    config: dict[str, Any]
    blueprint_stale: bool = Field(
        default=False, description="The blueprint was compiled from another version of the task's public view (allowed explicitly)."
    )
    incomplete_logs: list[IncompleteLog] = Field(default_factory=list, description="Log files that miss records, and from which record.")


def conclude(report: Report, *, crash: str | None = None, interrupted: bool = False) -> Report:
    """The report with how the rollout ended: interrupted beats crashed beats the evaluator's own outcome.

    A crashed run scores 0, so that its score never reads as a success.
    """
    if interrupted:
        return report.model_copy(update={"outcome": "interrupted", "crash": crash})
    if crash is not None:
        return report.model_copy(update={"outcome": "crashed", "crash": crash, "score": 0.0})
    return report


def with_files(report: Report, *, stale: bool = False, incomplete_logs: tuple[IncompleteLog, ...] = ()) -> Report:
    """The report with what is known about its inputs and files once the run has ended."""
    return report.model_copy(update={"blueprint_stale": stale, "incomplete_logs": list(incomplete_logs)})


class AuditSink(Protocol):
    """Receives audit records as they happen (one JSON-able mapping each)."""

    def write(self, record: dict[str, Any]) -> None:
        """Record one entry."""
        ...


class ListSink:
    """An in-memory sink (tests, embedding)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(record)


def _fmt(x: float) -> str:
    return f"{x:.3f}"


def _ids(ids: list[str], limit: int = 40) -> str:
    shown = ", ".join(md(i, 120) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _run_notes(report: Report) -> list[str]:
    """How the run ended and what its files miss, beyond the evaluator's outcome."""
    notes = []
    if report.crash:
        notes.append(f"- Crash: {md(report.crash, 300)}")
    if report.outcome == "interrupted":
        notes.append("- Interrupted (Ctrl-C) before the rollout ended; the stages below are those seen until then")
    if report.blueprint_stale:
        notes.append("- Blueprint is **stale**: compiled from another version of this task's public view")
    for log in report.incomplete_logs:
        notes.append(f"- Log {md(log.file, 200)} is **incomplete** from record {log.from_record} on ({md(log.reason, 200)})")
    return notes


def render_markdown(report: Report) -> str:
    """A readable Markdown rendering of a report.

    Every text field may carry what an agent, a user or a tool wrote (tool names, argument
    values in details and rationales, exception text), so each goes through ``md``: one
    line, clipped, with Markdown punctuation escaped. Nothing in it can end a table cell,
    start a heading, list or code block, or make a link, image or HTML.
    """
    lines = [f"# DynSTEER report: {md(report.task, 200) if report.task else '(unnamed task)'}", ""]
    lines.append(f"- Outcome: **{md(report.outcome)}**; score {_fmt(report.score)}; k={report.k} raw events, t={report.t} closed actions")
    lines += _run_notes(report)
    lines.append(f"- Settled: {_ids(report.settled) or 'none'}")
    lines.append(f"- Unsettled: {_ids(report.unsettled) or 'none'}")
    if report.stop:
        s = report.stop
        lines.append(
            f"- Stop: **{md(s.reason, 80)}** at k={s.k}, t={s.t}; anchor {md(s.anchor, 120)}; causal dimension {md(s.dimension, 40)}; "
            f"frontier {_ids(s.frontier) or 'empty'}"
        )
        lines.append(f"  - {md(s.detail, 400)}")
    if report.first_error:
        f = report.first_error
        how = f", {md(f.cause, 40)}" if f.cause else ""
        lines.append(f"- First error: k={f.k}, t={f.t} (stage {md(f.stage, 120) if f.stage else '-'}, {md(f.dimension, 40)}{how}): "
                     f"{md(f.detail, 400)}")
    if report.stage_error and report.stage_error != report.first_error:
        f = report.stage_error
        lines.append(f"- First step of the failing stage or the stop: k={f.k}, t={f.t} (stage {md(f.stage, 120) if f.stage else '-'}, "
                     f"{md(f.dimension, 40)}): {md(f.detail, 400)}")
    if report.tail:
        lines.append(f"- Tail (actions outside every stage window): t={report.tail.steps}; composite {_fmt(report.tail.composite)}, "
                     f"penalty {_fmt(report.tail.penalty)}: {md(report.tail.rationale, 300)}")
    if report.pending_calls:
        lines.append(f"- Calls without a result: {_ids(report.pending_calls)}")
    lines += ["", "## Stages", ""]
    if not report.stages:
        lines.append("No milestone settled.")
    else:
        lines.append("| t | milestone | window t | window k | S_t | correctness | efficiency | safety | tool_compliance | tiers |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for st in report.stages:
            dims = [st.scores.get(d) for d in ("correctness", "efficiency", "safety", "tool_compliance")]
            tiers = ",".join(f"{md(d[:4])}:{u.used}" for d, u in st.tiers.items())
            lines.append(
                f"| {st.t} | {md(st.milestone, 120)} | [{st.window.t_start},{st.window.t_end}] | [{st.window.k_start},{st.window.k_end}] "
                f"| {_fmt(st.composite)} | " + " | ".join("-" if v is None else _fmt(v) for v in dims) + f" | {tiers} |"
            )
        lines += ["", "### Rationale", ""]
        for st in report.stages:
            lines.append(f"- **{md(st.milestone, 120)}** (t={st.t}, anchor {md(st.window.anchor, 120)})")
            for d, text in st.rationale.items():
                lines.append(f"  - {md(d, 40)}: {md(text, 400)}")
    if report.faults:
        lines += ["", "## Faulty steps", "", f"{report.fault_count} faulty call(s) or step(s), in order.", ""]
        lines.append("| k | t | tool | dimension | cause | stage | recovered | detail |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for fr in report.faults:
            lines.append(
                f"| {fr.k} | {fr.t} | {md(fr.tool, 80) if fr.tool else '-'} | {md(fr.dimension, 40)} | {md(fr.cause, 40)} "
                f"| {md(fr.stage, 120) if fr.stage else '-'} | {'yes' if fr.recovered else 'no'} | {md(fr.detail, 300)} |"
            )
    lines += ["", "## Steps", "", "| t | k | kind | tools | settled | notes |", "|---|---|---|---|---|---|"]
    for sp in report.steps:
        notes = []
        if sp.failed:
            notes.append(f"{sp.failed} failed")
        if sp.structural:
            notes.append(f"{sp.structural} malformed")
        if sp.out_of_order:
            notes.append("out of order: " + _ids(sp.out_of_order))
        if sp.ungrounded:
            notes.append("never shown to the agent: " + ", ".join(md(v, 120) for v in sp.ungrounded[:5]))
        tools = ", ".join(md(t, 80) for t in sp.tools[:10]) + (f" and {len(sp.tools) - 10} more" if len(sp.tools) > 10 else "")
        lines.append(
            f"| {sp.t} | {sp.k_start}-{sp.k_end} | {md(sp.kind, 20)} | {tools or '-'} | {_ids(sp.settled) or '-'} | {'; '.join(notes) or '-'} |"
        )
    if report.trace_faults:
        lines += ["", "## Trace faults", "", f"{report.trace_fault_count} call/result pairing fault(s); evaluation went on.", ""]
        lines.append("| k | kind | call | detail |")
        lines.append("|---|---|---|---|")
        for tf in report.trace_faults:
            lines.append(f"| {tf.k} | {md(tf.kind, 40)} | {md(tf.call_id, 80)} | {md(tf.detail, 300)} |")
    return "\n".join(lines) + "\n"
