"""ToolSandbox's own similarity of a played rollout: after dynsteer's report, once per snapshot, within a budget.

ToolSandbox scores a rollout by matching its milestones and minefields to the conversation's
snapshots with a brute-force search (``MilestoneMatcher._dfs``): every node of the search asks
for the similarity of a milestone at each later snapshot, and each pair it has not seen yet
builds two database views through polars (``ExecutionContext.get_database``). The snapshots are
the same at every node, so the views are too: ``SnapshotViews`` hands ToolSandbox's evaluation
a view of the played context that computes each view once per arguments and hands the same
frame back after that (polars frames are never changed in place, and ToolSandbox's similarity
functions only derive new ones, so the result is bit-identical). A looping agent's 14 turns
then cost 2.5-4 s instead of 23-26 s (``scripts/bench_similarity.py``).

The search still grows with the conversation (a turn of 100 parallel calls on a scenario of four
milestones: 65 s instead of 156 s; of 1,000: more than ten minutes), so it has a budget (``SimilarityOptions.budget``, ``--similarity-budget``). Past it,
or once the run is interrupted, the search stops at its next node and the similarity is
recorded as unknown with the reason (``SimilarityUnknown``), never as 0; a failure inside
ToolSandbox's evaluation is recorded the same way. The search is stopped from inside:
``SnapshotViews`` and a copy of each matcher's milestone graph whose ``copy`` (made for every
child of the search) looks at the clock, so nothing of the scenario is changed, no thread or
process is needed, and ToolSandbox's code runs as it is.

``evaluating`` is how a rollout gets there: the scenario's ``play_and_evaluate`` plays as
ToolSandbox wrote it, and when it comes to its evaluation, ``before`` runs first (dynsteer's
report is written then), and Ctrl-C from then on cuts only the similarity.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import networkx

from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.live.interrupts import InterruptControl

from tool_sandbox.common.evaluation import Evaluation, EvaluationResult, MilestoneMatcher, get_effective_turn_count
from tool_sandbox.common.execution_context import DatabaseNamespace, ExecutionContext
from tool_sandbox.common.scenario import Scenario

DEFAULT_BUDGET = 300.0
"""Seconds ToolSandbox's evaluation of one rollout may take (``--similarity-budget``): generous, since every shipped
scenario's takes well under a second once views are computed once per snapshot."""

BEING_COMPUTED = "being computed when this report was written (ToolSandbox evaluates after dynsteer's report)"
INTERRUPTED = "not computed: the run was interrupted while ToolSandbox computed it"


def over_budget(budget: float) -> str:
    """The reason of a similarity whose budget ran out."""
    return f"not computed within its budget of {budget:g} s (--similarity-budget)"


@dataclass(frozen=True, slots=True)
class SimilarityOptions:
    """How ToolSandbox's evaluation of each rollout runs (picklable: workers get a copy).

    Attributes:
        budget: Seconds it may take (None: no limit).
        cache: Compute each database view once per snapshot (False only to measure what that saves).
    """

    budget: float | None = DEFAULT_BUDGET
    cache: bool = True


DEFAULTS = SimilarityOptions()
"""The budget and the cache ``dynsteer run`` uses unless told otherwise."""


