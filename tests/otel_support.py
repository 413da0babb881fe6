"""Telemetry into memory, and an event stream fed to an observer the way a live rollout feeds it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from needs import need_module

need_module("opentelemetry.sdk", "the otel extra is not installed (pip install 'dynsteer-hook[otel]')")

from opentelemetry.sdk._logs import ReadableLogRecord  # noqa: E402 - after the check above
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from dynsteer_hook.model.blueprint import Blueprint  # noqa: E402
from dynsteer_hook.model.config import EvaluatorConfig  # noqa: E402
from dynsteer_hook.model.errors import Halt  # noqa: E402
from dynsteer_hook.model.events import Event  # noqa: E402
from dynsteer_hook.model.records import ListSink, Report  # noqa: E402
from dynsteer_hook.otel.export import Telemetry  # noqa: E402
from dynsteer_hook.otel.observer import OtelObserver  # noqa: E402
from dynsteer_hook.otel.settings import OtelSettings  # noqa: E402
from dynsteer_hook.runtime.evaluator import Evaluator  # noqa: E402
from dynsteer_hook.toolsandbox.live.hook import (  # noqa: E402
    EventSeen,
    RolloutEnd,
    RolloutHook,
    RolloutStart,
    finish_observed,
    judge_event,
)


@dataclass
class Memory:
    """Telemetry kept in memory, exported as each span or event ends."""

    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter
    telemetry: Telemetry

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def events(self) -> list[ReadableLogRecord]:
        return list(self.logs.get_finished_logs())

    def one(self, name: str) -> ReadableSpan:
        [span] = [s for s in self.finished() if s.name == name]
        return span


def memory(settings: OtelSettings | None = None, *, batch: bool = False) -> Memory:
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    return Memory(spans, logs, Telemetry.build(settings or OtelSettings(), spans, logs, batch=batch))


def observer(mem: Memory, settings: OtelSettings | None = None, **kw: Any) -> OtelObserver:
    return OtelObserver(settings or OtelSettings(), telemetry=mem.telemetry, **kw)


def feed(bp: Blueprint, events: Iterable[Event], *observers: RolloutHook, config: EvaluatorConfig | None = None,
         agent: str = "Scripted") -> Report:
    """The events fed to an evaluator, the observers told every point as a live rollout tells them."""
    evaluator = Evaluator(bp, config, sink=ListSink())
    task = bp.task
    for hook in observers:
        hook.on_rollout_start(RolloutStart(task, agent, None, "Scripted", f"{task}.json", False, 10))
    try:
        for k, event in enumerate(events, start=1):
            seen = EventSeen(task, k, 0, event)
            judge_event(evaluator, seen, observers)
    except Halt:
        pass
    report = finish_observed(evaluator, task, observers)
    for hook in observers:
        hook.on_rollout_end(RolloutEnd(task, 0.1, report=report))
    return report
