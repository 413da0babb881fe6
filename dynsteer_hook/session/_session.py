"""One evaluated rollout, whatever loop plays it: the evaluator, the observers and the audit sink behind one object.

A loop feeds the session the rollout's raw events as they happen and gets a ``Verdict`` back:
continue, or the halt with its stop record. The halt is a value, not an exception, so it never
travels through the caller's framework (``raise_halt=True`` restores the ``Halt`` the evaluator
raises, for loops built around it). A fatal call halts when it is fed, before it executes, so a
loop feeds a call first and runs it only when the verdict says so; ``screen`` asks the same
question of a pending call without recording anything. ``finish`` returns the report, with the
observers' faults in its notes, and writes the report files when the session was given a folder.

Every driver can stand on it: the ToolSandbox loop's ``LiveHook`` becomes a session plus what is
ToolSandbox's own (Ctrl-C held around each event, the native similarity, the stale flag), and
``judge_event`` / ``tell_closed`` / ``finish_observed`` become ``feed`` and ``finish``; ``replay``
and ``dynsteer evaluate`` feed a recording into a session with ``report_dir``; the Inspect adapter's
``SampleMonitor`` holds a session instead of an evaluator, so an Inspect run gets the observers
(OpenTelemetry included) the others get. The LangChain and OpenAI Agents adapters use it now.

A session is not thread-safe: a loop that runs tool calls on several threads feeds it under a lock.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import structlog

from dynsteer_hook.files.events import EventLog
from dynsteer_hook.files.outputs import JsonlSink, StagedFiles, open_log, reason
from dynsteer_hook.judges.base import Judge
from dynsteer_hook.model.blueprint import Blueprint, Minefield
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.errors import DynsteerError, Halt, OutputError
from dynsteer_hook.model.events import Event, ToolCall
from dynsteer_hook.model.records import AuditSink, IncompleteLog, ListSink, Report, StopRecord, with_files
from dynsteer_hook.report.writer import AUDIT_LOG, stage_report
from dynsteer_hook.runtime.clock import ClosedAction
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.runtime.stop_rules import RuleLike
from dynsteer_hook.session._lifecycle import ActionClosed, EventSeen, Halted, RolloutEnd, RolloutStart, TurnEnded
from dynsteer_hook.session._observers import Observer, ObserverGroup

_log = structlog.wrap_logger(logging.getLogger(__name__))

EVENTS_FILE = "dynsteer_events.jsonl"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the evaluator made of an event: go on, or the halt with its stop record.

    Attributes:
        stop: The stop record once the rollout is halted (on this event or before), else None.
        closed: The actions this event closed, oldest first.
    """

    stop: StopRecord | None = None
    closed: tuple[ClosedAction, ...] = ()

    @property
    def halted(self) -> bool:
        """Whether the rollout is halted: the loop must run nothing more and end."""
        return self.stop is not None

    @property
    def fatal(self) -> bool:
        """Whether a fatal call was stopped before it executed (the call must not run)."""
        return self.stop is not None and self.stop.reason == "fatal_minefield"

    def raise_if_halted(self) -> None:
        """Raise ``Halt`` when the rollout is halted (for loops that stop on the exception).

        Raises:
            Halt: The stop record's halt.
        """
        if self.stop is not None:
            raise Halt(self.stop)


CONTINUE = Verdict()


def _local_offset(epoch: float) -> float:
    return float(time.localtime(epoch).tm_gmtoff)


