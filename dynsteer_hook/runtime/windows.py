"""The closed actions of a run and the dominator-bounded evidence window of each stage.

The window of a stage settling m* at t is W(m*) = [t_idom(m*), t] (paper §3.3): the anchor
step that settled idom(m*) (context only), the step t itself, steps in between that
settled an ancestor of m*, and steps in between that settled nothing unless every tool
they called belongs to milestones of other branches.

``StepLog`` keeps, for every closed action, the small ``StepRecord`` of the report, and
the full ``Step`` (arguments, results, state changes) only while a future window can
still open at or before it: a step older than the anchor of every unsettled milestone
whose anchor has settled is released. On a chain this keeps the steps since the last
settlement; on a graph whose unsettled milestones hang off s0 it keeps everything, as
their windows demand.

Selecting a window costs the ancestors of m* that can have settled inside it plus the
idle steps inside it, not the length of the run.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Collection, Mapping

from dynsteer_hook.judges.steps import Step
from dynsteer_hook.model.dominators import START, DominatorTree
from dynsteer_hook.model.records import StepRecord


class StepLog:
    """Steps of a run, their report records, and window selection.

    Args:
        dominators: The blueprint's dominator tree.
        tool_owners: Milestone ids per tool name.
        settled_at: The closed action at which each settled milestone settled (read, not copied).
    """

    __slots__ = ("_dom", "_idle", "_kept_from", "_opens", "_owners", "_records", "_settled_at", "_steps", "_waiting")

    def __init__(self, dominators: DominatorTree, tool_owners: Mapping[str, Collection[str]], settled_at: Mapping[str, int]) -> None:
        self._dom = dominators
        self._owners = tool_owners
        self._settled_at = settled_at
        self._steps: list[Step | None] = []
        self._records: list[StepRecord] = []
        self._idle: list[int] = []
        self._kept_from = 1
        self._waiting: dict[int, int] = {}  # window start -> unsettled milestones whose window opens there
        self._opens: list[int] = []  # heap of those window starts (stale entries skipped lazily)
        for _ in dominators.children(START):
            self._wait(0)

    def __len__(self) -> int:
        return len(self._steps)

    def append(self, step: Step, record: StepRecord) -> None:
        """Log closed action ``step.t`` (the next one)."""
        self._steps.append(step)
        self._records.append(record)
        if not step.settled:
            self._idle.append(step.t)

    def record(self, t: int) -> StepRecord:
        """The report record of closed action ``t``."""
        return self._records[t - 1]

    def records(self) -> list[StepRecord]:
        """Every report record, in order."""
        return list(self._records)

    def kept(self) -> int:
        """How many full steps are held; earlier ones were released to their records."""
        return len(self._steps) - (self._kept_from - 1)

    def step(self, t: int) -> Step:
        """The full step ``t``; only steps a window can still reach are kept."""
        s = self._steps[t - 1]
        if s is None:
            raise LookupError(f"step {t} was released: no window can reach it any more")
        return s

    # -- which steps a future window can reach --------------------------------------------

    def _wait(self, start: int) -> None:
        count = self._waiting.get(start, 0)
        if count == 0:
            heapq.heappush(self._opens, start)
        self._waiting[start] = count + 1

    def settled(self, milestone: str, t: int) -> None:
        """Note that ``milestone`` settled at ``t`` (call once ``settled_at`` says so)."""
        anchor = self._dom.idom(milestone)
        start = 0 if anchor == START else self._settled_at[anchor]
        left = self._waiting[start] - 1
        if left:
            self._waiting[start] = left
        else:
            del self._waiting[start]
        for _ in self._dom.children(milestone):
            self._wait(t)

    def release(self) -> None:
        """Drop the full steps no future window can reach (call after the stages of an action are judged)."""
        while self._opens and self._opens[0] not in self._waiting:
            heapq.heappop(self._opens)
        floor = self._opens[0] if self._opens else len(self._steps) + 1
        while self._kept_from < floor:
            self._steps[self._kept_from - 1] = None
            self._kept_from += 1

    # -- windows ------------------------------------------------------------------------

    def window(self, milestone: str, t: int) -> tuple[str, int, int, list[Step]]:
        """The anchor, its t and k, and the steps of the window of ``milestone`` settled at ``t``."""
        anchor = self._dom.idom(milestone)
        t_anchor = 0 if anchor == START else self._settled_at[anchor]
        k_anchor = 0 if t_anchor == 0 else self._records[t_anchor - 1].k_end
        chosen = {t}
        # Under frontier settlement the other ancestors settle no later than the anchor.
        for x in self._dom.region(milestone):
            tx = self._settled_at.get(x)
            if tx is not None and t_anchor < tx < t:
                chosen.add(tx)
        related: dict[str, bool] = {}
        for i in range(bisect.bisect_right(self._idle, t_anchor), bisect.bisect_left(self._idle, t)):
            s = self.step(self._idle[i])
            if not self._belongs_elsewhere(s, milestone, related):
                chosen.add(s.t)
        steps = [self.step(x) for x in sorted(chosen)]
        if t_anchor >= 1:
            steps.insert(0, self.step(t_anchor).as_anchor())
        return anchor, t_anchor, k_anchor, steps

    def _belongs_elsewhere(self, s: Step, milestone: str, related: dict[str, bool]) -> bool:
        """Whether an unsettling step only tried operations of milestones that are not ancestors of ``milestone``."""
        owned = False
        for c in s.calls:
            for tool in (c.tool, c.canonical_tool):
                if not tool or not self._owners.get(tool):
                    continue
                owned = True
                answer = related.get(tool)
                if answer is None:
                    answer = any(self._dom.reaches(o, milestone) for o in self._owners[tool])
                    related[tool] = answer
                if answer:
                    return False
        return owned
