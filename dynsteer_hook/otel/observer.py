"""The rollout as OpenTelemetry GenAI telemetry: a ``RolloutHook`` that makes the spans and the evaluation events.

A rollout is an ``invoke_agent {agent}`` span; each agent tool call an ``execute_tool {tool}``
child with the name the agent used (``gen_ai.tool.name``) and the one it resolved to
(``dynsteer.tool.resolved``), its call id and its error; each judged stage a
``gen_ai.evaluation.result`` event, through the logs API, on the span of the call that closed
it (the composite score as the value, ``pass`` or ``fail`` against ``theta_pass`` as the label,
the judges' rationale as the explanation). The stop and the first error are span events with
``dynsteer.*`` attributes; a halt is the rollout span's error status; an intercepted call is a
span marked as never executed. Tool arguments and results are recorded only with
``capture_content``.

Per raw event the observer only notes the time of calls and results: the call spans are made
when their action closes, with those times, so what a rollout pays per event stays small.
Everything an agent or a tool produced is cut to a bounded length before it becomes an attribute.
"""

from __future__ import annotations

import functools
import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as genai
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from dynsteer_hook.model.events import ToolCall, ToolResult
from dynsteer_hook.model.records import FirstError, Report, StageRecord, StopRecord
from dynsteer_hook.otel.export import Telemetry, telemetry_for
from dynsteer_hook.otel.settings import OtelSettings
from dynsteer_hook.runtime.clock import CallOutcome
from dynsteer_hook.toolsandbox.live.hook import ActionClosed, EventSeen, Halted, RolloutEnd, RolloutHook, RolloutStart

log = structlog.get_logger(__name__)

EVALUATION_EVENT = "gen_ai.evaluation.result"
EVALUATION_NAME = "dynsteer.stage"
INVOKE_AGENT = genai.GenAiOperationNameValues.INVOKE_AGENT.value
EXECUTE_TOOL = genai.GenAiOperationNameValues.EXECUTE_TOOL.value
NAME_CHARS = 128  # tool and agent names in span names and attributes
TEXT_CHARS = 4096  # rationales, details, arguments and results


