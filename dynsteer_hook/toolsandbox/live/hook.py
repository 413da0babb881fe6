"""dynsteer in ToolSandbox's loop, as one named object: the hook, with one method per lifecycle point.

ToolSandbox's ``Scenario.play`` loop reaches the hook through the roles it calls
(``adapter.GuardedRole``): the rollout starts (``on_rollout_start``), every raw event of the
rollout arrives in order (``on_event``), each agent turn ends (``on_turn_end``), and the
rollout ends (``on_rollout_end``). Each method takes one frozen payload.

``LiveHook`` is the hook that judges: it feeds every event to the ``Evaluator`` (a ``Halt``
it raises stops the rollout, for a fatal minefield before the call executes), keeps the
audit log as it happens, and once the rollout is over finishes the report and writes the
report files. Further observers attach to the same lifecycle without touching the loop:
subclasses of ``RolloutHook`` (no-op methods, override the ones you need), handed to the
``LiveHook`` in a list. Each sees the loop's points and what the evaluator made of them: every
closed action with the stages it settled and their verdicts (``on_action_closed``), what each role's
model has spent (``on_spend``), and the halt with the call it stopped (``on_halt``). The events file (``dynsteer_events.jsonl``) is
written by one such observer, ``EventFileHook``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from dynsteer_hook.files.events import EventLog
from dynsteer_hook.files.outputs import JsonlSink, open_log, reason
from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.errors import Halt
from dynsteer_hook.model.events import Event, ToolCall
from dynsteer_hook.model.records import IncompleteLog, NativeSimilarity, Report, StageRecord, StopRecord, with_files
from dynsteer_hook.model.spending import Spend
from dynsteer_hook.report.writer import AUDIT_LOG, write_run_report
from dynsteer_hook.runtime.clock import ClosedAction
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.toolsandbox.live.interrupts import InterruptControl

EVENTS_FILE = "dynsteer_events.jsonl"


@dataclass(frozen=True, slots=True)
class RolloutStart:
    """A rollout is about to play.

    Attributes:
        scenario: The ToolSandbox scenario's name.
        agent: The agent role as chosen (``Scripted``, ``LiteLLM``, a ToolSandbox agent's name).
        agent_model: The LiteLLM agent's model string (None for other agents).
        user: The user role as chosen.
        blueprint: The blueprint file's name.
        stale: The blueprint was compiled from another version of the scenario's public view.
        max_messages: ToolSandbox's message limit for the scenario.
    """

    scenario: str
    agent: str
    agent_model: str | None
    user: str
    blueprint: str
    stale: bool
    max_messages: int


@dataclass(frozen=True, slots=True)
class EventSeen:
    """One raw event of the rollout (a message, a tool call as the agent or user sent it, a tool result).

    A ``ToolCall`` carries the tool name as the agent saw it (``tool``) and as it resolved
    (``canonical_tool``), its id and arguments, and ``rejected`` when the tool-call gate refused
    it: then it never executed. A ``ToolResult`` carries the result or the error.

    Attributes:
        scenario: The scenario's name.
        k: The event's place on the raw clock (1 for the first).
        turn: Agent turns so far (the event's execution batch).
        event: The event.
    """

    scenario: str
    k: int
    turn: int
    event: Event


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """An agent turn (one execution batch) ended: what it cost."""

    scenario: str
    turn: int
    seconds: float
    tokens: int | None


@dataclass(frozen=True, slots=True)
class Spent:
    """What a role's model has spent so far in the rollout, told after each of its turns (and once at the start for a
    model that does not count its calls: everything unknown).

    Attributes:
        scenario: The scenario's name.
        role: ``agent`` or ``user``.
        spend: Calls, tokens and dollars so far (``model.spending.Spend``).
        model: The role's model string, when known.
    """

    scenario: str
    role: str
    spend: Spend
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ActionClosed:
    """A closed action (the t clock): its calls with their results, and the stages it settled, as judged.

    Attributes:
        scenario: The scenario's name.
        action: The action: its calls (each with its result, or none) or its message to the user.
        stages: The stages the action settled, judged, in blueprint order (each names its milestone,
            tool, window, scores, tiers and rationale); the call that closed one is the action's call
            of that stage's tool.
    """

    scenario: str
    action: ClosedAction
    stages: tuple[StageRecord, ...]


@dataclass(frozen=True, slots=True)
class Halted:
    """The evaluator stopped the rollout.

    Attributes:
        scenario: The scenario's name.
        stop: The stop record: reason, clock values, anchor, causal dimension.
        call: The call the stop kept from executing (a fatal minefield), else None.
    """

    scenario: str
    stop: StopRecord
    call: ToolCall | None


@dataclass(frozen=True, slots=True)
class RolloutEnd:
    """The rollout is over; once the hook that judges has seen it, with the finished report too.

    Attributes:
        scenario: The scenario's name.
        seconds: How long the rollout played.
        crash: Why it crashed, when it did.
        interrupted: Ctrl-C stopped it.
        report: The finished report (None until ``LiveHook`` made it).
        report_error: Why the report files could not be written, when they could not.
        evaluator_seconds: Time spent in the hook's event handling.
        native: ToolSandbox's similarity of the rollout, when it evaluated it (the report shows it beside the score).
        notes: What the loop did to the rollout (text repaired, calls past the cap refused, the deadline), for the report.
    """

    scenario: str
    seconds: float
    crash: str | None = None
    interrupted: bool = False
    report: Report | None = None
    report_error: str | None = None
    evaluator_seconds: float = 0.0
    native: NativeSimilarity | None = None
    notes: tuple[str, ...] = ()


class RolloutHook:
    """Observes live rollouts: one no-op method per lifecycle point, each taking one frozen payload.

    Subclass it and override what you need. An observer must not raise: an exception from it
    ends the rollout as a crash.
    """

    def on_rollout_start(self, start: RolloutStart) -> None:
        """The rollout is about to play."""

    def on_event(self, seen: EventSeen) -> None:
        """A raw event arrived (before the evaluator judges it)."""

    def on_turn_end(self, turn: TurnEnded) -> None:
        """An agent turn ended."""

    def on_action_closed(self, closed: ActionClosed) -> None:
        """An action closed, with the stages it settled as judged."""

    def on_spend(self, spent: Spent) -> None:
        """A role's model told what it has spent so far."""

    def on_halt(self, halted: Halted) -> None:
        """The evaluator stopped the rollout."""

    def on_rollout_end(self, end: RolloutEnd) -> None:
        """The rollout is over and its report is finished."""


def judge_event(evaluator: Evaluator, seen: EventSeen, observers: Sequence[RolloutHook]) -> None:
    """Tell the observers the event, feed it to the evaluator, then tell them the actions it closed and the halt it raised.

    A live rollout, a replay and ``dynsteer evaluate`` reach their observers through this one function.

    Raises:
        Halt: The evaluator stopped the run (the observers were told first).
    """
    for hook in observers:
        hook.on_event(seen)
    judged = len(evaluator.stages)
    try:
        evaluator.observe(seen.event)
    except Halt as halt:
        tell_closed(evaluator, judged, seen.scenario, observers)
        stopped = seen.event if isinstance(seen.event, ToolCall) and halt.stop.reason == "fatal_minefield" else None
        for hook in observers:
            hook.on_halt(Halted(seen.scenario, halt.stop, stopped))
        raise
    tell_closed(evaluator, judged, seen.scenario, observers)


def tell_closed(evaluator: Evaluator, judged: int, scenario: str, observers: Sequence[RolloutHook]) -> None:
    """Tell the observers each action the evaluator's last step closed, with the stages judged since ``judged``."""
    if not observers:
        return
    stages = evaluator.stages[judged:]
    for action in evaluator.last_closed:
        closed = ActionClosed(scenario, action, tuple(s for s in stages if s.t == action.t))
        for hook in observers:
            hook.on_action_closed(closed)


def finish_observed(evaluator: Evaluator, scenario: str, observers: Sequence[RolloutHook]) -> Report:
    """The evaluator's report once the events are over; the observers hear of the actions that closes (not of the end)."""
    judged = len(evaluator.stages)
    report = evaluator.finish()
    tell_closed(evaluator, judged, scenario, observers)
    return report


def _gap(sink: JsonlSink, name: str) -> IncompleteLog | None:
    return IncompleteLog(file=name, from_record=sink.records, reason=sink.error) if sink.error else None


class EventFileHook(RolloutHook):
    """Writes the rollout's events as the evaluator's input format (``dynsteer_events.jsonl``), with what each
    agent turn cost, so a replay can say what a stop saves."""

    def __init__(self, path: Path) -> None:
        self.log = EventLog(open_log(path))

    def on_rollout_start(self, start: RolloutStart) -> None:
        self.log.meta(task=start.scenario, blueprint=start.blueprint)

    def on_event(self, seen: EventSeen) -> None:
        self.log.write(seen.event)

    def on_turn_end(self, turn: TurnEnded) -> None:
        self.log.meta(batch_cost={"batch": turn.turn, "seconds": round(turn.seconds, 6), "tokens": turn.tokens})

    def gap(self) -> IncompleteLog | None:
        """The first record the file misses, if writing it stopped (a full disk)."""
        return _gap(self.log.sink, EVENTS_FILE)

    def close(self) -> None:
        self.log.close()


class LiveHook(RolloutHook):
    """The hook that judges: the evaluator in the loop, its audit log, and the report once the rollout is over.

    Use it as a context manager: leaving the block closes the logs. Ctrl-C never cuts an event's
    handling or the report's writing in half (see ``interrupts``).

    Args:
        evaluator: Judges the rollout; its audit records go to ``sink``.
        sink: The audit log.
        blueprint: The evaluator's blueprint (drawn in the HTML report).
        trajectory: The scenario's folder, where the report files go.
        control: This process's Ctrl-C control.
        observers: Further hooks, told every lifecycle point in order.
        stale: The blueprint was compiled from another version of the public view.
        write_report: Write the report files (false: the report stays in memory, for measuring what writing costs).
    """

    def __init__(self, evaluator: Evaluator, sink: JsonlSink, *, blueprint: Blueprint, trajectory: Path, control: InterruptControl,
                 observers: Sequence[RolloutHook] = (), stale: bool = False, write_report: bool = True) -> None:
        self.evaluator = evaluator
        self.observers = tuple(observers)
        self.blueprint = blueprint
        self.trajectory = trajectory
        self.stale = stale
        self.write_report = write_report
        self.evaluator_seconds = 0.0
        self.ended: RolloutEnd | None = None
        self._sink = sink
        self._control = control

    def __enter__(self) -> LiveHook:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close_logs(self._sink, self.observers)

    @staticmethod
    def close_logs(sink: JsonlSink, observers: Sequence[RolloutHook]) -> None:
        """Close the audit log and the observers' files (each may be closed more than once)."""
        sink.close()
        for hook in observers:
            if isinstance(hook, EventFileHook):
                hook.close()

    def on_rollout_start(self, start: RolloutStart) -> None:
        for hook in self.observers:
            hook.on_rollout_start(start)

    def on_event(self, seen: EventSeen) -> None:
        """Tell the observers, then the evaluator (which may raise ``Halt``); Ctrl-C waits until both are done."""
        start = time.perf_counter()
        self._control.hold()  # the evaluator's state is never left half-updated by Ctrl-C
        try:
            judge_event(self.evaluator, seen, self.observers)
        except BaseException:
            self._control.release(deliver=False)
            raise
        finally:
            self.evaluator_seconds += time.perf_counter() - start
        self._control.release()

    def on_turn_end(self, turn: TurnEnded) -> None:
        for hook in self.observers:
            hook.on_turn_end(turn)

    def on_spend(self, spent: Spent) -> None:
        """Tell the observers, then the evaluator, whose stop rules (a budget) may raise ``Halt``; Ctrl-C waits."""
        start = time.perf_counter()
        with self._control.held():
            try:
                for hook in self.observers:
                    hook.on_spend(spent)
                self.evaluator.spent(spent.role, spent.spend, spent.model)
            except Halt as halt:
                for hook in self.observers:
                    hook.on_halt(Halted(spent.scenario, halt.stop, None))
                raise
            finally:
                self.evaluator_seconds += time.perf_counter() - start

    def on_rollout_end(self, end: RolloutEnd) -> None:
        """Finish the report and write its files (Ctrl-C waits); ``ended`` then holds the payload with the report.

        The observers hear of an action still waiting for results, closed unanswered now, before the end.

        Raises:
            Exception: The report could not be built (the scenario is then a crash, not the run).
        """
        with self._control.held():
            judged = len(self.evaluator.stages)
            report = self.evaluator.finish(crash=end.crash, interrupted=end.interrupted)
            tell_closed(self.evaluator, judged, end.scenario, self.observers)  # calls left waiting close unanswered, and are judged
            report = with_files(report, stale=self.stale, incomplete_logs=self._gaps(), notes=end.notes)
            if end.native is not None:  # a halted rollout's similarity is that of the cut trajectory
                report = report.model_copy(update={"native": end.native.model_copy(update={"cut": report.halted})})
            try:
                if self.write_report:
                    write_run_report(report, self.trajectory, self.blueprint)
                report_error = None
            except OSError as exc:
                report_error = f"{self.trajectory}: {reason(exc)}"
        self.ended = replace(end, report=report, report_error=report_error, evaluator_seconds=self.evaluator_seconds)
        for hook in self.observers:
            hook.on_rollout_end(self.ended)

    def set_native(self, native: NativeSimilarity | None) -> None:
        """ToolSandbox's similarity, known only after the report was written (it evaluates after it): the report takes it
        and its files are written again (Ctrl-C waits). The observers heard of the end already and are not told again."""
        end = self.ended
        assert end is not None and end.report is not None
        update = None if native is None else native.model_copy(update={"cut": end.report.halted})
        report = end.report.model_copy(update={"native": update})
        report_error = end.report_error
        with self._control.held():
            if self.write_report and report_error is None:
                try:
                    write_run_report(report, self.trajectory, self.blueprint)
                except OSError as exc:
                    report_error = f"{self.trajectory}: {reason(exc)}"
        self.ended = replace(end, report=report, report_error=report_error)

    def _gaps(self) -> tuple[IncompleteLog, ...]:
        found = [_gap(self._sink, AUDIT_LOG)] + [h.gap() for h in self.observers if isinstance(h, EventFileHook)]
        return tuple(g for g in found if g is not None)
