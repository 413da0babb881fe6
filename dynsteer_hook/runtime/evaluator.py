"""The execution-time evaluator: Algorithm 1 of the paper, one event at a time.

``observe(event)`` is the whole interface an agent loop needs. On every raw event it runs
minefield interception (a fatal call halts before it executes); on every closed action it
settles milestones on the ready frontier, judges each settled stage inside its
dominator-bounded window, adapts weights and tiers, and checks the stop rules. A stop
raises ``Halt`` inside the caller's loop. ``finish()`` returns the report.

The class orchestrates; each job has a module of its own: the blueprint's look-ups
(``index``), interception of calls as they are issued (``interception``), matching and
windows (``settlement``, ``windows``), the judge ladder with its usage accounting
(``ladder``), the stop rules, each keeping its own counts (``stop_rules``), the faulty steps
(``faults``), the judging of a settled stage (``stages``), and the pieces of the report (``reporting``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import structlog

from dynsteer_hook.judges.base import Judge
from dynsteer_hook.judges.steps import CallFacts, Step, ValueVerdict
from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL, Blueprint, Minefield
from dynsteer_hook.model.config import DIMENSIONS, EvaluatorConfig
from dynsteer_hook.model.contract import validate_blueprint
from dynsteer_hook.model.errors import BlueprintError, Halt
from dynsteer_hook.model.events import Event, SystemMessage, ToolCall, ToolResult, UserMessage
from dynsteer_hook.model.records import AuditSink, Report, StageRecord, StepRecord, StopRecord, TraceFaultRecord, conclude
from dynsteer_hook.model.spending import Spend, cost_record
from dynsteer_hook.runtime.clock import CallOutcome, ClosedAction, DualClock
from dynsteer_hook.runtime.faults import CallRules, Fault, FaultLedger, first_error
from dynsteer_hook.runtime.grounding import TextGrounding
from dynsteer_hook.runtime.identifiers import emptied_fields, ungrounded_values, user_requested
from dynsteer_hook.runtime.index import BlueprintIndex
from dynsteer_hook.runtime.interception import Hit, Interceptor, PendingCall, signature
from dynsteer_hook.runtime.ladder import JudgeLadder
from dynsteer_hook.runtime.reporting import pending_fields, stage_error, step_record, tail_record
from dynsteer_hook.runtime.settlement import Settlement
from dynsteer_hook.runtime.stages import StageJudge
from dynsteer_hook.runtime.stop_rules import ActionFacts, Outcome, RuleLike, StopContext, StopRule, as_rule, default_stop_rules
from dynsteer_hook.runtime.transcript import TranscriptRecorder
from dynsteer_hook.runtime.values import ValueChecks, clock_reading

# Through the standard library's logging: a program embedding the package sees its warnings only, unless it
# configures logging (the command line does, in logs.py).
_log = structlog.wrap_logger(logging.getLogger(__name__))

_STEP_FIELDS = dataclasses.fields(StepRecord)

__all__ = ["Evaluator", "PendingCall"]


def _canonical(o: CallOutcome) -> tuple[str, str]:
    """A key that orders the calls of one action whatever order they were issued in."""
    args = o.call.arguments
    text = json.dumps(args, sort_keys=True, default=str) if args is not None else "\x00" + (o.call.raw_arguments or "")
    return (o.call.tool, text)


class Evaluator:
    """Execution-time stage-wise evaluator for one run against one blueprint.

    Args:
        blueprint: The milestone DAG; it must pass contract validation.
        config: Thresholds and rates; defaults documented on ``EvaluatorConfig``.
        judges: Judge per tier; Tier 1 rules are added when missing.
        stop_rules: Closed-action stop criteria, checked in order (default: ``default_stop_rules()``); the evaluator
            works on its own copy of each, so one list serves many runs.
        sink: Receives audit records as they happen.
    """

    def __init__(
        self,
        blueprint: Blueprint,
        config: EvaluatorConfig | None = None,
        *,
        judges: Mapping[int, Judge] | None = None,
        stop_rules: Sequence[RuleLike] | None = None,
        sink: AuditSink | None = None,
    ) -> None:
        violations = validate_blueprint(blueprint, None, blueprint.task or "blueprint")
        if violations:
            raise BlueprintError(f"blueprint is not valid: {violations[0]}; fix it before evaluating")
        self.blueprint = blueprint
        self.config = config or EvaluatorConfig()
        self._stop_rules: tuple[StopRule, ...] = (default_stop_rules() if stop_rules is None
                                                  else tuple(copy.deepcopy(as_rule(r)) for r in stop_rules))
        self._sink = sink
        self._index = BlueprintIndex(blueprint)
        self._clock = DualClock()
        self._grounding = TextGrounding()
        self._user_words = TextGrounding()  # what the user said: a change in their own words was asked for
        self._interceptor = Interceptor(self._index, self._grounding, self._user_words)
        self._settlement = Settlement(self._index, self._grounding)
        self._ladder = JudgeLadder(self.config, judges)
        self._faults = FaultLedger()
        self._rules = CallRules(self._faults, set(self._index.tool_owners))
        self._stage_judge = StageJudge(blueprint.task, self.config, self._index, self._settlement, self._grounding, self._ladder, self._faults)
        self._stages: list[StageRecord] = []
        self._last_closed: tuple[ClosedAction, ...] = ()
        self._stop: StopRecord | None = None
        self._ended = False
        self._left_pending: list[str] | None = None
        self._transcript = TranscriptRecorder()  # the conversation the report shows
        self._values = ValueChecks()  # the rollout's clock and what the user stated, for pinned values
        self._spent: dict[str, Spend] = {}  # what the agent's and the user's models spent so far (the judges': the ladder)
        self._models: dict[str, str | None] = {}
        self._emit({"type": "start", "task": blueprint.task, "blueprint": self._index.summary(), "config": self.config.to_dict()})

    # -- public ----------------------------------------------------------------------

    @property
    def k(self) -> int:
        """Raw events seen."""
        return self._clock.k

    @property
    def t(self) -> int:
        """Closed actions seen."""
        return self._clock.t

    @property
    def stop(self) -> StopRecord | None:
        """The stop record once the run was halted."""
        return self._stop

    @property
    def frontier(self) -> list[str]:
        """The ready frontier now."""
        return self._settlement.tracker.frontier()

    @property
    def settled(self) -> list[str]:
        """Settled milestones in settlement order."""
        return list(self._settlement.settled_order)

    @property
    def stages(self) -> Sequence[StageRecord]:
        """The stages judged so far, in order (read only)."""
        return self._stages

    @property
    def last_closed(self) -> tuple[ClosedAction, ...]:
        """The actions the last ``observe`` (or ``finish``) closed, oldest first: none, one, or a waiting
        action closed unanswered and then the action the event itself closed."""
        return self._last_closed

    def set_wall_clock(self, epoch: float, utc_offset: float = 0.0) -> None:
        """The clock when the rollout started (seconds since the epoch) and its local offset from UTC in seconds:
        moments the user states ("tomorrow 5PM") are resolved against it until the agent reads the clock itself."""
        self._values.wall_clock(epoch, utc_offset)

    def screen(self, call: ToolCall) -> Minefield | None:
        """The fatal minefield a pending call would step on, without recording anything."""
        return self._interceptor.screen(call)

    def observe(self, event: Event) -> ClosedAction | None:
        """Feed one raw event; returns the closed action it completed, if any.

        Raises:
            Halt: A stop criterion fired (for a fatal minefield, before the call executes).
        """
        self._last_closed = ()
        if self._stop is not None:
            return None
        self._transcript.add(event)
        flushed = self._clock.moved_on(event)
        if flushed is not None:  # calls left waiting while the agent moved on: close them unanswered
            self._record_trace_faults()
            self._on_closed(flushed)
        faults = self._clock.pairing.count
        action = self._clock.tick(event)
        paired = self._clock.pairing.count == faults
        self._record_trace_faults()
        if isinstance(event, (UserMessage, SystemMessage)):
            self._grounding.add(event.content)
            if isinstance(event, UserMessage):
                self._user_words.add(event.content)
                self._values.user(event.content)
                for rule in self._stop_rules:
                    rule.user_said(event.content)
        elif isinstance(event, ToolCall):
            if event.actor == "agent":
                hit = self._interceptor.issued(event, self._clock.t + 1)
                if hit is not None:
                    self._halt_on_minefield(event, hit)
        elif isinstance(event, ToolResult) and paired:  # a result no call asked for was not shown to the agent
            self._grounding.add_value(event.result)
        if action is not None:
            self._on_closed(action)
        return action or flushed

    def spent(self, role: str, spend: Spend, model: str | None = None) -> None:
        """What ``role``'s model (``agent``, ``user``) has spent so far in this rollout; the stop rules are asked at once,
        so a budget stops the rollout before the role's next call.

        Raises:
            Halt: A stop rule (``runtime.budget.Budget``) decided to stop.
        """
        self._spent[role] = spend
        if model is not None:
            self._models[role] = model
        if self._stop is None and not self._ended:
            self._check_stop_rules(None, None, None)

    def spending(self) -> dict[str, Spend]:
        """What each role's models spent so far: the agent's and the user's as reported, the judges' as counted."""
        judges = self._ladder.spend
        return {**self._spent, "judges": judges} if judges.calls or not judges.calls_known else dict(self._spent)

    def finish(self, *, crash: str | None = None, interrupted: bool = False) -> Report:
        """The report of the run so far (call once the rollout has ended).

        Calls still waiting for a result are closed unanswered and evaluated (without the
        stop rules: the run is over); they stay listed in ``pending_calls``.

        Args:
            crash: Why the rollout crashed, when it did (the outcome is then ``crashed``).
            interrupted: The rollout was stopped by Ctrl-C (the outcome is then ``interrupted``).
        """
        cfg, settlement = self.config, self._settlement
        self._last_closed = ()
        if self._left_pending is None:
            self._left_pending = [f"{c.call_id}:{c.tool}" for c in self._clock.pending_calls]
            flushed = self._clock.flush() if self._stop is None else None
            if flushed is not None:
                self._record_trace_faults()
                self._on_closed(flushed, check_stops=False)
        n = len(self.blueprint.milestones)
        done = settlement.tracker.done()
        self._rules.finish(self._stop is None and done, self._stop is None and crash is None and not interrupted,
                           max(settlement.settled_at.values(), default=0))
        unsettled = settlement.unsettled()
        tail = tail_record(settlement.log.records(), self._stages, {self._index.by_id[m].tool for m in unsettled}, cfg, n)
        by_m = {s.milestone: s.composite for s in self._stages}
        # Validation guarantees n >= 1: a blueprint without milestones would make every run complete.
        score = sum(by_m.values()) / n - (tail.penalty if tail is not None else 0.0)
        score = 0.0 if self._stop is not None and self._stop.reason == "fatal_minefield" else max(0.0, score)
        faults = self._faults.records(self._stages, settlement.settled_at)
        report = Report(
            task=self.blueprint.task,
            outcome="halted" if self._stop else ("completed" if done else "incomplete"),
            halted=self._stop is not None,
            stop=self._stop,
            score=round(score, 6),
            stages=list(self._stages),
            first_error=first_error(faults),
            stage_error=stage_error(self._stages, settlement.log, self._stop, cfg),
            faults=faults,
            fault_count=self._faults.count,
            tail=tail,
            settled=self.settled,
            unsettled=unsettled,
            frontier=settlement.tracker.frontier(),
            k=self._clock.k,
            t=self._clock.t,
            steps=settlement.log.records(),
            **pending_fields(self._left_pending),
            trace_faults=[TraceFaultRecord(kind=f.kind, k=f.k, call_id=f.call_id, tool=f.tool, detail=f.detail) for f in self._clock.pairing.faults],
            trace_fault_count=self._clock.pairing.count,
            judge_usage=self._ladder.usage(),
            cost=cost_record(self.spending(), self._models),
            judges=self._ladder.settings(),
            blueprint=self._index.summary(),
            config=cfg.to_dict(),
        )
        report = report.model_copy(update={"transcript": self._transcript.transcript(report, self.blueprint.catalog)})
        report = conclude(report, crash=crash, interrupted=interrupted)
        if not self._ended:  # finish() may be called again; the log gets one end record
            self._ended = True
            self._emit({"type": "end", "outcome": report.outcome, "score": report.score, "k": report.k, "t": report.t}
                       | ({"crash": crash} if crash else {}))
        return report

    # -- raw clock -----------------------------------------------------------------

    def _halt_on_minefield(self, call: ToolCall, hit: Hit) -> None:
        frontier = self._settlement.tracker.frontier()
        anchor = self._index.anchor_of(frontier, self._settlement.settled_order)
        self._raise_stop(*hit.stop(call, self._clock.k, self._clock.t, anchor, frontier))

    def _record_trace_faults(self) -> None:
        for f in self._clock.pairing.drain():
            _log.info("trace_fault", kind=f.kind, k=f.k, call_id=f.call_id[:80], task=self.blueprint.task)
            self._emit({"type": "trace_fault", "kind": f.kind, "k": f.k, "call_id": f.call_id, "tool": f.tool, "detail": f.detail})

    # -- closed-action clock -------------------------------------------------------

    def _on_closed(self, action: ClosedAction, *, check_stops: bool = True) -> None:
        self._last_closed += (action,)
        t = action.t
        settlement = self._settlement
        had_ready = settlement.tracker.has_ready()
        taken: set[str] = set()
        facts: list[CallFacts] = []
        outcomes: list[Outcome] = []
        settled_now: list[str] = []
        version = self._rules.version
        # Parallel calls are matched in an order of their own, so the milestones they settle and the
        # stages judged do not depend on the order the agent issued them in.
        for o in sorted(action.calls, key=_canonical):
            c = self._call_facts(o, action, taken)
            if c.settled is not None:
                taken.add(c.settled)
                settled_now.append(c.settled)
            facts.append(c)
            sig = signature(c.tool, c.arguments if c.arguments is not None else {"\x00raw": c.raw_arguments})
            fault = self._rules.call(c, sig, t, version, self._index.owned(c.tool, c.canonical_tool))
            outcomes.append(Outcome(sig, c.ok, c.k_call, fault.detail if fault is not None else c.tool))
        facts.sort(key=lambda c: c.k_call)
        settled_now.sort(key=lambda m: self._index.order[m])
        self._rules.action_done(changed=bool(action.state_changes))
        if action.message is not None:
            self._rules.message(action.message.content, t)
            chosen, _ = settlement.match(AGENT_MESSAGE_TOOL, None, {"content": action.message.content}, (), taken)
            if chosen is not None:
                taken.add(chosen)
                settled_now.append(chosen)
        step = Step(
            t=t,
            k_start=action.k_start,
            k_end=action.k_end,
            kind=action.kind,
            calls=tuple(facts),
            message=action.message.content if action.message else None,
            settled=tuple(settled_now),
        )
        record = step_record(step)
        settlement.log.append(step, record)
        self._emit({"type": "step", **{f.name: getattr(record, f.name) for f in _STEP_FIELDS}})
        settlement.settle(settled_now, t, facts)
        # Every stage the action settled is judged, in blueprint order, and each reaches the stop rules.
        judged: list[StageRecord] = []
        for m in settled_now:
            stage = self._stage_judge.judge(m, step)
            self._stages.append(stage)
            self._emit({"type": "stage", **stage.model_dump()})
            judged.append(stage)
        told = ActionFacts(k_start=action.k_start, t=t, config=self.config, calls=tuple(facts), outcomes=tuple(outcomes),
                           message=action.message.content if action.message else None, settled=tuple(settled_now),
                           stages=tuple(judged), had_ready=had_ready)
        for rule in self._stop_rules:
            rule.closed(told)
        settlement.log.release()
        if check_stops:
            if judged:
                for i, stage_record in enumerate(judged):
                    self._check_stop_rules(told, stage_record, i)
            else:
                self._check_stop_rules(told, None, None)

    def _call_facts(self, o: CallOutcome, action: ClosedAction, taken: set[str]) -> CallFacts:
        """Everything the rules and judges need to know about one call of a closed action."""
        pre = self._interceptor.take(o.call.call_id)
        # Checked here rather than before the call runs, to keep the interception path short;
        # ``grounding_upto`` keeps the verdict to what the agent had been shown when it called.
        seen = partial(self._grounding.seen, upto=pre.grounding_upto)
        invented = ungrounded_values(o.call.arguments, seen, self._index.enums(o.call.tool))
        result = o.result
        chosen: str | None = None
        out_of_order: list[str] = []
        values: tuple[ValueVerdict, ...] = ()
        destroyed: tuple[str, ...] = ()
        if result is not None and result.exception is None and o.call.arguments is not None and o.call.rejected is None:
            reading = clock_reading(o.call.arguments, result.result)
            if reading is not None:
                self._values.reading(reading)
            own = result.state_changes if result.state_changes else action.state_changes
            chosen, out_of_order = self._settlement.match(o.call.tool, o.call.canonical_tool, o.call.arguments, own, taken)
            out_of_order = [m for m in out_of_order if m not in taken]  # a repeat of this action's settlement is not out of order
            if chosen is not None and self._index.by_id[chosen].values:
                values = self._values.verdicts(self._index.by_id[chosen].values, o.call.arguments)
                if any(v.ok is False for v in values):
                    chosen = None  # a value the user's words rule out does not reach the milestone: a later call may
            destroyed = emptied_fields(result.state_changes, partial(self._user_words.seen, upto=pre.user_upto))
        return CallFacts(
            k_call=o.k_call,
            k_result=o.k_result,
            tool=o.call.tool,
            canonical_tool=o.call.canonical_tool,
            arguments=o.call.arguments,
            raw_arguments=o.call.raw_arguments,
            result=result.result if result is not None else None,
            exception=result.exception if result is not None else "no result",
            issues=pre.issues,
            fatal_near=pre.fatal_near,
            warnings=pre.warnings,
            repeated_of=pre.repeated_of,
            state_changes=result.state_changes if result is not None else (),
            settled=chosen,
            out_of_order=tuple(out_of_order),
            grounding_upto=pre.grounding_upto,
            ungrounded=invented,
            requested=bool(result is not None and result.state_changes and chosen is None
                           and user_requested(o.call.arguments, partial(self._user_words.seen, upto=pre.user_upto))),
            values=values,
            destroyed=destroyed,
        )

    # -- stopping ------------------------------------------------------------------

    def _check_stop_rules(self, action: ActionFacts | None, stage: StageRecord | None, index: int | None) -> None:
        frontier = self._settlement.tracker.snapshot()
        weakest = first_cited = None
        if stage is not None:
            weakest = min(DIMENSIONS, key=lambda d: (stage.scores[d], DIMENSIONS.index(d)))
            cited = stage.cited.get(weakest) or [stage.t]
            first_t = min(cited)
            first_cited = (self._settlement.log.record(first_t).k_start, first_t)
        ctx = StopContext(
            k=self._clock.k,
            t=self._clock.t,
            config=self.config,
            frontier=frontier,
            frontier_anchor=self._index.anchor_of(frontier, self._settlement.settled_order),
            action=action,
            stage_index=index,
            stage_milestone=stage.milestone if stage else None,
            stage_anchor=stage.window.anchor if stage else None,
            stage_score=stage.composite if stage else None,
            stage_weakest=weakest,
            stage_first_cited=first_cited,
            spending=self.spending(),
        )
        for rule in self._stop_rules:
            decision = rule.decide(ctx)
            if decision is not None:
                fault = None
                if decision.blamed is not None:  # a stop rule blames the step its streak began at
                    fault = Fault(decision.blamed[0], decision.blamed[1], None, decision.dimension, decision.reason, decision.detail[:400])
                self._raise_stop(decision.record(self._clock.k, self._clock.t, list(frontier)), fault)

    def _raise_stop(self, stop: StopRecord, fault: Fault | None = None) -> None:
        if fault is not None and not self._faults.has_step(fault.t):
            self._faults.add(fault)
        self._stop = stop
        self._emit({"type": "stop", **stop.model_dump()})
        _log.info("dynsteer_halt", reason=stop.reason, k=stop.k, t=stop.t, task=self.blueprint.task)
        raise Halt(stop)

    def _emit(self, record: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink.write(record)