def _cut(text: str, limit: int = TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return _cut(text)


def _error_type(exception: str) -> str:
    """``error.type`` of a tool's error text: its exception class when it starts with one, else ``tool_error``."""
    head = exception.split(":", 1)[0].strip()
    return head if head.isidentifier() and len(head) <= NAME_CHARS else "tool_error"


def stop_attributes(stop: StopRecord) -> dict[str, Any]:
    """The ``dynsteer.stop.*`` attributes of a stop record."""
    found: dict[str, Any] = {"dynsteer.stop.reason": stop.reason, "dynsteer.stop.k": stop.k, "dynsteer.stop.t": stop.t,
                             "dynsteer.stop.anchor": stop.anchor, "dynsteer.stop.dimension": stop.dimension,
                             "dynsteer.stop.detail": _cut(stop.detail), "dynsteer.stop.frontier": list(stop.frontier)}
    for key in ("blamed_k", "blamed_t", "minefield", "tool"):
        value = getattr(stop, key)
        if value is not None:
            found[f"dynsteer.stop.{key}"] = value
    return found


def first_error_attributes(error: FirstError) -> dict[str, Any]:
    """The ``dynsteer.first_error.*`` attributes of the run's first faulty step."""
    found: dict[str, Any] = {"dynsteer.first_error.k": error.k, "dynsteer.first_error.t": error.t,
                             "dynsteer.first_error.dimension": error.dimension, "dynsteer.first_error.detail": _cut(error.detail)}
    for key in ("stage", "cause", "recovered"):
        value = getattr(error, key)
        if value is not None:
            found[f"dynsteer.first_error.{key}"] = value
    return found


def evaluation_attributes(stage: StageRecord, theta_pass: float) -> dict[str, Any]:
    """The ``gen_ai.evaluation.result`` attributes of one judged stage (few: each costs the rollout its time)."""
    found: dict[str, Any] = {
        genai.GEN_AI_EVALUATION_NAME: EVALUATION_NAME,
        genai.GEN_AI_EVALUATION_SCORE_VALUE: stage.composite,
        genai.GEN_AI_EVALUATION_SCORE_LABEL: "pass" if stage.composite >= theta_pass else "fail",
        "dynsteer.milestone": _cut(stage.milestone, NAME_CHARS), "dynsteer.t": stage.t,
    }
    explanation = "; ".join(f"{d}: {r}" for d, r in stage.rationale.items() if r)
    if explanation:
        found[genai.GEN_AI_EVALUATION_EXPLANATION] = _cut(explanation)
    for d, s in stage.scores.items():
        found[f"dynsteer.score.{d}"] = s
    if stage.degraded:
        found["dynsteer.degraded"] = list(stage.degraded)
    return found


@dataclass(slots=True)
class _Rollout:
    """What one rollout's telemetry holds while it plays."""

    span: Span
    context: Context
    calls: dict[int, tuple[int, ToolCall]] = field(default_factory=dict)  # k -> (ns, call), until its span is made
    results: dict[int, int] = field(default_factory=dict)  # k -> ns of a result, until its call's span is made
    t: int = 0


P = TypeVar("P")


def _never_raises(method: Callable[[OtelObserver, P], None]) -> Callable[[OtelObserver, P], None]:
    """A lifecycle method whose failure drops the rollout's telemetry (with one warning) and never reaches the rollout."""

    @functools.wraps(method)
    def hook(self: OtelObserver, payload: P) -> None:
        try:
            method(self, payload)
        except Exception as exc:  # telemetry must never end a rollout as a crash
            self._give_up(exc)

    return hook


class OtelObserver(RolloutHook):
    """Exports every rollout it sees as GenAI spans and evaluation events (see the module's text).

    Picklable before its first rollout (worker processes get copies and make their own exporters).

    Args:
        settings: Where the telemetry goes and whether it holds tool arguments and results.
        source: How the events came: ``run`` (live), ``replay`` or ``evaluate`` (``dynsteer.source``).
        theta_pass: A stage scoring at least this is labelled ``pass`` (the evaluator's ``theta_pass``).
        telemetry: The providers to use (tests); by default this process's for ``settings``.
    """

    def __init__(self, settings: OtelSettings, *, source: str = "run", theta_pass: float = 0.7, telemetry: Telemetry | None = None) -> None:
        self.settings = settings
        self.source = source
        self.theta_pass = theta_pass
        self._telemetry = telemetry
        self._rollout: _Rollout | None = None
        self._warned = False

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings, "source": self.source, "theta_pass": self.theta_pass}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.settings, self.source, self.theta_pass = state["settings"], state["source"], state["theta_pass"]
        self._telemetry, self._rollout, self._warned = None, None, False

    @property
    def telemetry(self) -> Telemetry:
        if self._telemetry is None:
            self._telemetry = telemetry_for(self.settings)
        return self._telemetry

    def _give_up(self, exc: Exception) -> None:
        if not self._warned:
            self._warned = True
            log.warning("OpenTelemetry: a rollout's telemetry is dropped", error=f"{type(exc).__name__}: {exc}"[:300])
        self._rollout = None

    # -- the lifecycle -------------------------------------------------------------------

    @_never_raises
    def on_rollout_start(self, start: RolloutStart) -> None:
        if self._rollout is not None:  # the last rollout never ended (its report could not be built)
            self._rollout.span.set_status(Status(StatusCode.ERROR, "the rollout ended without a report"))
            self._rollout.span.end()
        agent = _cut(start.agent, NAME_CHARS)
        attributes: dict[str, Any] = {
            genai.GEN_AI_OPERATION_NAME: INVOKE_AGENT, genai.GEN_AI_CONVERSATION_ID: f"{random.getrandbits(128):032x}",
            "dynsteer.scenario": start.scenario, "dynsteer.blueprint": start.blueprint, "dynsteer.source": self.source,
        }
        if agent:
            attributes[genai.GEN_AI_AGENT_NAME] = agent
        if start.agent_model:
            attributes[genai.GEN_AI_REQUEST_MODEL] = _cut(start.agent_model, NAME_CHARS)
        if start.user:
            attributes["dynsteer.user"] = _cut(start.user, NAME_CHARS)
        if start.stale:
            attributes["dynsteer.blueprint.stale"] = True
        if start.max_messages:
            attributes["dynsteer.max_messages"] = start.max_messages
        span = self.telemetry.tracer.start_span(f"{INVOKE_AGENT} {agent}" if agent else INVOKE_AGENT, kind=SpanKind.INTERNAL,
                                                attributes=attributes)
        self._rollout = _Rollout(span, trace.set_span_in_context(span))

    @_never_raises
    def on_event(self, seen: EventSeen) -> None:
        r = self._rollout
        if r is None:
            return
        event = seen.event
        if type(event) is ToolCall:
            if event.actor == "agent":
                r.calls[seen.k] = (time.time_ns(), event)
        elif type(event) is ToolResult:
            r.results[seen.k] = time.time_ns()

    @_never_raises
    def on_action_closed(self, closed: ActionClosed) -> None:
        r = self._rollout
        if r is None:
            return
        r.t = closed.action.t
        spans = [(o, self._call_span(r, o.k_call, o.call, outcome=o, t=closed.action.t)) for o in closed.action.calls]
        for stage in closed.stages:
            self._evaluation(stage, self._closing_span(stage, spans) or r.span)

    @_never_raises
    def on_halt(self, halted: Halted) -> None:
        r = self._rollout
        if r is None:
            return
        attributes = stop_attributes(halted.stop)
        r.span.add_event("dynsteer.stop", attributes)
        r.span.set_status(Status(StatusCode.ERROR, _cut(f"halted: {halted.stop.reason}: {halted.stop.detail}", 512)))
        r.span.set_attribute(ERROR_TYPE, f"dynsteer.halt.{halted.stop.reason}")
        if halted.call is not None:
            self._call_span(r, halted.stop.k, halted.call, t=halted.stop.t, intercepted=halted.stop)

    @_never_raises
    def on_rollout_end(self, end: RolloutEnd) -> None:
        r, self._rollout = self._rollout, None
        if r is None:
            return
        for k, (_, call) in sorted(r.calls.items()):  # calls no action closed (the stop came first)
            self._call_span(r, k, call, t=r.t + 1)
        r.span.set_attributes({"dynsteer.rollout.seconds": round(end.seconds, 6), "dynsteer.interrupted": end.interrupted})
        if end.report is not None:
            self._report(r.span, end.report)
        if end.crash is not None:
            r.span.set_status(Status(StatusCode.ERROR, _cut(f"crashed: {end.crash}", 512)))
            r.span.set_attribute(ERROR_TYPE, "dynsteer.crash")
        r.span.end()

    # -- the parts -------------------------------------------------------------------------

    def _call_span(self, r: _Rollout, k: int, call: ToolCall, *, t: int, outcome: CallOutcome | None = None,
                   intercepted: StopRecord | None = None) -> Span:
        """The ``execute_tool`` span of one call, from its call to its result (both noted when they came)."""
        noted = r.calls.pop(k, None)
        now = time.time_ns()
        started = noted[0] if noted is not None else now
        result = outcome.result if outcome is not None else None
        ended = r.results.pop(outcome.k_result, now) if outcome is not None and outcome.k_result is not None else now
        tool = _cut(call.tool, NAME_CHARS)
        attributes: dict[str, Any] = {
            genai.GEN_AI_OPERATION_NAME: EXECUTE_TOOL, genai.GEN_AI_TOOL_NAME: tool, genai.GEN_AI_TOOL_CALL_ID: _cut(call.call_id, NAME_CHARS),
            "dynsteer.tool.resolved": _cut(call.canonical_tool, NAME_CHARS) if call.canonical_tool else tool,
            "dynsteer.k": k, "dynsteer.t": t, "dynsteer.tool_call.executed": result is not None and call.rejected is None,
        }
        if self.settings.capture_content:
            attributes[genai.GEN_AI_TOOL_CALL_ARGUMENTS] = _json(call.arguments) if call.arguments is not None else _cut(call.raw_arguments or "")
            if result is not None and result.exception is None:
                attributes[genai.GEN_AI_TOOL_CALL_RESULT] = _json(result.result)
        status: Status | None = None
        if intercepted is not None:
            attributes["dynsteer.intercepted"] = True
            attributes[ERROR_TYPE] = "dynsteer.intercepted"
            status = Status(StatusCode.ERROR, _cut(f"intercepted before it executed: {intercepted.detail}", 512))
        elif call.rejected is not None:
            attributes["dynsteer.tool_call.rejected"] = _cut(call.rejected)
            attributes[ERROR_TYPE] = "dynsteer.rejected"
            status = Status(StatusCode.ERROR, _cut(f"rejected before it could execute: {call.rejected}", 512))
        elif result is None:
            attributes["dynsteer.tool_call.answered"] = False
            attributes[ERROR_TYPE] = "dynsteer.unanswered"
            status = Status(StatusCode.ERROR, "no result came")
        elif result.exception is not None:
            attributes[ERROR_TYPE] = _error_type(result.exception)
            status = Status(StatusCode.ERROR, _cut(result.exception, 512))
        span = self.telemetry.tracer.start_span(f"{EXECUTE_TOOL} {tool}", r.context, SpanKind.INTERNAL, attributes, start_time=started)
        if intercepted is not None:
            span.add_event("dynsteer.stop", stop_attributes(intercepted))
        if status is not None:
            span.set_status(status)
        span.end(end_time=max(ended, started))
        return span

    @staticmethod
    def _closing_span(stage: StageRecord, spans: list[tuple[CallOutcome, Span]]) -> Span | None:
        """The span of the action's call that closed the stage: its call of the stage's tool (an answered one first)."""
        mine = [(o, s) for o, s in spans if (o.call.canonical_tool or o.call.tool) == stage.tool or o.call.tool == stage.tool]
        mine.sort(key=lambda pair: pair[0].failed)
        return mine[0][1] if mine else None

    def _evaluation(self, stage: StageRecord, span: Span) -> None:
        self.telemetry.logger.emit(event_name=EVALUATION_EVENT, attributes=evaluation_attributes(stage, self.theta_pass),
                                   context=trace.set_span_in_context(span), timestamp=time.time_ns())

    @staticmethod
    def _report(span: Span, report: Report) -> None:
        span.set_attributes({"dynsteer.outcome": report.outcome, "dynsteer.score": report.score, "dynsteer.halted": report.halted,
                             "dynsteer.k": report.k, "dynsteer.t": report.t, "dynsteer.settled": len(report.settled),
                             "dynsteer.milestones": len(report.settled) + len(report.unsettled),
                             "dynsteer.faults": report.fault_count})
        if report.first_error is not None:
            span.add_event("dynsteer.first_error", first_error_attributes(report.first_error))
