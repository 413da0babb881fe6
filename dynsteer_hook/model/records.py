"""Audit records: stages, the stop, first-error localisation, and the final report.

Pydantic models, because reports are files other tools read. Rendering them is the job of
``dynsteer_hook.report``, which also writes them to disk; an ``AuditSink`` receives each record
as it happens.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from pydantic.dataclasses import dataclass

MAX_LISTED = 100
"""Most entries a report lists in any list that grows with the run (calls of one step, pending calls, a window's
steps); what is left out is counted in the record's ``omitted``."""

StopReason = Literal["fatal_minefield", "structural_failure", "repeated_failure", "low_score", "frontier_stagnation", "budget"]
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
    steps: list[int] = Field(description="Closed actions (t) given to the judges; parallel-branch actions excluded "
                             f"(the first {MAX_LISTED}).")
    omitted: int = Field(default=0, description="Closed actions given to the judges but left out of ``steps``.")


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
                        "budget, or a custom rule's reason.")
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
    omitted: dict[str, int] = Field(default_factory=dict, description=f"Per list (tools, ungrounded, out_of_order, settled): "
                                    f"entries left out past the first {MAX_LISTED} (20 for ungrounded).")


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


class RoleCost(_Model):
    """What one role's model calls cost in a rollout; a figure is null (never 0) when a call did not tell it."""

    model: str | None = Field(default=None, description="The role's model string, when it is known.")
    calls: int | None = Field(description="Model calls (judges: requests, answers from the judge cache included).")
    prompt_tokens: int | None = Field(description="Prompt tokens from the providers' usage; null when one did not say.")
    completion_tokens: int | None = Field(description="Completion tokens from the providers' usage; null when one did not say.")
    cost_usd: float | None = Field(description="Dollars from litellm's cost map; null when it has no price for a model.")


class CostRecord(_Model):
    """What the rollout's models cost, per role (agent, user, judges: those that are models) and in all."""

    roles: dict[str, RoleCost] = Field(default_factory=dict)
    total: RoleCost


class IncompleteLog(_Model):
    """A log file that stopped being written before the run ended (a full disk, a file-size limit)."""

    file: str
    from_record: int = Field(description="0-based index of the first record missing; the records before it are whole.")
    reason: str


class TranscriptCall(_Model):
    """One tool call as the transcript shows it: its arguments and its result or error, clipped."""

    k: int = Field(description="Raw event of the call.")
    call_id: str
    tool: str
    actor: str = "agent"
    arguments: str = Field(description="The arguments as JSON text (or the raw payload when it was not a JSON object).")
    status: Literal["ok", "error", "unanswered", "blocked", "rejected"] = Field(
        description="ok, error (the call raised), unanswered (no result came), blocked (stopped by interception before it "
        "executed: it never ran), rejected (refused by the tool-call gate).")
    k_result: int | None = None
    result: str | None = None
    error: str | None = None
    rule: str | None = Field(default=None, description="For a blocked or rejected call: the rule that stopped it.")
    faults: list[str] = Field(default_factory=list, description="The faults blamed on this call.")


class TranscriptEntry(_Model):
    """One turn of the conversation in order: a system, user or agent message, or an agent action with its calls."""

    kind: Literal["system", "user", "agent", "action", "user_call", "orphan_result"]
    k: int = Field(description="Raw event where the entry starts.")
    k_end: int
    t: int | None = Field(default=None, description="The closed action holding it (agent messages and actions).")
    text: str | None = None
    calls: list[TranscriptCall] = Field(default_factory=list, description="Parallel calls of one action, in the order issued.")
    stages: list[str] = Field(default_factory=list, description="Milestones the action settled (stages it closed).")
    faults: list[str] = Field(default_factory=list, description="Faults blamed on the action as a whole.")


class TranscriptTool(_Model):
    name: str
    description: str = ""


class RepeatRecord(_Model):
    """The same call (tool and arguments) made in consecutive actions: a loop."""

    tool: str
    arguments: str
    count: int
    t_first: int
    t_last: int
    settled: bool = Field(description="Whether any of the repeated actions settled a milestone.")


class Transcript(_Model):
    """What was asked and what was said and done, in order, as the report shows it (texts clipped, entries capped)."""

    request: str | None = Field(description="The user's first message.")
    tools: list[TranscriptTool] = Field(default_factory=list, description="The agent-facing tools.")
    entries: list[TranscriptEntry] = Field(default_factory=list)
    entry_count: int = Field(default=0, description="How many entries the run had in all (entries holds the first ones).")
    repeats: list[RepeatRecord] = Field(default_factory=list, description="Calls repeated in three or more consecutive actions.")


class NativeSimilarity(_Model):
    """ToolSandbox's own evaluation of the rollout, beside dynsteer's score."""

    similarity: float | None
    milestone_similarity: float | None = None
    minefield_similarity: float | None = None
    cut: bool = Field(default=False, description="The rollout was halted: the similarity is that of the cut trajectory.")
    unknown: str | None = Field(default=None, description="Why ToolSandbox's similarity is unknown (None when it is known): "
                                "not computed within its budget, interrupted, its evaluation failed, or still being computed "
                                "when the report was written.")


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
    cost: CostRecord | None = Field(default=None, description="What the rollout's models cost, per role and in all: calls, "
                                    "tokens and dollars, null where a provider did not say (reports of older versions have none).")
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
    transcript: Transcript | None = Field(default=None, description="The conversation: the request, the tools, every message "
                                          "and call in order with its clocks, stage and faults.")
    native: NativeSimilarity | None = Field(default=None, description="ToolSandbox's similarity of the rollout, when it evaluated it.")
    notes: list[str] = Field(default_factory=list, description="What the loop did to hostile input or an overlong rollout: text "
                             "no encoder accepts replaced with U+FFFD, calls past the per-turn cap refused, the rollout deadline.")
    omitted: dict[str, int] = Field(default_factory=dict, description="Per list of the report that grows with the run "
                                    "(pending_calls, stop.frontier): entries left out past the first "
                                    f"{MAX_LISTED}; ``faults`` and ``trace_faults`` have their own counts.")


def conclude(report: Report, *, crash: str | None = None, interrupted: bool = False) -> Report:
    """The report with how the rollout ended: interrupted beats crashed beats the evaluator's own outcome.

    A crashed run scores 0, so that its score never reads as a success.
    """
    if interrupted:
        return report.model_copy(update={"outcome": "interrupted", "crash": crash})
    if crash is not None:
        return report.model_copy(update={"outcome": "crashed", "crash": crash, "score": 0.0})
    return report


def with_files(report: Report, *, stale: bool = False, incomplete_logs: tuple[IncompleteLog, ...] = (),
               notes: tuple[str, ...] = ()) -> Report:
    """The report with what is known about its inputs and files once the run has ended (and what the loop noted)."""
    update: dict[str, Any] = {"blueprint_stale": stale, "incomplete_logs": list(incomplete_logs)}
    if notes:
        update["notes"] = [*report.notes, *capped(list(notes))[0]]
    return report.model_copy(update=update)


def capped(items: list[Any], limit: int = MAX_LISTED) -> tuple[list[Any], int]:
    """The first ``limit`` items and how many were left out."""
    return (items, 0) if len(items) <= limit else (items[:limit], len(items) - limit)


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
