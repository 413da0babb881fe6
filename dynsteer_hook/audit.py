"""Audit records: stages, the stop, first-error localisation, and the final report.

Pydantic models, because reports are files other tools read. Writing them to disk is the
job of ``storage``; an ``AuditSink`` receives each record as it happens.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from pydantic.dataclasses import dataclass

StopReason = Literal["fatal_minefield", "structural_failure", "low_score", "frontier_stagnation"]


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

    reason: str = Field(description="fatal_minefield, structural_failure, low_score, frontier_stagnation, or a custom rule's reason.")
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
    """Earliest blamed step of the earliest failing stage (or of the stop when no stage failed)."""

    k: int
    t: int
    stage: str | None
    dimension: str
    detail: str


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


class JudgeUsage(_Model):
    calls_by_tier: dict[str, int]
    dimensions_by_tier: dict[str, int]
    degraded: int
    tokens: int
    cost_usd: float


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
    outcome: Literal["completed", "halted", "incomplete"]
    halted: bool
    stop: StopRecord | None
    score: float = Field(description="Mean stage score over all milestones (unsettled = 0; fatal minefield = 0).")
    stages: list[StageRecord]
    first_error: FirstError | None
    settled: list[str]
    unsettled: list[str]
    frontier: list[str]
    k: int
    t: int
    steps: list[StepRecord]
    pending_calls: list[str] = Field(default_factory=list, description="Agent calls left without a result.")
    judge_usage: JudgeUsage
    blueprint: dict[str, Any]
    config: dict[str, Any]


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


def render_markdown(report: Report) -> str:
    """A readable Markdown rendering of a report."""
    lines = [f"# DynSTEER report: {report.task or '(unnamed task)'}", ""]
    verdict = "halted" if report.halted else report.outcome
    lines.append(f"- Outcome: **{verdict}**; score {_fmt(report.score)}; k={report.k} raw events, t={report.t} closed actions")
    lines.append(f"- Settled: {', '.join(report.settled) or 'none'}")
    lines.append(f"- Unsettled: {', '.join(report.unsettled) or 'none'}")
    if report.stop:
        s = report.stop
        lines.append(
            f"- Stop: **{s.reason}** at k={s.k}, t={s.t}; anchor {s.anchor}; causal dimension {s.dimension}; "
            f"frontier {s.frontier}"
        )
        lines.append(f"  - {s.detail}")
    if report.first_error:
        f = report.first_error
        lines.append(f"- First error: k={f.k}, t={f.t} (stage {f.stage or '-'}, {f.dimension}): {f.detail}")
    lines += ["", "## Stages", ""]
    if not report.stages:
        lines.append("No milestone settled.")
    else:
        lines.append("| t | milestone | window t | window k | S_t | correctness | efficiency | safety | tool_compliance | tiers |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for st in report.stages:
            dims = [st.scores.get(d) for d in ("correctness", "efficiency", "safety", "tool_compliance")]
            tiers = ",".join(f"{d[:4]}:{u.used}" for d, u in st.tiers.items())
            lines.append(
                f"| {st.t} | {st.milestone} | [{st.window.t_start},{st.window.t_end}] | [{st.window.k_start},{st.window.k_end}] "
                f"| {_fmt(st.composite)} | " + " | ".join("-" if v is None else _fmt(v) for v in dims) + f" | {tiers} |"
            )
        lines += ["", "### Rationale", ""]
        for st in report.stages:
            lines.append(f"- **{st.milestone}** (t={st.t}, anchor {st.window.anchor})")
            for d, text in st.rationale.items():
                lines.append(f"  - {d}: {text}")
    lines += ["", "## Steps", "", "| t | k | kind | tools | settled | notes |", "|---|---|---|---|---|---|"]
    for sp in report.steps:
        notes = []
        if sp.failed:
            notes.append(f"{sp.failed} failed")
        if sp.structural:
            notes.append(f"{sp.structural} malformed")
        if sp.out_of_order:
            notes.append("out of order: " + ", ".join(sp.out_of_order))
        lines.append(
            f"| {sp.t} | {sp.k_start}-{sp.k_end} | {sp.kind} | {', '.join(sp.tools) or '-'} | {', '.join(sp.settled) or '-'} | {'; '.join(notes) or '-'} |"
        )
    return "\n".join(lines) + "\n"
