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
import re
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
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
    TailRecord,
    TierUse,
    TraceFaultRecord,
    Window,
    conclude,
)
from dynsteer_hook.runtime.clock import CallOutcome, ClosedAction, DualClock
from dynsteer_hook.runtime.faults import Fault, FaultLedger, asks_user, first_error
from dynsteer_hook.runtime.grounding import TextGrounding
from dynsteer_hook.runtime.identifiers import ungrounded_values
from dynsteer_hook.runtime.matching import MilestoneIndex
from dynsteer_hook.runtime.policy import base_level, composite, next_levels, update_weights
from dynsteer_hook.runtime.screening import screened_tools, screening_arguments
from dynsteer_hook.runtime.stop_rules import DEFAULT_STOP_RULES, StopContext, StopDecision, StopRule
from dynsteer_hook.runtime.windows import StepLog

_log = structlog.get_logger(__name__)

@dataclasses.dataclass(frozen=True, slots=True)
class PendingCall:
    """What a call's own event tells, kept until its action closes."""

    issues: tuple[ArgIssue, ...] = ()
    fatal_near: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    repeated_of: int | None = None
    grounding_upto: int = 0  # what the agent had been shown when it called


def _leaves(value: Any, out: set[str], limit: int = 200) -> set[str]:
    """The scalar values inside a result or arguments, as text (numbers without a trailing ``.0``)."""
    stack = [value]
    while stack and len(out) < limit:
        v = stack.pop()
        if isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, bool) or v is None:
            continue
        elif isinstance(v, (int, float)):
            out.add(str(int(v)) if float(v).is_integer() else str(v))
        elif isinstance(v, str) and v.strip():
            out.add(v.strip()[:200])
    return out


_TRIVIAL = frozenset({"0", "1", "-1"})


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def _given(values: set[str]) -> Callable[[str], bool]:
    """A test of whether a value is among ``values``; numbers also match within one part in a million
    (an agent may pass on a clock reading it rounded or re-read)."""
    numbers = [n for v in values if (n := _number(v)) is not None]

    def used(v: str) -> bool:
        if v in values:
            return True
        n = _number(v)
        return n is not None and any(abs(n - m) <= 1e-6 * max(abs(n), abs(m)) for m in numbers)

    return used


_TOKEN = re.compile(r"[^\s,;:!?()\[\]{}\"']+")


def _in_message(text: str) -> Callable[[str], bool]:
    """A test of whether a value appears in a message: a number as one of its words (within one part in a
    million), a text of four characters or more anywhere in it."""
    words = {w.rstrip(".") for w in _TOKEN.findall(text[:5000])}
    in_words = _given(words)
    folded = text[:5000].casefold()

    def used(v: str) -> bool:
        if _number(v) is not None:
            return in_words(v)
        return len(v) >= 4 and v.casefold() in folded

    return used


