"""Judging one stage: the settled milestone's evidence window and context, the judge ladder's verdict,
the stage's record, and the steps a low score blames (paper §3.3-3.4, Algorithm 1 lines 10-16).

``StageJudge`` owns nothing of the run: it reads the evaluator's parts (the blueprint's
look-ups, the settlement with its windows, what the agent was shown, the ladder) and records
the faults a judge's citations blame in the run's ``FaultLedger``.
"""

from __future__ import annotations

from dynsteer_hook.judges.base import BindingCheck, StageContext, StageGoal
from dynsteer_hook.judges.steps import Step
from dynsteer_hook.model.config import DIMENSIONS, EvaluatorConfig
from dynsteer_hook.model.predicates import describe
from dynsteer_hook.model.records import BindingRecord, StageRecord, TierUse, Window
from dynsteer_hook.runtime.faults import Fault, FaultLedger
from dynsteer_hook.runtime.grounding import TextGrounding
from dynsteer_hook.runtime.index import BlueprintIndex
from dynsteer_hook.runtime.ladder import JudgeLadder, StageJudgement
from dynsteer_hook.runtime.settlement import Settlement


class StageJudge:
    """Judges each settled stage inside its dominator-bounded window.

    Args:
        task: The blueprint's task, for the judges' context.
        config: Thresholds (``theta_warn`` decides which citations blame a step).
        index: The blueprint's look-ups.
        settlement: Settled milestones, the frontier and the step log with its windows.
        grounding: What the agent was shown so far.
        ladder: The judge ladder (tiers, weights, usage).
        faults: The run's faulty steps, which low-scoring citations add to.
    """

    __slots__ = ("_config", "_faults", "_grounding", "_index", "_ladder", "_settlement", "_task")

    def __init__(self, task: str, config: EvaluatorConfig, index: BlueprintIndex, settlement: Settlement, grounding: TextGrounding,
                 ladder: JudgeLadder, faults: FaultLedger) -> None:
        self._task = task
        self._config = config
        self._index = index
        self._settlement = settlement
        self._grounding = grounding
        self._ladder = ladder
        self._faults = faults

    def judge(self, m: str, step: Step) -> StageRecord:
        """The record of milestone ``m``'s stage, settled in ``step``, as the ladder judged it."""
        settlement = self._settlement
        milestone = self._index.by_id[m]
        anchor, t_anchor, k_anchor, window = settlement.log.window(m, step.t)
        call = next((c for c in step.calls if c.settled == m), None)
        upto = call.grounding_upto if call is not None else self._grounding.size
        bindings = settlement.binding_checks(m, call, upto)
        context = StageContext(
            task=self._task,
            anchor=anchor,
            settled=tuple(settlement.settled_order),
            frontier=settlement.tracker.snapshot(),
            minefields=self._index.minefield_summary,
            tool_schemas={
                name: spec.parameters
                for name in {c.tool for s in window for c in s.calls}
                if (spec := self._index.catalog.spec(name)) is not None
            },
            bindings=bindings,
            produces_binding=m in self._index.producers,
            ungrounded=call.ungrounded if call is not None else (),
        )
        goal = StageGoal(
            milestone=m,
            tool=milestone.tool,
            role=milestone.role,
            description=milestone.description,
            conditions=tuple(describe(p) for p in milestone.args),
        )
        proximity = sum(len(c.fatal_near) for st in window if not st.anchor for c in st.calls)
        j = self._ladder.judge(goal, window, context, step.t, proximity)
        record = _record(m, milestone.tool, milestone.role, step, anchor, t_anchor, k_anchor, window, j, bindings)
        self._blame(record, j, step)
        return record

    def _blame(self, record: StageRecord, j: StageJudgement, step: Step) -> None:
        """A judge that scores a dimension under theta_warn blames the steps it cites (not Tier 1's efficiency:
        it cites every call that settled nothing, helpers included; the call rules judge those one by one as
        repeats, off-task calls and failures)."""
        cfg = self._config
        settlement = self._settlement
        for d in DIMENSIONS:
            if j.s[d] < cfg.theta_warn and not (d == "efficiency" and j.used[d] == 1):
                for x in record.cited[d] or [step.t]:
                    if not self._faults.has_step(x):
                        self._faults.add(Fault(settlement.log.record(x).k_start, x, None, d, "judged", j.scores[d].rationale[:400]))


def _record(m: str, tool: str, role: str, step: Step, anchor: str, t_anchor: int, k_anchor: int, window: list[Step],
            j: StageJudgement, bindings: tuple[BindingCheck, ...]) -> StageRecord:
    """The stage's audit record: its window on both clocks and the ladder's verdict, rounded as reports show it."""
    return StageRecord(
        milestone=m,
        tool=tool,
        role=role,
        t=step.t,
        k=step.k_end,
        window=Window(
            anchor=anchor, t_start=t_anchor, t_end=step.t, k_start=k_anchor, k_end=step.k_end,
            steps=[st.t for st in window],
        ),
        tiers={d: TierUse(requested=j.requested[d], used=j.used[d]) for d in DIMENSIONS},
        scores={d: round(j.s[d], 6) for d in DIMENSIONS},
        uncertainty={d: round(j.u[d], 6) for d in DIMENSIONS},
        composite=round(j.composite, 6),
        weights_used={d: round(w, 6) for d, w in j.weights_used.items()},
        weights={d: round(w, 6) for d, w in j.weights.items()},
        next_tiers=dict(j.next_tiers),
        rationale={d: j.scores[d].rationale for d in DIMENSIONS},
        cited={d: sorted({x for x in j.scores[d].cited_steps if 1 <= x <= step.t}) for d in DIMENSIONS},
        judges=sorted(set(j.judges)),
        degraded=list(j.degraded),
        bindings=[BindingRecord(name=b.name, arg=b.arg, value=b.value, from_producer=b.from_producer, seen_elsewhere=b.seen_elsewhere) for b in bindings],
    )