class SimilarityUnknown(Exception):  # noqa: N818 - a result, not an error: the rollout played, its similarity is unknown
    """ToolSandbox's similarity of a played rollout was not computed: why, and the rollout's turn count."""

    def __init__(self, reason: str, turn_count: int | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.turn_count = turn_count


class _Stop(BaseException):
    """Ends ToolSandbox's search from inside (a ``BaseException``, so that no ``except Exception`` on its way keeps it)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Deadline:
    """When ToolSandbox's evaluation must stop: its budget has run out, or the run was interrupted.

    Args:
        budget: Seconds from now (None: no limit).
        control: The process's Ctrl-C control (a Ctrl-C that came stops the evaluation).
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(self, budget: float | None, control: InterruptControl | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self._control = control
        self._clock = clock
        self._end = None if budget is None else clock() + budget
        self.checks = 0

    def check(self) -> None:
        """Raise ``_Stop`` when the evaluation must stop."""
        self.checks += 1
        if self._end is not None and self._clock() >= self._end:
            assert self.budget is not None
            raise _Stop(over_budget(self.budget))
        if self._control is not None and self._control.stopping():
            raise _Stop(INTERRUPTED)


class SnapshotViews:
    """An ``ExecutionContext`` as ToolSandbox's evaluation reads it: each database view computed once per arguments
    (when ``cache``), and the deadline looked at on every request. Everything else is the context's own."""

    def __init__(self, context: ExecutionContext, deadline: Deadline, *, cache: bool = True) -> None:
        self._context = context
        self._deadline = deadline
        self._views: dict[tuple[Any, ...], Any] | None = {} if cache else None
        self.computed = 0

    def get_database(self, *args: Any, **kwargs: Any) -> Any:
        """``ExecutionContext.get_database``, computed once per arguments (the frame is shared: nobody changes it)."""
        self._deadline.check()
        if self._views is None:
            self.computed += 1
            return self._context.get_database(*args, **kwargs)
        key = (args, tuple(sorted(kwargs.items())))  # ToolSandbox spells each request the same way every time
        found = self._views.get(key)
        if found is None:
            self.computed += 1
            found = self._views[key] = self._context.get_database(*args, **kwargs)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class _TimedGraph(networkx.DiGraph):
    """A milestone graph whose copies look at the deadline: the search copies it for every child it explores."""

    deadline: Deadline | None = None

    def copy(self, as_view: bool = False) -> Any:
        if self.deadline is not None:
            self.deadline.check()
        made = super().copy(as_view=as_view)
        made.deadline = self.deadline
        return made


def _timed(matcher: MilestoneMatcher, deadline: Deadline) -> MilestoneMatcher:
    """A shallow copy of ``matcher`` whose milestone graph looks at ``deadline`` (the scenario's matcher is untouched)."""
    timed = copy.copy(matcher)
    graph = _TimedGraph(matcher.milestone_dag)
    graph.deadline = deadline
    timed.milestone_dag = graph
    return timed


def evaluate(evaluation: Evaluation, context: ExecutionContext, max_turn_count: int, options: SimilarityOptions = DEFAULTS,
             control: InterruptControl | None = None) -> EvaluationResult:
    """ToolSandbox's ``evaluation.evaluate`` of a played ``context``, within ``options.budget`` (see the module's text).

    Raises:
        SimilarityUnknown: It was not computed (the budget ran out, the run was interrupted, or it failed), with why.
    """
    deadline = Deadline(options.budget, control)
    bounded = copy.copy(evaluation)
    bounded.milestone_matcher = _timed(evaluation.milestone_matcher, deadline)
    bounded.minefield_matcher = _timed(evaluation.minefield_matcher, deadline)
    views = SnapshotViews(context, deadline, cache=options.cache)
    try:
        return bounded.evaluate(execution_context=views, max_turn_count=max_turn_count)  # a view of the context, duck-typed
    except _Stop as stop:
        raise SimilarityUnknown(stop.reason, turn_count(context)) from None
    except Exception as exc:  # ToolSandbox's own evaluation failed: the rollout played all the same
        raise SimilarityUnknown(f"ToolSandbox's evaluation failed: {type(exc).__name__}: {exc}"[:500], turn_count(context)) from None


def turn_count(context: ExecutionContext) -> int | None:
    """ToolSandbox's turn count of a played context (it needs no search; None when it cannot be read)."""
    try:
        return int(get_effective_turn_count(context.get_database(DatabaseNamespace.SANDBOX, get_all_history_snapshots=True)))
    except Exception:  # the count is a courtesy: a context it cannot read leaves it unknown
        return None


class _Evaluating:
    """A scenario's ``Evaluation`` as ``play_and_evaluate`` sees it: ``before`` first, then ``evaluate`` above.

    ``play_and_evaluate`` reads the matchers' milestones after the evaluation (for ``conversation.json``): those are the
    scenario's own.
    """

    def __init__(self, evaluation: Evaluation, options: SimilarityOptions, control: InterruptControl | None,
                 before: Callable[[], None] | None) -> None:
        self._evaluation = evaluation
        self._options = options
        self._control = control
        self._before = before
        self.milestone_matcher = evaluation.milestone_matcher
        self.minefield_matcher = evaluation.minefield_matcher

    def evaluate(self, execution_context: ExecutionContext, max_turn_count: int) -> EvaluationResult:
        if self._control is not None:
            self._control.disarm()  # the rollout is over: a Ctrl-C from here on only cuts the similarity
        if self._before is not None:
            self._before()
        return evaluate(self._evaluation, execution_context, max_turn_count, self._options, self._control)


def evaluating(scenario: Scenario, options: SimilarityOptions = DEFAULTS, control: InterruptControl | None = None,
               before: Callable[[], None] | None = None) -> Scenario:
    """A shallow copy of ``scenario`` whose ``play_and_evaluate`` plays as ToolSandbox wrote it and evaluates with
    ``evaluate`` above, calling ``before()`` first (the scenario itself is left as it is).

    Its ``play_and_evaluate`` raises ``SimilarityUnknown`` when the similarity was not computed: the rollout played,
    ``pretty_print.txt`` and ``execution_context.json`` are written, and ``conversation.json`` (the conversation
    annotated with ToolSandbox's milestone matches) is not.
    """
    played = copy.copy(scenario)
    played.evaluation = _Evaluating(scenario.evaluation, options, control, before)  # duck-typed: what play_and_evaluate reads
    return played
