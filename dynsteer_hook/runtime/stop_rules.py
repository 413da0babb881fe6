"""Execution-time stop criteria checked at every closed action.

A stop rule is an object that keeps its own state: the evaluator tells it each user turn
(``user_said``) and each closed action (``closed``, with what the action did: its calls and their
outcomes, its message, the milestones it settled, the stages judged), then asks it whether to stop
(``decide``, once per stage the action judged, or once when it judged none, and again whenever
a role's models report what they spent, ``Evaluator.spent``). The evaluator takes a
list of them and works on its own copy of each (``copy.deepcopy``: a rule given to many runs starts
each one fresh), so a rule is added without touching the core:

    class TooManyCalls(StopRule):
        def __init__(self, limit: int) -> None:
            self.limit, self.calls = limit, 0
        def closed(self, action: ActionFacts) -> None:
            self.calls += len(action.calls)
        def decide(self, ctx: StopContext) -> StopDecision | None:
            if self.calls <= self.limit:
                return None
            return StopDecision("too_many_calls", ctx.frontier_anchor, "efficiency", f"{self.calls} calls", None)

    Evaluator(blueprint, stop_rules=[*default_stop_rules(), TooManyCalls(50)])

A plain function ``rule(ctx) -> StopDecision | None`` is a rule with no state. Fatal minefield
interception is not here: it fires on the raw clock, before a call executes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.records import StopRecord
from dynsteer_hook.model.spending import Spend
from dynsteer_hook.runtime.counters import FailingCalls, Questions, asks_to_go_on

if TYPE_CHECKING:
    from dynsteer_hook.judges.steps import CallFacts
    from dynsteer_hook.model.records import StageRecord


@dataclass(frozen=True, slots=True)
class Outcome:
    """One call of a closed action as the rules count it: its identity (tool and arguments), whether it succeeded."""

    signature: bytes
    ok: bool
    k: int
    detail: str


@dataclass(frozen=True, slots=True)
class ActionFacts:
    """What one closed action did, told to every stop rule after it is evaluated.

    Attributes:
        k_start: The raw event the action began at.
        t: The action's closed-action index.
        config: The evaluator's thresholds.
        calls: Its tool calls, in the order they were issued.
        outcomes: The same calls as identities and outcomes, in the order the evaluator matched them.
        message: What the agent told the user in it, if anything.
        settled: The milestones it settled.
        stages: The stages judged because of it, in blueprint order.
        had_ready: Whether a milestone was ready to settle before it.
    """

    k_start: int
    t: int
    config: EvaluatorConfig
    calls: tuple[CallFacts, ...]
    outcomes: tuple[Outcome, ...]
    message: str | None
    settled: tuple[str, ...]
    stages: tuple[StageRecord, ...]
    had_ready: bool

    @property
    def idle(self) -> bool:
        """Whether its calls failed or repeated an earlier call (work that moves nothing on)."""
        return any(not c.ok or c.repeated_of is not None for c in self.calls)


@dataclass(frozen=True, slots=True)
class StopContext:
    """The evaluator's state after closed action t, as stop rules see it when asked to decide.

    ``stage_*`` describe the stage this decision follows (None when the action judged none);
    ``stage_index`` is its place in ``action.stages``. ``spending`` is what each role's models spent so
    far (``model.spending``); a decision asked when a role reported its spending has no ``action``.
    """

    k: int
    t: int
    config: EvaluatorConfig
    frontier: tuple[str, ...]
    frontier_anchor: str
    action: ActionFacts | None = None
    stage_index: int | None = None
    stage_milestone: str | None = None
    stage_anchor: str | None = None
    stage_score: float | None = None
    stage_weakest: str | None = None
    stage_first_cited: tuple[int, int] | None = None
    spending: Mapping[str, Spend] = field(default_factory=dict)


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


class StopRule:
    """One stop criterion with its own state: told what happens, asked whether to stop. Each method is a no-op here."""

    def user_said(self, text: str) -> None:
        """A user turn."""

    def closed(self, action: ActionFacts) -> None:
        """A closed action, evaluated (its stages judged); ``decide`` follows."""

    def decide(self, ctx: StopContext) -> StopDecision | None:
        """A decision to stop, or ``None`` to go on."""
        return None


RuleLike = StopRule | Callable[[StopContext], StopDecision | None]
"""What the evaluator takes as a stop rule: a ``StopRule``, or a function of the context alone."""


class StructuralFailure(StopRule):
    """Repeated unparseable payloads or schema errors (criterion 2): ``structural_patience`` malformed calls with no
    well-formed call and no message to the user in between (the user may supply what the agent lacked)."""

    def __init__(self) -> None:
        self.streak = 0
        self.since: tuple[int, int] | None = None
        self.detail = ""

    def closed(self, action: ActionFacts) -> None:
        for c in action.calls:
            if c.structural:
                self.streak += 1
                if self.since is None:
                    self.since = (c.k_call, action.t)
                self.detail = c.issues[0].message if c.issues else (c.exception or "").splitlines()[-1][:160]
            else:
                self.streak, self.since = 0, None
        if action.message is not None:
            self.streak, self.since = 0, None

    def decide(self, ctx: StopContext) -> StopDecision | None:
        if self.streak < ctx.config.structural_patience:
            return None
        return StopDecision("structural_failure", ctx.frontier_anchor, "tool_compliance",
                            f"{self.streak} consecutive malformed tool calls; last: {self.detail}", self.since)


class RepeatedFailure(StopRule):
    """One identical call failing again and again: ``repeated_failure_patience`` failures of the same tool with the
    same arguments, with no milestone settled and no message to the user in between (a loop, even when each call is
    well-formed and only raises at run time). Blames the first of those failures."""

    def __init__(self) -> None:
        self.failing = FailingCalls()

    def closed(self, action: ActionFacts) -> None:
        for o in action.outcomes:
            self.failing.outcome(o.signature, o.ok, o.k, action.t, o.detail)
        if action.message is not None or action.settled:
            self.failing.clear()

    def decide(self, ctx: StopContext) -> StopDecision | None:
        worst = self.failing.most_failed()
        if worst is None or worst[0] < ctx.config.repeated_failure_patience:
            return None
        n, since, detail = worst
        return StopDecision("repeated_failure", ctx.frontier_anchor, "tool_compliance",
                            f"the same call failed {n} times without progress; last: {detail}", since)


class LowScore(StopRule):
    """Persistent low quality: ``low_score_patience`` stages in a row under theta_fail (criterion 3). Each stage an
    action judged is decided on with the streak as it stood after that stage."""

    def __init__(self) -> None:
        self.streak = 0
        self._after: list[int] = []  # the streak after each stage of the last action

    def closed(self, action: ActionFacts) -> None:
        self._after = []
        for stage in action.stages:
            self.streak = self.streak + 1 if stage.composite < action.config.theta_fail else 0
            self._after.append(self.streak)

    def decide(self, ctx: StopContext) -> StopDecision | None:
        if ctx.stage_score is None or ctx.stage_index is None:
            return None
        streak = self._after[ctx.stage_index] if ctx.stage_index < len(self._after) else self.streak
        if streak < ctx.config.low_score_patience:
            return None
        return StopDecision(
            "low_score",
            ctx.stage_anchor or ctx.frontier_anchor,
            ctx.stage_weakest or "correctness",
            f"stage {ctx.stage_milestone} scored {ctx.stage_score:.3f} < theta_fail={ctx.config.theta_fail} "
            f"({streak} low stage(s) in a row)",
            ctx.stage_first_cited,
        )


class FrontierStagnation(StopRule):
    """N_stag closed actions in a row without advancing the ready frontier (criterion 4).

    With an empty frontier only idle tool calls count (calls that failed or repeated an earlier one), so an agent
    that keeps calling tools when nothing is left to settle is stopped too, while a new look-up may answer a user
    who reopened the task. A message that asks the user for something it has not asked before is progress, not
    stagnation: the task may need what only the user knows (insufficient-information and multi-turn tasks), so it
    resets the count and is never blamed as the start of a stagnation. Asking the very same question again is not
    progress. A user who asks the agent to go on ("keep trying", "go ahead") ends the count: the user, not the rules,
    has judged the run worth continuing.
    """

    def __init__(self) -> None:
        self.count = 0
        self.since: tuple[int, int] | None = None
        self.questions = Questions()

    def user_said(self, text: str) -> None:
        if asks_to_go_on(text):
            self.count, self.since = 0, None

    def closed(self, action: ActionFacts) -> None:
        calls = bool(action.calls)
        # a question asked only when nothing settled (asking notes it: the same question later is no progress)
        if action.settled or (action.message is not None and not calls and self.questions.new(action.message)):
            self.count, self.since = 0, None
        elif action.had_ready or (calls and action.idle):
            self.count += 1
            if self.since is None:
                self.since = (action.k_start, action.t)

    def decide(self, ctx: StopContext) -> StopDecision | None:
        if self.count < ctx.config.n_stag:
            return None
        what = f"settling any of {list(ctx.frontier)}" if ctx.frontier else "anything: no milestone is left to settle"
        return StopDecision("frontier_stagnation", ctx.frontier_anchor, "efficiency",
                            f"{self.count} closed actions without {what}", self.since)


def default_stop_rules() -> tuple[StopRule, ...]:
    """The built-in rules, fresh, in the order they are checked (the first decision wins)."""
    return (StructuralFailure(), RepeatedFailure(), LowScore(), FrontierStagnation())


DEFAULT_STOP_RULES: Sequence[StopRule] = default_stop_rules()
"""The built-in rules, checked in this order; the first decision wins (the evaluator works on copies of them)."""


class FunctionRule(StopRule):
    """A function of the context alone, as a rule with no state."""

    def __init__(self, function: Callable[[StopContext], StopDecision | None]) -> None:
        self.function = function

    def decide(self, ctx: StopContext) -> StopDecision | None:
        return self.function(ctx)


def as_rule(rule: RuleLike) -> StopRule:
    """A ``StopRule`` of whatever the evaluator was given."""
    return rule if isinstance(rule, StopRule) else FunctionRule(rule)
