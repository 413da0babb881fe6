"""Execution-time stop criteria checked at every closed action.

A stop rule is a callable ``rule(ctx) -> StopDecision | None``. The evaluator takes a
list of them, so a user can add a rule without touching the core. Fatal minefield
interception is not here: it fires on the raw clock, before a call executes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.records import StopRecord


@dataclass(frozen=True, slots=True)
class StopContext:
    """The evaluator's state after closed action t, as stop rules see it."""

    k: int
    t: int
    config: EvaluatorConfig
    frontier: tuple[str, ...]
    frontier_anchor: str
    stage_milestone: str | None
    stage_anchor: str | None
    stage_score: float | None
    stage_weakest: str | None
    stage_first_cited: tuple[int, int] | None
    low_streak: int
    stagnation: int
    stagnation_since: tuple[int, int] | None
    structural_streak: int
    structural_since: tuple[int, int] | None
    structural_detail: str
    repeated_failures: int = 0
    repeated_failure_since: tuple[int, int] | None = None
    repeated_failure_detail: str = ""


@dataclass(frozen=True, slots=True)
class StopDecision:
    """A rule's decision to stop, with its causal dimension and blamed (k, t)."""

    reason: str
    anchor: str
    dimension: str
    detail: str
    blamed: tuple[int, int] | None

    def record(self, k: int, t: int, frontier: list[str]) -> StopRecord:
        """The stop record of this decision, taken after closed action ``t`` (raw event ``k``) with ``frontier`` ready."""
        return StopRecord(
            reason=self.reason,
            k=k,
            t=t,
            anchor=self.anchor,
            dimension=self.dimension,
            frontier=frontier,
            detail=self.detail,
            blamed_k=self.blamed[0] if self.blamed else None,
            blamed_t=self.blamed[1] if self.blamed else None,
        )


class StopRule(Protocol):
    """One stop criterion."""

    def __call__(self, ctx: StopContext) -> StopDecision | None:
        """Return a decision to stop, or ``None`` to go on."""
        ...


def structural_failure(ctx: StopContext) -> StopDecision | None:
    """Repeated unparseable payloads or schema errors (criterion 2)."""
    if ctx.structural_streak < ctx.config.structural_patience:
        return None
    return StopDecision(
        "structural_failure",
        ctx.frontier_anchor,
        "tool_compliance",
        f"{ctx.structural_streak} consecutive malformed tool calls; last: {ctx.structural_detail}",
        ctx.structural_since,
    )


def repeated_failure(ctx: StopContext) -> StopDecision | None:
    """One identical call failing again and again: ``repeated_failure_patience`` failures of the same tool with the
    same arguments, with no milestone settled in between (a loop, even when each call is well-formed and only
    raises at run time). Blames the first of those failures."""
    if ctx.repeated_failures < ctx.config.repeated_failure_patience:
        return None
    return StopDecision(
        "repeated_failure",
        ctx.frontier_anchor,
        "tool_compliance",
        f"the same call failed {ctx.repeated_failures} times without progress; last: {ctx.repeated_failure_detail}",
        ctx.repeated_failure_since,
    )


def low_score(ctx: StopContext) -> StopDecision | None:
    """Persistent low quality: ``low_score_patience`` stages in a row under theta_fail (criterion 3)."""
    if ctx.stage_score is None or ctx.low_streak < ctx.config.low_score_patience:
        return None
    return StopDecision(
        "low_score",
        ctx.stage_anchor or ctx.frontier_anchor,
        ctx.stage_weakest or "correctness",
        f"stage {ctx.stage_milestone} scored {ctx.stage_score:.3f} < theta_fail={ctx.config.theta_fail} "
        f"({ctx.low_streak} low stage(s) in a row)",
        ctx.stage_first_cited,
    )


def frontier_stagnation(ctx: StopContext) -> StopDecision | None:
    """N_stag closed actions in a row without advancing the ready frontier (criterion 4).

    With an empty frontier the evaluator counts only tool-calling actions, so an agent that
    keeps calling tools when nothing is left to settle is stopped too. A message that asks the
    user a question (it holds a question mark or asks for something: "please provide", "could
    you", ...) is progress, not stagnation: the task may need what only the user knows
    (insufficient-information and multi-turn tasks), so it resets the count and is never blamed
    as the start of a stagnation. Asking the very same question again is not progress.
    """
    if ctx.stagnation < ctx.config.n_stag:
        return None
    what = f"settling any of {list(ctx.frontier)}" if ctx.frontier else "anything: no milestone is left to settle"
    return StopDecision(
        "frontier_stagnation",
        ctx.frontier_anchor,
        "efficiency",
        f"{ctx.stagnation} closed actions without {what}",
        ctx.stagnation_since,
    )


DEFAULT_STOP_RULES: Sequence[StopRule] = (structural_failure, repeated_failure, low_score, frontier_stagnation)
"""Checked in this order; the first decision wins."""