class Session:
    """One rollout under evaluation: feed it events, get verdicts, finish it for the report.

    Args:
        blueprint: The task's milestone graph (it must pass contract validation).
        config: Thresholds and rates.
        judges: Judge per tier (Tier 1 rules are added when missing).
        stop_rules: Closed-action stop criteria, checked in order.
        observers: Told every lifecycle point, each isolated (see ``ObserverGroup``).
        sink: Receives the audit records; by default the audit log in ``report_dir``, else kept in memory (``audit``).
        report_dir: Where ``finish`` writes the report files (JSON, Markdown, HTML), the audit log and the events.
        start: What the observers hear when the rollout starts (its ``scenario`` names the task).
        raise_halt: ``feed`` raises ``Halt`` instead of returning a halted verdict.
        wall_clock: The rollout's start as (seconds since the epoch, offset from UTC in seconds), against which
            moments the user states ("tomorrow 5PM") are resolved; by default now, in this machine's zone.

    Raises:
        BlueprintError: The blueprint is not valid.
        OutputError: ``report_dir`` cannot be created.
    """

    def __init__(
        self,
        blueprint: Blueprint,
        *,
        config: EvaluatorConfig | None = None,
        judges: Mapping[int, Judge] | None = None,
        stop_rules: Sequence[RuleLike] | None = None,
        observers: Sequence[Observer] = (),
        sink: AuditSink | None = None,
        report_dir: str | Path | None = None,
        start: RolloutStart | None = None,
        raise_halt: bool = False,
        wall_clock: tuple[float, float] | None = None,
    ) -> None:
        self.blueprint = blueprint
        self.start_info = start or RolloutStart(scenario=blueprint.task or "task")
        self.task = self.start_info.scenario
        self.report_dir = Path(report_dir) if report_dir is not None else None
        self._owned: list[JsonlSink] = []
        self._events: EventLog | None = None
        if self.report_dir is not None:
            try:
                self.report_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OutputError(f"the report folder {self.report_dir} cannot be created ({reason(exc)}); pass a writable folder") from None
            if sink is None:
                sink = open_log(self.report_dir / AUDIT_LOG)
                self._owned.append(sink)
            self._events = EventLog(open_log(self.report_dir / EVENTS_FILE))
            self._owned.append(self._events.sink)
        self._memory = sink if sink is not None else ListSink()
        self.evaluator = Evaluator(blueprint, config, judges=judges, stop_rules=stop_rules, sink=self._memory)
        epoch, offset = wall_clock if wall_clock is not None else (time.time(), None)
        self.evaluator.set_wall_clock(epoch, offset if offset is not None else _local_offset(epoch))
        self._observers = ObserverGroup(observers, self.task)
        self._raise_halt = raise_halt
        self._notes: list[str] = []
        self._turn = 0
        self._started: float | None = None
        self._report: Report | None = None
        self.report_error: str | None = None
        """Why the report files could not be written, when they could not."""
        self.evaluator_seconds = 0.0
        """Time spent in ``feed``: the evaluator and the observers."""

    # -- state -------------------------------------------------------------------

    @property
    def stop(self) -> StopRecord | None:
        """The stop record once the rollout is halted."""
        return self.evaluator.stop

    @property
    def halted(self) -> bool:
        """Whether the rollout is halted."""
        return self.evaluator.stop is not None

    @property
    def finished(self) -> bool:
        """Whether ``finish`` has made the report."""
        return self._report is not None

    @property
    def report(self) -> Report | None:
        """The report once the session is finished."""
        return self._report

    @property
    def turn(self) -> int:
        """Agent turns fed so far."""
        return self._turn

    @property
    def observers(self) -> tuple[Observer, ...]:
        """The observers still attached (one that raised was dropped)."""
        return self._observers.live

    @property
    def audit(self) -> list[dict[str, Any]]:
        """The audit records kept in memory (empty when they go to a file or a sink of the caller's)."""
        return list(self._memory.records) if isinstance(self._memory, ListSink) else []

    @property
    def notes(self) -> tuple[str, ...]:
        """What the session and its loop noted so far, for the report."""
        return (*self._notes, *self._observers.notes)

    def note(self, text: str) -> None:
        """Add a sentence to the report's notes (what the loop did: a call refused, a deadline)."""
        self._notes.append(text)

    # -- the rollout ---------------------------------------------------------------

    def begin(self) -> None:
        """Tell the observers the rollout starts (once; ``feed`` does it when the loop did not)."""
        if self._started is not None:
            return
        self._started = time.perf_counter()
        if self._events is not None:
            self._events.meta(task=self.task, blueprint=self.start_info.blueprint)
        self._observers.tell("on_rollout_start", self.start_info)

    def screen(self, call: ToolCall) -> Minefield | None:
        """The fatal minefield a pending call would step on, recording nothing (``feed`` it to act on it)."""
        return self.evaluator.screen(call)

    def feed(self, event: Event) -> Verdict:
        """Feed one raw event as it happens; a tool call before it executes.

        Returns:
            The verdict: the actions the event closed, and the stop once the rollout is halted. Events fed after
            the halt are not evaluated: the halted verdict comes back again.

        Raises:
            Halt: With ``raise_halt``, instead of a halted verdict.
            DynsteerError: The session is finished.
        """
        verdict = self._feed(event)
        if self._raise_halt:
            verdict.raise_if_halted()
        return verdict

    def feed_turn(self, events: Iterable[Event], *, seconds: float = 0.0, tokens: int | None = None) -> Verdict:
        """Feed one agent turn (its message or its tool calls, before any runs) and tell the observers what it cost.

        Returns:
            The verdict after the turn's events: every action they closed, and the stop if one halted the rollout
            (the turn's events after it are not evaluated).

        Raises:
            Halt: With ``raise_halt``, instead of a halted verdict.
            DynsteerError: The session is finished.
        """
        self._turn += 1
        closed: tuple[ClosedAction, ...] = ()
        verdict = CONTINUE
        for event in events:
            verdict = self._feed(event)
            closed += verdict.closed
            if verdict.halted:
                break
        if self._events is not None:
            self._events.meta(batch_cost={"batch": self._turn, "seconds": round(seconds, 6), "tokens": tokens})
        if self._observers:
            self._observers.tell("on_turn_end", TurnEnded(self.task, self._turn, seconds, tokens))
        verdict = Verdict(verdict.stop, closed)
        if self._raise_halt:
            verdict.raise_if_halted()
        return verdict

    def _feed(self, event: Event) -> Verdict:
        if self._report is not None:
            raise DynsteerError(f"the session of {self.task!r} is finished; start a new session for another rollout")
        if self._started is None:
            self.begin()
        evaluator = self.evaluator
        if evaluator.stop is not None:
            return Verdict(evaluator.stop)
        began = time.perf_counter()
        try:
            if self._observers:
                self._observers.tell("on_event", EventSeen(self.task, evaluator.k + 1, self._turn, event))
            if self._events is not None:
                self._events.write(event)
            judged = len(evaluator.stages)
            try:
                evaluator.observe(event)
            except Halt as halt:
                self._tell_closed(judged)
                stopped = event if isinstance(event, ToolCall) and halt.stop.reason == "fatal_minefield" else None
                self._observers.tell("on_halt", Halted(self.task, halt.stop, stopped))
                return Verdict(halt.stop, evaluator.last_closed)
            self._tell_closed(judged)
            return Verdict(None, evaluator.last_closed) if evaluator.last_closed else CONTINUE
        finally:
            self.evaluator_seconds += time.perf_counter() - began

    def _tell_closed(self, judged: int) -> None:
        if not self._observers or not self.evaluator.last_closed:
            return
        stages = self.evaluator.stages[judged:]
        for action in self.evaluator.last_closed:
            self._observers.tell("on_action_closed", ActionClosed(self.task, action, tuple(s for s in stages if s.t == action.t)))

    def finish(self, *, crash: str | None = None, interrupted: bool = False, notes: Sequence[str] = ()) -> Report:
        """The report of the rollout (call once it has ended; a second call returns the same report).

        Calls still waiting for results are closed unanswered and judged. With ``report_dir``, the report files are
        written there (all new or all old); a failure to write them is logged and kept in ``report_error``, never raised:
        the report is returned either way.

        Args:
            crash: Why the rollout crashed, when it did.
            interrupted: Ctrl-C stopped it.
            notes: Further sentences for the report's notes.
        """
        if self._report is not None:
            return self._report
        self.begin()
        judged = len(self.evaluator.stages)
        report = self.evaluator.finish(crash=crash, interrupted=interrupted)
        self._tell_closed(judged)
        report = with_files(report, incomplete_logs=self._gaps(), notes=(*self.notes, *notes))
        if self.report_dir is not None:
            try:
                _write(report, self.report_dir, self.blueprint)
            except OSError as exc:
                self.report_error = f"{self.report_dir}: {reason(exc)}"
                _log.warning("report_not_written", task=self.task, error=self.report_error)
        for sink in self._owned:
            sink.close()
        self._report = report
        seconds = time.perf_counter() - self._started if self._started is not None else 0.0
        self._observers.tell("on_rollout_end", RolloutEnd(self.task, seconds, crash, interrupted, report, self.report_error,
                                                          self.evaluator_seconds, None, tuple(report.notes)))
        return report

    def _gaps(self) -> tuple[IncompleteLog, ...]:
        found = []
        for sink in self._owned:
            if sink.error:
                found.append(IncompleteLog(file=sink.path.name, from_record=sink.records, reason=sink.error))
        return tuple(found)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        """Finish the session if the loop did not: a crash when an exception left the block, interrupted on Ctrl-C."""
        if self._report is not None:
            return
        if isinstance(exc, KeyboardInterrupt):
            self.finish(interrupted=True)
        elif exc is not None and not isinstance(exc, Halt):
            self.finish(crash=f"{type(exc).__name__}: {exc}"[:2000])
        else:
            self.finish()


def _write(report: Report, out: Path, blueprint: Blueprint) -> None:
    """The JSON, Markdown and HTML reports of one rollout, renamed into ``out`` together."""
    os.makedirs(out, exist_ok=True)
    with StagedFiles(durable=False) as staged:
        stage_report(staged, report, out, blueprint)
        staged.commit()
