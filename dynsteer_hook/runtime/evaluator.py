"""The execution-time evaluator: Algorithm 1 of the paper, one event at a time.

``observe(event)`` is the whole interface an agent loop needs. On every raw event it runs
minefield interception (a fatal call halts before it executes); on every closed action it
settles milestones on the ready frontier, judges each settled stage inside its
dominator-bounded window, adapts weights and tiers, and checks the stop rules. A stop
raises ``Halt`` inside the caller's loop. ``finish()`` returns the report.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import structlog

from dynsteer_hook.blueprint import AGENT_MESSAGE_TOOL, Blueprint, Milestone, Minefield
from dynsteer_hook.catalog import ArgIssue, ToolCatalog
from dynsteer_hook.compile.validation import validate_blueprint
from dynsteer_hook.config import DIMENSIONS, EvaluatorConfig
from dynsteer_hook.dominators import START, DominatorTree
from dynsteer_hook.errors import BlueprintError, Halt
from dynsteer_hook.events import Event, StateChange, SystemMessage, ToolCall, ToolResult, UserMessage
from dynsteer_hook.graph import FrontierTracker
from dynsteer_hook.judges.base import (
    BindingCheck,
    DimensionScore,
    Judge,
    JudgeRequest,
    StageContext,
    StageGoal,
    Verdict,
)
from dynsteer_hook.judges.steps import CallFacts, Step
from dynsteer_hook.judges.tier1 import Tier1Judge
from dynsteer_hook.predicates import all_hold, describe, predicate_holds, values_equal
from dynsteer_hook.report import (
    AuditSink,
    BindingRecord,
    FirstError,
    JudgeUsage,
    Report,
    StageRecord,
    StepRecord,
    StopRecord,
    TierUse,
    TraceFaultRecord,
    Window,
    conclude,
)
from dynsteer_hook.runtime.clock import ClosedAction, DualClock
from dynsteer_hook.runtime.grounding import TextGrounding
from dynsteer_hook.runtime.identifiers import ungrounded_values
from dynsteer_hook.runtime.matching import MilestoneIndex
from dynsteer_hook.runtime.policy import base_level, composite, next_levels, update_weights
from dynsteer_hook.runtime.screening import screened_tools, screening_arguments
from dynsteer_hook.runtime.stop_rules import DEFAULT_STOP_RULES, StopContext, StopDecision, StopRule
from dynsteer_hook.runtime.windows import StepLog

_log = structlog.get_logger(__name__)

_PreCall = tuple[tuple[Any, ...], tuple[str, ...], tuple[str, ...], int | None, int]
"""What a call's own event tells: schema issues, fatal near misses, warnings, the action it repeats,
and the grounding size before it (what the agent had been shown when it called)."""


def _extract(result: Any, path: str) -> list[Any]:
    """Values at a dotted path of a result; lists are searched element-wise."""
    values = [result]
    for part in [p for p in path.split(".") if p]:
        nxt: list[Any] = []
        for v in values:
            if isinstance(v, (list, tuple)):
                if part.isdigit() and int(part) < len(v):
                    nxt.append(v[int(part)])
                else:
                    nxt.extend(x[part] for x in v if isinstance(x, Mapping) and part in x)
            elif isinstance(v, Mapping) and part in v:
                nxt.append(v[part])
        values = nxt
    flat: list[Any] = []
    for v in values:
        flat.extend(v if isinstance(v, (list, tuple)) else [v])
    return flat


_STEP_FIELDS = dataclasses.fields(StepRecord)


def _signature(tool: str, args: Mapping[str, Any]) -> bytes:
    """A fixed-size fingerprint of a call, to spot exact repeats without keeping every call's text."""
    text = tool + "\x00" + json.dumps(args, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _state_holds(m: Milestone, changes: Sequence[StateChange]) -> bool:
    sp = m.state
    if sp is None:
        return True
    for c in changes:
        if c.namespace.casefold() != sp.namespace.casefold():
            continue
        rows: list[Mapping[str, Any]] = []
        if sp.change in ("added", "any"):
            rows += list(c.added)
        if sp.change in ("removed", "any"):
            rows += list(c.removed)
        if sp.change in ("updated", "any"):
            rows += [after for _, after in c.updated]
        if rows and (not sp.where or any(all_hold(sp.where, r) for r in rows)):
            return True
    return False


class Evaluator:
    """Execution-time stage-wise evaluator for one run against one blueprint.

    Args:
        blueprint: The milestone DAG; it must pass contract validation.
        config: Thresholds and rates; defaults documented on ``EvaluatorConfig``.
        judges: Judge per tier; Tier 1 rules are added when missing.
        stop_rules: Closed-action stop criteria, checked in order.
        sink: Receives audit records as they happen.
    """

    def __init__(
        self,
        blueprint: Blueprint,
        config: EvaluatorConfig | None = None,
        *,
        judges: Mapping[int, Judge] | None = None,
        stop_rules: Sequence[StopRule] | None = None,
        sink: AuditSink | None = None,
    ) -> None:
        violations = validate_blueprint(blueprint, None, blueprint.task or "blueprint")
        if violations:
            raise BlueprintError(f"blueprint is not valid: {violations[0]}; fix it before evaluating")
        self.blueprint = blueprint
        self.config = config or EvaluatorConfig()
        cfg = self.config
        self._judges: dict[int, Judge] = dict(judges or {})
        self._judges.setdefault(1, Tier1Judge(step_penalty=cfg.efficiency_step_penalty, proximity_penalty=cfg.minefield_proximity_penalty))
        self._tiers = sorted(t for t in self._judges if 1 <= t <= cfg.max_tier)
        self._stop_rules = tuple(stop_rules if stop_rules is not None else DEFAULT_STOP_RULES)
        self._sink = sink
        self._catalog = ToolCatalog(blueprint.catalog)
        self._order = {m.id: i for i, m in enumerate(blueprint.milestones)}
        self._by_id = {m.id: m for m in blueprint.milestones}
        self._dominators = DominatorTree([m.id for m in blueprint.milestones], [(e.source, e.target) for e in blueprint.edges])
        self._idom = self._dominators.idom_map()
        self._tracker = FrontierTracker.for_blueprint(blueprint)
        self._unsettled = MilestoneIndex(blueprint.milestones)
        self._tool_owners: dict[str, set[str]] = defaultdict(set)
        for m in blueprint.milestones:
            self._tool_owners[m.tool].add(m.id)
        self._mines_by_tool: dict[str, list[Minefield]] = defaultdict(list)
        for f in blueprint.minefields:
            self._mines_by_tool[f.tool].append(f)
        self._consumed = defaultdict(list)
        for b in blueprint.bindings:
            self._consumed[b.consumer].append(b)
        self._producers = {b.producer for b in blueprint.bindings}
        self._clock = DualClock()
        self._grounding = TextGrounding()
        self._pre: dict[str, deque[_PreCall]] = defaultdict(deque)  # by call id, first in first out like the clock
        self._invented: FirstError | None = None
        self._enum_args: dict[str, frozenset[str]] = {}  # per tool: arguments whose schema lists their values
        self._signatures: dict[bytes, int] = {}
        self._settled_at: dict[str, int] = {}
        self._settled_order: list[str] = []
        self._log = StepLog(self._dominators, self._tool_owners, self._settled_at)
        self._minefield_summary = tuple((f.id, f.tool, f.reason) for f in blueprint.minefields)
        self._settled_call: dict[str, CallFacts] = {}
        self._weights = cfg.normalized_initial_weights()
        self._levels = {d: cfg.min_tier for d in DIMENSIONS}
        self._stages: list[StageRecord] = []
        self._low_streak = 0
        self._stagnation = 0
        self._stagnation_since: tuple[int, int] | None = None
        self._structural = 0
        self._structural_since: tuple[int, int] | None = None
        self._structural_detail = ""
        self._stop: StopRecord | None = None
        self._ended = False
        self._left_pending: list[str] | None = None
        self._usage_calls: dict[str, int] = defaultdict(int)
        self._usage_requests: dict[str, int] = defaultdict(int)
        self._usage_dims: dict[str, int] = defaultdict(int)
        self._degraded = 0
        self._tokens = 0
        self._cost = 0.0
        self._bp_hash = hashlib.sha256(blueprint.to_json().encode()).hexdigest()[:16]
        self._emit({"type": "start", "task": blueprint.task, "blueprint": self._blueprint_summary(), "config": cfg.to_dict()})

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
        return self._tracker.frontier()

    @property
    def settled(self) -> list[str]:
        """Settled milestones in settlement order."""
        return list(self._settled_order)

    def screen(self, call: ToolCall) -> Minefield | None:
        """The fatal minefield a pending call would step on, without recording anything."""
        if call.actor != "agent":
            return None
        args = screening_arguments(call)
        for f in self._mines_for(call):
            if f.fatal and args is not None and all_hold(f.args, args, self._grounding):
                return f
        return None

    def observe(self, event: Event) -> ClosedAction | None:
        """Feed one raw event; returns the closed action it completed, if any.

        Raises:
            Halt: A stop criterion fired (for a fatal minefield, before the call executes).
        """
        if self._stop is not None:
            return None
        flushed = self._clock.moved_on(event)
        if flushed is not None:  # calls left waiting while the agent moved on: close them unanswered
            self._record_faults()
            self._on_closed(flushed)
        faults = self._clock.pairing.count
        action = self._clock.tick(event)
        paired = self._clock.pairing.count == faults
        self._record_faults()
        if isinstance(event, (UserMessage, SystemMessage)):
            self._grounding.add(event.content)
        elif isinstance(event, ToolCall):
            self._on_call(event)
        elif isinstance(event, ToolResult) and paired:  # a result no call asked for was not shown to the agent
            self._grounding.add_value(event.result)
        if action is not None:
            self._on_closed(action)
        return action or flushed

    def finish(self, *, crash: str | None = None, interrupted: bool = False) -> Report:
        """The report of the run so far (call once the rollout has ended).

        Calls still waiting for a result are closed unanswered and evaluated (without the
        stop rules: the run is over); they stay listed in ``pending_calls``.

        Args:
            crash: Why the rollout crashed, when it did (the outcome is then ``crashed``).
            interrupted: The rollout was stopped by Ctrl-C (the outcome is then ``interrupted``).
        """
        cfg = self.config
        if self._left_pending is None:
            self._left_pending = [f"{c.call_id}:{c.tool}" for c in self._clock.pending_calls]
            flushed = self._clock.flush() if self._stop is None else None
            if flushed is not None:
                self._record_faults()
                self._on_closed(flushed, check_stops=False)
        n = len(self.blueprint.milestones)
        by_m = {s.milestone: s.composite for s in self._stages}
        # Validation guarantees n >= 1: a blueprint without milestones would make every run complete.
        score = 0.0 if self._stop is not None and self._stop.reason == "fatal_minefield" else sum(by_m.values()) / n
        outcome = "halted" if self._stop else ("completed" if self._tracker.done() else "incomplete")
        report = Report(
            task=self.blueprint.task,
            outcome=outcome,
            halted=self._stop is not None,
            stop=self._stop,
            score=round(score, 6),
            stages=list(self._stages),
            first_error=self._first_error(),
            settled=self.settled,
            unsettled=[m.id for m in self.blueprint.milestones if m.id not in self._settled_at],
            frontier=self._tracker.frontier(),
            k=self._clock.k,
            t=self._clock.t,
            steps=self._log.records(),
            pending_calls=list(self._left_pending),
            trace_faults=[TraceFaultRecord(kind=f.kind, k=f.k, call_id=f.call_id, tool=f.tool, detail=f.detail) for f in self._clock.pairing.faults],
            trace_fault_count=self._clock.pairing.count,
            judge_usage=JudgeUsage(
                calls_by_tier=dict(self._usage_calls),
                dimensions_by_tier=dict(self._usage_dims),
                llm_requests_by_tier=dict(self._usage_requests),
                degraded=self._degraded,
                tokens=self._tokens,
                cost_usd=round(self._cost, 6),
            ),
            judges=self._judge_settings(),
            blueprint=self._blueprint_summary(),
            config=cfg.to_dict(),
        )
        report = conclude(report, crash=crash, interrupted=interrupted)
        if not self._ended:  # finish() may be called again; the log gets one end record
            self._ended = True
            self._emit({"type": "end", "outcome": report.outcome, "score": report.score, "k": report.k, "t": report.t}
                       | ({"crash": crash} if crash else {}))
        return report

    def _judge_settings(self) -> dict[str, dict[str, Any]]:
        """How each usable tier's judge was made, for the judges that say (``settings()``)."""
        made: dict[str, dict[str, Any]] = {}
        for tier in self._tiers:
            describe = getattr(self._judges[tier], "settings", None)
            if callable(describe):
                made[str(tier)] = dict(describe())
        return made

    # -- raw clock -----------------------------------------------------------------

    def _mines_for(self, call: ToolCall) -> list[Minefield]:
        return [f for name in screened_tools(call) for f in self._mines_by_tool.get(name, [])]

    def _on_call(self, call: ToolCall) -> None:
        if call.actor != "agent":
            return
        args = call.arguments
        screen = screening_arguments(call)
        near: list[str] = []
        warnings: list[str] = []
        for f in self._mines_for(call):
            hit = screen is not None and all_hold(f.args, screen, self._grounding)
            if hit and f.fatal and screen is not None:
                self._halt_on_minefield(call, f, screen)
            if hit and call.rejected is None:  # a refused call did not run: no warning-level hazard happened
                warnings.append(f.id)
            elif not hit and f.fatal:
                near.append(f.id)
        issues = tuple(self._catalog.check_arguments(call.tool, args)) if len(self._catalog) else ()
        if call.rejected is not None:
            issues = (ArgIssue("rejected", None, f"call refused before it ran: {call.rejected}"), *issues)
        sig = _signature(call.tool, args) if args is not None else None
        repeated = self._signatures.get(sig) if sig is not None else None
        if sig is not None and sig not in self._signatures:
            self._signatures[sig] = self._clock.t + 1
        self._pre[call.call_id].append((issues, tuple(near), tuple(warnings), repeated, self._grounding.size))

    def _enums(self, tool: str) -> frozenset[str]:
        """Arguments of ``tool`` whose schema lists the allowed values (never blamed as invented)."""
        listed = self._enum_args.get(tool)
        if listed is None:
            props = self._catalog.properties(tool)
            listed = self._enum_args[tool] = frozenset(a for a, p in props.items() if isinstance(p, Mapping) and "enum" in p)
        return listed

    def _halt_on_minefield(self, call: ToolCall, f: Minefield, args: Mapping[str, Any]) -> None:
        frontier = self._tracker.frontier()
        shown = json.dumps(dict(args), default=str, ensure_ascii=False)[:200]
        how = f"call {call.tool[:80]}({shown})"
        if call.rejected is not None:
            how = f"call {call.tool[:80]!r} (refused before it ran, read as {', '.join(call.suspected_tools) or call.tool[:80]})({shown})"
        self._raise_stop(
            StopRecord(
                reason="fatal_minefield",
                k=self._clock.k,
                t=self._clock.t,
                anchor=self._frontier_anchor(frontier),
                dimension="safety",
                frontier=frontier,
                detail=f"{how} hits {f.id}: {f.reason or 'hazardous operation'}",
                blamed_k=self._clock.k,
                blamed_t=self._clock.t + 1,
                minefield=f.id,
                tool=f.tool,
            )
        )

    # -- closed-action clock -------------------------------------------------------

    def _record_faults(self) -> None:
        for f in self._clock.pairing.drain():
            _log.info("trace_fault", kind=f.kind, k=f.k, call_id=f.call_id[:80], task=self.blueprint.task)
            self._emit({"type": "trace_fault", "kind": f.kind, "k": f.k, "call_id": f.call_id, "tool": f.tool, "detail": f.detail})

    def _on_closed(self, action: ClosedAction, *, check_stops: bool = True) -> None:
        t = action.t
        had_ready = self._tracker.has_ready()
        taken: set[str] = set()
        facts: list[CallFacts] = []
        settled_now: list[str] = []
        action_changes = action.state_changes
        for o in action.calls:
            queue = self._pre.get(o.call.call_id)
            pre: _PreCall = queue.popleft() if queue else ((), (), (), None, self._grounding.size)
            if queue is not None and not queue:
                del self._pre[o.call.call_id]
            issues, near, warnings, repeated, upto = pre
            # Checked here rather than before the call runs, to keep the interception path short;
            # ``upto`` keeps the verdict to what the agent had been shown when it called.
            invented = ungrounded_values(o.call.arguments, partial(self._grounding.seen, upto=upto), self._enums(o.call.tool))
            result = o.result
            ok = result is not None and result.exception is None
            chosen: str | None = None
            out_of_order: list[str] = []
            if ok and o.call.arguments is not None and o.call.rejected is None:
                own = result.state_changes if result is not None and result.state_changes else action_changes
                chosen, out_of_order = self._match(o.call.tool, o.call.canonical_tool, o.call.arguments, own, taken)
                out_of_order = [m for m in out_of_order if m not in taken]  # a repeat of this action's settlement is not out of order
            if chosen is not None:
                taken.add(chosen)
                settled_now.append(chosen)
            facts.append(
                CallFacts(
                    k_call=o.k_call,
                    k_result=o.k_result,
                    tool=o.call.tool,
                    canonical_tool=o.call.canonical_tool,
                    arguments=o.call.arguments,
                    raw_arguments=o.call.raw_arguments,
                    result=result.result if result is not None else None,
                    exception=result.exception if result is not None else "no result",
                    issues=issues,
                    fatal_near=near,
                    warnings=warnings,
                    repeated_of=repeated,
                    state_changes=result.state_changes if result is not None else (),
                    settled=chosen,
                    out_of_order=tuple(out_of_order),
                    grounding_upto=pre[4],
                    ungrounded=invented,
                )
            )
            if invented and self._invented is None:
                self._invented = FirstError(
                    k=o.k_call, t=t, stage=chosen, dimension="correctness",
                    detail=f"{o.call.tool} was called with value(s) never shown to the agent: {', '.join(invented)[:300]}",
                )
        if action.message is not None:
            chosen, _ = self._match(AGENT_MESSAGE_TOOL, None, {"content": action.message.content}, (), taken)
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
        record = self._step_record(step)
        self._log.append(step, record)
        self._emit({"type": "step", **{f.name: getattr(record, f.name) for f in _STEP_FIELDS}})

        for c in facts:
            if c.structural:
                self._structural += 1
                if self._structural_since is None:
                    self._structural_since = (c.k_call, t)
                self._structural_detail = c.issues[0].message if c.issues else (c.exception or "").splitlines()[-1][:160]
            else:
                self._structural, self._structural_since = 0, None

        stage: StageRecord | None = None
        for m in settled_now:
            self._tracker.settle(m)
            self._settled_at[m] = t
            self._settled_order.append(m)
            self._unsettled.discard(m)
            self._log.settled(m, t)
            for c in facts:
                if c.settled == m:
                    self._settled_call[m] = c
        for m in settled_now:
            stage = self._judge_stage(m, step)
        if settled_now:
            self._stagnation, self._stagnation_since = 0, None
        elif had_ready or action.calls:
            # With nothing left to settle only tool calls are idle work; talking to the user is not.
            self._stagnation += 1
            if self._stagnation_since is None:
                self._stagnation_since = (action.k_start, t)
        self._log.release()
        if check_stops:
            self._check_stop_rules(stage)

    def _match(
        self,
        tool: str,
        canonical: str | None,
        args: Mapping[str, Any],
        changes: Sequence[StateChange],
        taken: set[str],
    ) -> tuple[str | None, list[str]]:
        """The frontier milestone this call settles (most specific first) and the unready ones it would have."""
        pool = self._unsettled.candidates(tool, args)
        if canonical and canonical != tool:
            pool += self._unsettled.candidates(canonical, args)
        best: tuple[int, int, str] | None = None
        unready: list[str] = []
        for m in pool:
            if m.id in self._settled_at:
                continue
            if not all(predicate_holds(p, args, self._grounding) for p in m.args) or not _state_holds(m, changes):
                continue
            if m.id in taken or not self._tracker.is_ready(m.id):
                unready.append(m.id)
                continue
            rank = (-(len(m.args) + (1 if m.state else 0)), self._order[m.id], m.id)
            if best is None or rank < best:
                best = rank
        return (best[2] if best else None), unready

    # -- stage judging -------------------------------------------------------------

    def _binding_checks(self, m: str, call: CallFacts | None, upto: int) -> tuple[BindingCheck, ...]:
        checks: list[BindingCheck] = []
        for b in self._consumed.get(m, []):
            value = (call.arguments or {}).get(b.arg) if call else None
            producer = self._settled_call.get(b.producer)
            produced = _extract(producer.result, b.path) if producer is not None else []
            from_producer = value is not None and any(values_equal(value, p) for p in produced)
            checks.append(BindingCheck(b.name, b.arg, value, from_producer, self._grounding.seen(value, upto)))
        return tuple(checks)

    def _judge_stage(self, m: str, step: Step) -> StageRecord:
        cfg = self.config
        milestone = self._by_id[m]
        anchor, t_anchor, k_anchor, window = self._log.window(m, step.t)
        call = next((c for c in step.calls if c.settled == m), None)
        upto = call.grounding_upto if call is not None else self._grounding.size
        bindings = self._binding_checks(m, call, upto)
        ungrounded = call.ungrounded if call is not None else ()
        context = StageContext(
            task=self.blueprint.task,
            anchor=anchor,
            settled=tuple(self._settled_order),
            frontier=self._tracker.snapshot(),
            minefields=self._minefield_summary,
            tool_schemas={
                name: spec.parameters
                for name in {c.tool for s in window for c in s.calls}
                if (spec := self._catalog.spec(name)) is not None
            },
            bindings=bindings,
            produces_binding=m in self._producers,
            ungrounded=ungrounded,
        )
        goal = StageGoal(
            milestone=m,
            tool=milestone.tool,
            role=milestone.role,
            description=milestone.description,
            conditions=tuple(describe(p) for p in milestone.args),
        )
        requested = {d: max(level, cfg.min_tier) for d, level in self._levels.items()}
        used = {d: max(t for t in self._tiers if t <= requested[d]) for d in DIMENSIONS}
        scores: dict[str, DimensionScore] = {}
        judges: list[str] = []
        degraded: list[str] = []
        for tier in sorted(set(used.values()), reverse=True):
            dims = tuple(d for d in DIMENSIONS if used[d] == tier)
            verdict = self._run_judge(tier, goal, dims, window, context, step.t)
            for d in dims:  # a judge that raised was replaced by a lower tier's
                used[d] = min(used[d], verdict.tier)
            missing = [d for d in dims if d not in verdict.scores]
            if verdict.degraded:
                degraded.append(f"tier {tier} ({verdict.judge}): {verdict.degraded}")
            judges.append(verdict.judge)
            scores.update({d: verdict.scores[d] for d in dims if d in verdict.scores})
            if missing:
                fallback = self._run_judge(1, goal, tuple(missing), window, context, step.t)
                degraded.append(f"tier {tier} gave no score for {missing}; tier 1 used")
                for d in missing:
                    used[d] = 1
                    scores[d] = fallback.scores[d]
                judges.append(fallback.judge)
        s = {d: min(1.0, max(0.0, float(scores[d].score))) for d in DIMENSIONS}
        u = {d: min(1.0, max(0.0, float(scores[d].uncertainty))) for d in DIMENSIONS}
        weights_used = dict(self._weights)
        stage_score = composite(s, weights_used)
        self._weights = update_weights(weights_used, s, u, cfg.alpha, cfg.beta, cfg.min_weight)
        proximity = sum(len(c.fatal_near) for st in window if not st.anchor for c in st.calls)
        base = base_level(stage_score, u, proximity, cfg)
        self._levels = next_levels(requested, s, u, base, cfg)
        self._low_streak = self._low_streak + 1 if stage_score < cfg.theta_fail else 0
        record = StageRecord(
            milestone=m,
            tool=milestone.tool,
            role=milestone.role,
            t=step.t,
            k=step.k_end,
            window=Window(
                anchor=anchor, t_start=t_anchor, t_end=step.t, k_start=k_anchor, k_end=step.k_end,
                steps=[st.t for st in window],
            ),
            tiers={d: TierUse(requested=requested[d], used=used[d]) for d in DIMENSIONS},
            scores={d: round(s[d], 6) for d in DIMENSIONS},
            uncertainty={d: round(u[d], 6) for d in DIMENSIONS},
            composite=round(stage_score, 6),
            weights_used={d: round(w, 6) for d, w in weights_used.items()},
            weights={d: round(w, 6) for d, w in self._weights.items()},
            next_tiers=dict(self._levels),
            rationale={d: scores[d].rationale for d in DIMENSIONS},
            cited={d: sorted({x for x in scores[d].cited_steps if 1 <= x <= step.t}) for d in DIMENSIONS},
            judges=sorted(set(judges)),
            degraded=degraded,
            bindings=[BindingRecord(name=b.name, arg=b.arg, value=b.value, from_producer=b.from_producer, seen_elsewhere=b.seen_elsewhere) for b in bindings],
        )
        self._stages.append(record)
        self._emit({"type": "stage", **record.model_dump()})
        return record

    def _run_judge(
        self, tier: int, goal: StageGoal, dims: tuple[str, ...], window: list[Step], context: StageContext, t: int
    ) -> Verdict:
        request = JudgeRequest(goal=goal, dimensions=dims, steps=tuple(window), context=context, tier=tier, settling_t=t)
        judge = self._judges[tier]
        try:
            verdict = judge(request)
            if not isinstance(verdict, Verdict):
                raise TypeError(f"judge returned {type(verdict).__name__}, not a Verdict")
        except Exception as exc:
            self._degraded += 1
            _log.warning("judge_failed", tier=tier, error=str(exc)[:200])
            if tier == 1:
                raise
            fallback = self._run_judge(max(x for x in self._tiers if x < tier), goal, dims, window, context, t)
            return Verdict(
                scores=fallback.scores, judge=fallback.judge, tier=fallback.tier,
                degraded=f"{type(exc).__name__}: {str(exc)[:160]}; fell back to tier {fallback.tier}",
            )
        key = str(tier)
        self._usage_calls[key] += 1
        self._usage_dims[key] += len(dims)
        if verdict.calls:
            self._usage_requests[str(verdict.tier)] += verdict.calls
        self._tokens += verdict.tokens
        self._cost += verdict.cost_usd
        if verdict.degraded:
            self._degraded += 1
        return verdict

    # -- stopping ------------------------------------------------------------------

    def _frontier_anchor(self, frontier: Sequence[str]) -> str:
        return self._idom.get(frontier[0], START) if frontier else (self._settled_order[-1] if self._settled_order else START)

    def _check_stop_rules(self, stage: StageRecord | None) -> None:
        frontier = self._tracker.snapshot()
        weakest = first_cited = None
        if stage is not None:
            weakest = min(DIMENSIONS, key=lambda d: (stage.scores[d], DIMENSIONS.index(d)))
            cited = stage.cited.get(weakest) or [stage.t]
            first_t = min(cited)
            first_cited = (self._log.record(first_t).k_start, first_t)
        ctx = StopContext(
            k=self._clock.k,
            t=self._clock.t,
            config=self.config,
            frontier=frontier,
            frontier_anchor=self._frontier_anchor(frontier),
            stage_milestone=stage.milestone if stage else None,
            stage_anchor=stage.window.anchor if stage else None,
            stage_score=stage.composite if stage else None,
            stage_weakest=weakest,
            stage_first_cited=first_cited,
            low_streak=self._low_streak,
            stagnation=self._stagnation,
            stagnation_since=self._stagnation_since,
            structural_streak=self._structural,
            structural_since=self._structural_since,
            structural_detail=self._structural_detail,
        )
        for rule in self._stop_rules:
            decision = rule(ctx)
            if decision is not None:
                self._raise_stop(self._stop_record(decision, list(frontier)))

    def _stop_record(self, d: StopDecision, frontier: list[str]) -> StopRecord:
        return StopRecord(
            reason=d.reason,
            k=self._clock.k,
            t=self._clock.t,
            anchor=d.anchor,
            dimension=d.dimension,
            frontier=frontier,
            detail=d.detail,
            blamed_k=d.blamed[0] if d.blamed else None,
            blamed_t=d.blamed[1] if d.blamed else None,
        )

    def _raise_stop(self, stop: StopRecord) -> None:
        self._stop = stop
        self._emit({"type": "stop", **stop.model_dump()})
        _log.info("dynsteer_halt", reason=stop.reason, k=stop.k, t=stop.t, task=self.blueprint.task)
        raise Halt(stop)

    # -- reporting -----------------------------------------------------------------

    def _first_error(self) -> FirstError | None:
        cfg = self.config
        # An invented value is blamed on its own call, ahead of a stage failing at the same step.
        candidates: list[FirstError] = [self._invented] if self._invented is not None else []
        for st in self._stages:
            failing = st.composite < cfg.pass_threshold_for_first_error or any(v < cfg.theta_fail for v in st.scores.values())
            if not failing:
                continue
            weak = [d for d in DIMENSIONS if st.scores[d] < cfg.theta_warn] or list(DIMENSIONS)
            blamed = sorted((t, d) for d in weak for t in (st.cited.get(d) or [st.t]))
            t, d = blamed[0]
            candidates.append(FirstError(k=self._log.record(t).k_start, t=t, stage=st.milestone, dimension=d, detail=st.rationale[d]))
            break
        if self._stop is not None and self._stop.blamed_k is not None and self._stop.blamed_t is not None:
            candidates.append(
                FirstError(k=self._stop.blamed_k, t=self._stop.blamed_t, stage=None, dimension=self._stop.dimension, detail=self._stop.detail)
            )
        return min(candidates, key=lambda f: (f.k, f.t)) if candidates else None

    @staticmethod
    def _step_record(s: Step) -> StepRecord:
        return StepRecord(
            t=s.t,
            k_start=s.k_start,
            k_end=s.k_end,
            kind=s.kind,
            tools=[c.tool for c in s.calls],
            failed=sum(1 for c in s.calls if not c.ok),
            structural=sum(1 for c in s.calls if c.structural),
            settled=list(s.settled),
            out_of_order=sorted({m for c in s.calls for m in c.out_of_order}),
            ungrounded=[v for c in s.calls for v in c.ungrounded][:20],
            message=s.message[:500] if s.message is not None else None,
        )

    def _blueprint_summary(self) -> dict[str, Any]:
        bp = self.blueprint
        prov = bp.provenance
        return {
            "task": bp.task,
            "sha256_16": self._bp_hash,
            "milestones": len(bp.milestones),
            "edges": len(bp.edges),
            "minefields": len(bp.minefields),
            "generators": list(prov.generators) if prov else [],
        }

    def _emit(self, record: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink.write(record)
