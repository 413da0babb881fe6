"""One sample under evaluation: its evaluator, the feed of its conversation, and the halt.

The adapter's approver, reviewer and scorer each hand the monitor what Inspect shows them:
the conversation so far and the call about to run (``before_call``), the result of a call
that ran (``after_call``), the final conversation (``finish``). The monitor feeds the events
through the evaluator in the order they happened; a ``Halt`` (a ``BaseException``, which
Inspect must never see) is caught here and becomes the stop record the caller turns into
Inspect's ``terminate`` decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from inspect_ai.model import ChatMessage
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolCallError

from dynsteer_hook.inspect.convert import SampleFeed
from dynsteer_hook.judges.base import Judge
from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.errors import Halt
from dynsteer_hook.model.events import Event
from dynsteer_hook.model.records import AuditSink, Report, StopRecord
from dynsteer_hook.runtime.evaluator import Evaluator


class ListSink:
    """Keeps the audit records of a sample in memory (an ``AuditSink``)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(record)


class SampleMonitor:
    """The evaluator of one sample, fed from its conversation.

    Args:
        blueprint: The sample's blueprint.
        config: Thresholds and rates.
        judges: Judges per tier (Tier 1 rules are added when missing).
        sink: Receives the audit records as they happen.
    """

    def __init__(self, blueprint: Blueprint, config: EvaluatorConfig | None = None, *,
                 judges: Mapping[int, Judge] | None = None, sink: AuditSink | None = None) -> None:
        self.blueprint = blueprint
        self.evaluator = Evaluator(blueprint, config, judges=judges, sink=sink)
        self.feed = SampleFeed({t.name for t in blueprint.catalog} or None)
        self.events: list[Event] = []
        self.halt_turn: int | None = None
        """The agent turn (1-based) in which the halt fired."""

    @property
    def stop(self) -> StopRecord | None:
        """The stop record once the sample was halted."""
        return self.evaluator.stop

    def _observe(self, events: Iterable[Event]) -> StopRecord | None:
        for event in events:
            if self.evaluator.stop is not None:
                return self.evaluator.stop
            self.events.append(event)
            try:
                self.evaluator.observe(event)
            except Halt as halt:
                self.halt_turn = self.feed.turns
                return halt.stop
        return self.evaluator.stop

    def before_call(self, history: Sequence[ChatMessage], call: InspectToolCall) -> StopRecord | None:
        """Feed the conversation up to the call (the assistant message with all its calls); the stop if it halts."""
        stop = self._observe(self.feed.messages(history))
        event = self.feed.call(call) if stop is None else None  # a call outside the conversation shown
        return self._observe([event]) if event is not None else stop

    def after_call(self, call_id: str, result: Any, error: ToolCallError | None) -> StopRecord | None:
        """Feed the result of a call that ran; the stop if it halts."""
        event = self.feed.result(call_id, result, error)
        return self._observe([event] if event is not None else [])

    def finish(self, messages: Sequence[ChatMessage], *, crash: str | None = None) -> Report:
        """Feed the rest of the conversation and return the report."""
        self._observe(self.feed.messages(messages))
        return self.evaluator.finish(crash=crash)