def _canonical(o: CallOutcome) -> tuple[str, str]:
    """A key that orders the calls of one action whatever order they were issued in."""
    args = o.call.arguments
    text = json.dumps(args, sort_keys=True, default=str) if args is not None else "\x00" + (o.call.raw_arguments or "")
    return (o.call.tool, text)


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
        self._pre: dict[str, deque[PendingCall]] = defaultdict(deque)  # by call id, first in first out like the clock
        self._faults = FaultLedger()
        self._state_version = 0  # database changes seen so far: a read repeated with the world unchanged is redundant
        self._done: dict[bytes, int] = {}  # successful call -> state version when it last ran
        self._failing: dict[bytes, tuple[int, tuple[int, int], str]] = {}  # failing call -> (failures, first, detail)
        self._asked: set[bytes] = set()
        # Calls of tools no milestone uses, settling nothing: off task unless a later call or message uses their result.
        self._unused: dict[int, tuple[Fault, set[str]]] = {}
        # JSON types the milestones' tools take: a reading without arguments (the clock, a status) whose result is
        # of one of them may inform the task, as looking at the clock before a search by recency does.
        self._taken_types = {
            str(p.get("type")) for m in blueprint.milestones for p in self._catalog.properties(m.tool).values() if isinstance(p, Mapping)
        }
        self._enum_args: dict[str, frozenset[str]] = {}  # per tool: arguments whose schema lists their values
        self._signatures: dict[bytes, int] = {}
        self._settled_at: dict[str, int] = {}
        self._settled_order: list[str] = []
        self._log = StepLog(self._dominators, self._tool_owners, self._settled_at)
        self._minefield_summary = tuple((f.id, f.tool, f.reason) for f in blueprint.minefields)
        self._settled_call: dict[str, CallFacts] = {}
        self._weights = cfg.normalized_initial_weights()
        self._levels = {d: 1 for d in DIMENSIONS}
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
        if self._stop is None and self._tracker.done():
            # Only a run that finished its work tells a helper whose result was never used from one cut short.
            for fault, _ in self._unused.values():
                self._faults.add(fault)
        tail = self._tail(n)
        # Validation guarantees n >= 1: a blueprint without milestones would make every run complete.
        score = sum(by_m.values()) / n - (tail.penalty if tail is not None else 0.0)
        score = 0.0 if self._stop is not None and self._stop.reason == "fatal_minefield" else max(0.0, score)
        faults = self._faults.records(self._stages, self._settled_at)
        outcome = "halted" if self._stop else ("completed" if self._tracker.done() else "incomplete")
        report = Report(
            task=self.blueprint.task,
            outcome=outcome,
            halted=self._stop is not None,
            stop=self._stop,
            score=round(score, 6),
            stages=list(self._stages),
            first_error=first_error(faults),
            stage_error=self._stage_error(),
            faults=faults,
            fault_count=self._faults.count,
            tail=tail,
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
        self._pre[call.call_id].append(PendingCall(issues, tuple(near), tuple(warnings), repeated, self._grounding.size))

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
            ),
            Fault(self._clock.k, self._clock.t + 1, call.tool, "safety", "fatal_minefield", f"hits {f.id}: {f.reason or 'hazardous operation'}"),
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
        version = self._state_version
        # Parallel calls are matched in an order of their own, so the milestones they settle and the
        # stages judged do not depend on the order the agent issued them in.
        for o in sorted(action.calls, key=_canonical):
            queue = self._pre.get(o.call.call_id)
            pre = queue.popleft() if queue else PendingCall(grounding_upto=self._grounding.size)
            if queue is not None and not queue:
                del self._pre[o.call.call_id]
            # Checked here rather than before the call runs, to keep the interception path short;
            # ``grounding_upto`` keeps the verdict to what the agent had been shown when it called.
            invented = ungrounded_values(o.call.arguments, partial(self._grounding.seen, upto=pre.grounding_upto), self._enums(o.call.tool))
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
            c = CallFacts(
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
            )
            facts.append(c)
            self._call_faults(c, t, version)
        facts.sort(key=lambda c: c.k_call)
        settled_now.sort(key=lambda m: self._order[m])
        if action_changes:
            self._state_version += 1
        if action.message is not None:
            self._results_used(_in_message(action.message.content))
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

        for m in settled_now:
            self._tracker.settle(m)
            self._settled_at[m] = t
            self._settled_order.append(m)
            self._unsettled.discard(m)
            self._log.settled(m, t)
            for c in facts:
                if c.settled == m:
                    self._settled_call[m] = c
        # Every stage the action settled is judged, in blueprint order, and each reaches the stop rules
        # with the low-score streak as it stood after it.
        judged: list[tuple[StageRecord | None, int]] = []
        for m in settled_now:
            judged.append((self._judge_stage(m, step), self._low_streak))
        if settled_now:
            self._stagnation, self._stagnation_since = 0, None
            self._failing.clear()
        elif action.message is not None and not action.calls and self._new_question(action.message.content):
            # Asking the user for what the task needs is progress: only the user can supply it.
            self._stagnation, self._stagnation_since = 0, None
        elif had_ready or action.calls:
            # With nothing left to settle only tool calls are idle work; talking to the user is not.
            self._stagnation += 1
            if self._stagnation_since is None:
                self._stagnation_since = (action.k_start, t)
        self._log.release()
        if check_stops:
            for stage, streak in judged or [(None, self._low_streak)]:
                self._check_stop_rules(stage, streak)

    def _new_question(self, text: str) -> bool:
        """Whether a message asks the user for something it has not asked before (asking again is no progress)."""
        if not asks_user(text):
            return False
        key = hashlib.blake2b(" ".join(text.casefold().split()).encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if key in self._asked:
            return False
        self._asked.add(key)
        return True

    def _orientation(self, c: CallFacts) -> bool:
        """Whether a call is a reading without arguments whose result a milestone's tool could take."""
        if c.arguments or c.mutated or isinstance(c.result, (Mapping, list, tuple)) or c.result is None:
            return False
        kind = "boolean" if isinstance(c.result, bool) else "string" if isinstance(c.result, str) else "number"
        return kind in self._taken_types or (kind == "number" and "integer" in self._taken_types)

    def _results_used(self, used: Callable[[str], bool]) -> None:
        """Forget the off-task suspicion of calls whose result a later call or message used."""
        for k in [k for k, (_, values) in self._unused.items() if any(used(v) for v in values)]:
            del self._unused[k]

    def _call_faults(self, c: CallFacts, t: int, version: int) -> None:
        """The rules that blame one call on its own, and the count of identical failing calls."""
        sig = _signature(c.tool, c.arguments if c.arguments is not None else {"\x00raw": c.raw_arguments})
        owned = bool(self._tool_owners.get(c.tool)) or bool(c.canonical_tool and self._tool_owners.get(c.canonical_tool))
        fault: tuple[str, str, str] | None = None
        if c.structural:
            issue = c.issues[0].message if c.issues else (c.exception or "malformed call").splitlines()[-1]
            fault = ("tool_compliance", "malformed", f"{c.tool} was malformed: {issue[:200]}")
        elif not c.ok:
            lines = (c.exception or "no result").strip().splitlines() or ["an empty exception"]
            fault = ("tool_compliance", "tool_error", f"{c.tool} raised: {lines[-1][:200]}")
        elif c.ungrounded:
            fault = ("correctness", "invented_value", f"{c.tool} was called with value(s) never shown to the agent: {', '.join(c.ungrounded)[:300]}")
        elif c.warnings:
            fault = ("safety", "warning_minefield", f"{c.tool} hit warning minefield(s) {', '.join(c.warnings)}")
        elif self._done.get(sig) == version and c.settled is None:
            fault = ("efficiency", "repeat", f"{c.tool} repeats an earlier call with the same arguments while the world is unchanged")
        if self._unused and c.arguments is not None:
            self._results_used(_given(_leaves(c.arguments, set())))
        if fault is None and c.settled is None and not owned and not self._orientation(c) and len(self._unused) < 200:
            # A helper (a conversion, the clock) is known only by its result being used later: decided at the end.
            off = Fault(c.k_call, t, c.tool, "efficiency", "off_task", f"{c.tool} settles nothing, no milestone of the task "
                        "uses it and no later call or message used its result")
            made = {v for v in _leaves(c.result, set()) if v not in _TRIVIAL}  # 0 or 1 would be found anywhere
            if c.mutated:  # what a call that changed the world wrote is its result too (the agent may report it)
                made |= {v for v in _leaves(c.arguments, set()) if len(v) >= 3}
            self._unused[c.k_call] = (off, made)
        if fault is not None:
            self._faults.add(Fault(c.k_call, t, c.tool, fault[0], fault[1], fault[2], c.settled))
        if c.ok:
            self._done[sig] = version
            self._failing.pop(sig, None)
        else:
            n, since, _ = self._failing.get(sig, (0, (c.k_call, t), ""))
            detail = fault[2] if fault is not None else c.tool
            self._failing[sig] = (n + 1, since, detail)

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
        requested = dict(self._levels)
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
        for d in DIMENSIONS:  # a judge that scores a dimension under theta_warn blames the steps it cites
            # (not Tier 1's efficiency: it cites every call that settled nothing, helpers included; the call
            # rules judge those one by one as repeats, off-task calls and failures)
            if s[d] < cfg.theta_warn and not (d == "efficiency" and used[d] == 1):
                for x in record.cited[d] or [step.t]:
                    if not self._faults.has_step(x):
                        self._faults.add(Fault(self._log.record(x).k_start, x, None, d, "judged", scores[d].rationale[:400], None))
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
        self._tokens += verdict.tokens
        self._cost += verdict.cost_usd
        if verdict.degraded:
            self._degraded += 1
        return verdict

    # -- stopping ------------------------------------------------------------------

    def _frontier_anchor(self, frontier: Sequence[str]) -> str:
        return self._idom.get(frontier[0], START) if frontier else (self._settled_order[-1] if self._settled_order else START)

    def _check_stop_rules(self, stage: StageRecord | None, low_streak: int) -> None:
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
            low_streak=low_streak,
            stagnation=self._stagnation,
            stagnation_since=self._stagnation_since,
            structural_streak=self._structural,
            structural_since=self._structural_since,
            structural_detail=self._structural_detail,
            **self._repeated_failures(),
        )
        for rule in self._stop_rules:
            decision = rule(ctx)
            if decision is not None:
                fault = None
                if decision.blamed is not None:  # a stop rule blames the step its streak began at
                    fault = Fault(decision.blamed[0], decision.blamed[1], None, decision.dimension, decision.reason, decision.detail[:400])
                self._raise_stop(self._stop_record(decision, list(frontier)), fault)

    def _repeated_failures(self) -> dict[str, Any]:
        """The identical call that failed most often since the last settlement (the earliest on ties)."""
        if not self._failing:
            return {}
        n, since, detail = max(self._failing.values(), key=lambda v: (v[0], -v[1][0]))
        return {"repeated_failures": n, "repeated_failure_since": since, "repeated_failure_detail": detail}

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

    def _raise_stop(self, stop: StopRecord, fault: Fault | None = None) -> None:
        if fault is not None and not self._faults.has_step(fault.t):
            self._faults.add(fault)
        self._stop = stop
        self._emit({"type": "stop", **stop.model_dump()})
        _log.info("dynsteer_halt", reason=stop.reason, k=stop.k, t=stop.t, task=self.blueprint.task)
        raise Halt(stop)

    # -- reporting -----------------------------------------------------------------

    def _tail(self, n: int) -> TailRecord | None:
        """Judge the actions with tool calls that no stage window held: calls that settled nothing and
        that no stage was judged with (repeats of settled work, the run's tail) each cost efficiency,
        and failed ones tool compliance, as in a stage of their own whose deficit comes off the score."""
        cfg = self.config
        covered = {x for st in self._stages for x in st.window.steps}
        # Attempts at a milestone still open are paid for by its stage scoring 0, not here.
        open_tools = {self._by_id[m].tool for m in self._by_id if m not in self._settled_at}
        idle = [r for r in self._log.records() if r.tools and not r.settled and r.t not in covered and not open_tools & set(r.tools)]
        if not idle:
            return None
        calls = sum(len(r.tools) for r in idle)
        failed = sum(r.failed for r in idle)
        structural = sum(r.structural for r in idle)
        credit = (calls - failed) + 0.5 * (failed - structural)
        scores = dict.fromkeys(DIMENSIONS, 1.0)
        scores["efficiency"] = max(0.0, 1.0 - cfg.efficiency_step_penalty * calls)
        scores["tool_compliance"] = credit / calls
        weights = cfg.normalized_initial_weights()
        value = composite(scores, weights)
        return TailRecord(
            steps=[r.t for r in idle], calls=calls, scores={d: round(v, 6) for d, v in scores.items()},
            composite=round(value, 6), penalty=round((1.0 - value) / n, 6),
            rationale=f"{calls} call(s) outside every stage window settled nothing ({failed} failed, {structural} malformed)",
        )

    def _stage_error(self) -> FirstError | None:
        """The first blamed step of the first failing stage, or of the stop when it is earlier or no stage failed."""
        cfg = self.config
        candidates: list[FirstError] = []
        for st in self._stages:
            failing = st.composite < cfg.pass_threshold_for_first_error or any(v < cfg.theta_fail for v in st.scores.values())
            if not failing:
                continue
            weak = [d for d in DIMENSIONS if st.scores[d] < cfg.theta_warn] or list(DIMENSIONS)
            blamed = sorted((t, d) for d in weak for t in (st.cited.get(d) or [st.t]))
            t, d = blamed[0]
            candidates.append(FirstError(k=self._log.record(t).k_start, t=t, stage=st.milestone, dimension=d, detail=st.rationale[d], cause="judged"))
            break
        if self._stop is not None and self._stop.blamed_k is not None and self._stop.blamed_t is not None:
            candidates.append(
                FirstError(k=self._stop.blamed_k, t=self._stop.blamed_t, stage=None, dimension=self._stop.dimension, detail=self._stop.detail,
                           cause=self._stop.reason)
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
