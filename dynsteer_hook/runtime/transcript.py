"""The conversation of a run as its report shows it: every message and call in order, with the clocks.

``TranscriptRecorder`` keeps each event the evaluator counted (so its k is the evaluator's),
clipped as it arrives, so a 1 MB result costs a few kilobytes; ``transcript`` then groups the
calls of each closed action (parallel calls together), pairs results with their calls, and
labels every action with its t, the stages it closed and its faults, from the finished report.
A call the evaluator stopped before it executed (a fatal minefield) is shown as blocked, with
the rule that stopped it. Live, in replay and in ``dynsteer evaluate`` the same events give
the same transcript. Pure: events in, records out.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from typing import Any

from dynsteer_hook.model.blueprint import ToolSpec
from dynsteer_hook.model.events import AgentMessage, Event, SystemMessage, ToolCall, ToolResult, UserMessage
from dynsteer_hook.model.records import (
    FaultRecord,
    RepeatRecord,
    Report,
    Transcript,
    TranscriptCall,
    TranscriptEntry,
    TranscriptTool,
)
from dynsteer_hook.model.untrusted import clip

TEXT_LIMIT = 2000
"""Characters kept of each message, argument list, result or error."""
EVENT_LIMIT = 4000
"""Events kept (the first ones); the transcript says how many entries the run had in all."""
REPEAT_MIN = 3


def _text(value: Any, limit: int = TEXT_LIMIT) -> str:
    if isinstance(value, str):
        return clip(value, limit)
    try:
        return clip(json.dumps(value, default=str, ensure_ascii=False), limit)
    except (TypeError, ValueError, RecursionError):
        return clip(repr(value), limit)


def _arguments(call: ToolCall) -> str:
    if call.arguments is not None:
        return _text(dict(call.arguments))
    return clip(call.raw_arguments or "", TEXT_LIMIT)


def _clipped(event: Event) -> Event:
    """The event with its texts clipped (what the transcript keeps)."""
    if isinstance(event, (SystemMessage, UserMessage, AgentMessage)):
        return type(event)(clip(event.content, TEXT_LIMIT))
    if isinstance(event, ToolCall):
        rejected = None if event.rejected is None else clip(event.rejected, 400)  # the arguments kept as their text
        return ToolCall(clip(event.call_id, 200), clip(event.tool, 200), None, _arguments(event), event.canonical_tool, event.actor, rejected)
    if isinstance(event, ToolResult):
        exception = None if event.exception is None else clip(event.exception, TEXT_LIMIT)
        return ToolResult(clip(event.call_id, 200), _text(event.result), exception)
    return event


class TranscriptRecorder:
    """Keeps the events of one run, clipped, in the order the evaluator counted them (k = 1, 2, ...)."""

    __slots__ = ("events", "seen")

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.seen = 0

    def add(self, event: Event) -> None:
        """Record one counted event."""
        self.seen += 1
        if len(self.events) < EVENT_LIMIT:
            self.events.append(_clipped(event))

    def transcript(self, report: Report, catalog: Sequence[ToolSpec]) -> Transcript:
        """The transcript of the run ``report`` describes."""
        return build_transcript(self.events, report, catalog, seen=self.seen)


def _fault_text(f: FaultRecord) -> str:
    return f"{f.cause} ({f.dimension}{', recovered' if f.recovered else ''}): {clip(f.detail, 300)}"


class _Builder:
    def __init__(self, report: Report) -> None:
        self.report = report
        self.starts = [s.k_start for s in report.steps]
        self.entries: list[dict[str, Any]] = []
        self.actions: dict[int, dict[str, Any]] = {}
        self.waiting: dict[str, list[dict[str, Any]]] = {}
        stop = report.stop
        self.blocked_k = stop.k if stop is not None and stop.reason == "fatal_minefield" else None

    def t_of(self, k: int) -> int | None:
        i = bisect.bisect_right(self.starts, k) - 1
        if i >= 0 and self.report.steps[i].k_start <= k <= self.report.steps[i].k_end:
            return self.report.steps[i].t
        return None

    def action(self, t: int | None, k: int) -> dict[str, Any]:
        if t is not None and t in self.actions:
            entry = self.actions[t]
            entry["k_end"] = max(entry["k_end"], k)
            return entry
        entry = {"kind": "action", "k": k, "k_end": k, "t": t, "text": None, "calls": []}
        self.entries.append(entry)
        if t is not None:
            self.actions[t] = entry
        return entry

    def call(self, k: int, event: ToolCall) -> None:
        stop = self.report.stop
        c: dict[str, Any] = {"k": k, "call_id": event.call_id, "tool": event.tool, "actor": event.actor, "arguments": _arguments(event),
                             "status": "unanswered"}
        if event.rejected is not None:
            c.update(status="rejected", rule=event.rejected)
        if k == self.blocked_k and stop is not None:
            c.update(status="blocked", rule=f"{stop.minefield or stop.reason}: {clip(stop.detail, 400)}")
        if event.actor != "agent":
            self.entries.append({"kind": "user_call", "k": k, "k_end": k, "calls": [c]})
        else:
            t = stop.t if k == self.blocked_k and stop is not None else self.t_of(k)
            self.action(t, k)["calls"].append(c)
        if c["status"] != "blocked":
            self.waiting.setdefault(event.call_id, []).append(c)

    def result(self, k: int, event: ToolResult) -> None:
        queue = self.waiting.get(event.call_id)
        if not queue:
            text = event.exception if event.exception is not None else event.result
            self.entries.append({"kind": "orphan_result", "k": k, "k_end": k, "text": f"{event.call_id}: {_text(text)}"})
            return
        c = queue.pop(0)
        c.update(k_result=k, result=None if event.exception is not None else _text(event.result), error=event.exception)
        if c["status"] == "unanswered":
            c["status"] = "error" if event.exception is not None else "ok"

    def add(self, k: int, event: Event) -> None:
        if isinstance(event, ToolCall):
            self.call(k, event)
        elif isinstance(event, ToolResult):
            self.result(k, event)
        elif isinstance(event, AgentMessage):
            self.action(self.t_of(k), k)["text"] = event.content
        elif isinstance(event, (UserMessage, SystemMessage)):
            kind = "user" if isinstance(event, UserMessage) else "system"
            self.entries.append({"kind": kind, "k": k, "k_end": k, "text": event.content})

    def labelled(self) -> list[TranscriptEntry]:
        """The entries with each action's stages and faults (a call's own faults on the call)."""
        stages: dict[int, list[str]] = {}
        for st in self.report.stages:
            stages.setdefault(st.t, []).append(st.milestone)
        by_call: dict[tuple[int, str], list[str]] = {}
        by_step: dict[int, list[str]] = {}
        for f in self.report.faults:
            if f.tool is not None:
                by_call.setdefault((f.k, f.tool), []).append(_fault_text(f))
            else:
                by_step.setdefault(f.t, []).append(_fault_text(f))
        out = []
        for e in self.entries:
            if e["kind"] == "action":
                for c in e["calls"]:
                    c["faults"] = by_call.get((c["k"], c["tool"]), [])
                e["kind"] = "action" if e["calls"] else "agent"
                e["stages"] = stages.get(e["t"], [])
                e["faults"] = by_step.get(e["t"], [])
            out.append(TranscriptEntry.model_validate(e | {"calls": [TranscriptCall(**c) for c in e.get("calls", [])]}))
        return out


def repeats(entries: Sequence[TranscriptEntry]) -> list[RepeatRecord]:
    """Runs of consecutive actions making the same single call, three or more long."""
    out: list[RepeatRecord] = []
    run: list[TranscriptEntry] = []

    def close() -> None:
        if len(run) >= REPEAT_MIN and run[0].t is not None and run[-1].t is not None:
            c = run[0].calls[0]
            out.append(RepeatRecord(tool=c.tool, arguments=c.arguments, count=len(run), t_first=run[0].t, t_last=run[-1].t,
                                    settled=any(e.stages for e in run)))

    for e in entries:
        if e.kind != "action":
            continue
        sig = [(c.tool, c.arguments) for c in e.calls]
        if run and sig == [(c.tool, c.arguments) for c in run[0].calls] and len(sig) == 1:
            run.append(e)
            continue
        close()
        run = [e] if len(sig) == 1 else []
    close()
    return out


def build_transcript(events: Sequence[Event], report: Report, catalog: Sequence[ToolSpec], *, seen: int | None = None) -> Transcript:
    """The transcript of ``events`` (the evaluator's, k = 1, 2, ...) labelled from ``report``."""
    builder = _Builder(report)
    for k, event in enumerate(events[: report.k], start=1):
        builder.add(k, event)
    entries = builder.labelled()
    request = next((e.text for e in entries if e.kind == "user"), None)
    tools = [TranscriptTool(name=clip(s.name, 200), description=clip(s.description, 400)) for s in catalog]
    total = len(entries) + max(0, min(seen if seen is not None else len(events), report.k) - len(events))
    return Transcript(request=request, tools=tools, entries=entries, entry_count=total, repeats=repeats(entries))
