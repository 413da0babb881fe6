"""The lifecycle of an evaluated rollout, whatever loop plays it: one no-op method per point, each taking one frozen payload.

The points are those of ToolSandbox's loop (``toolsandbox.live.hook``), with the same names and
fields, so an observer written for one loop (the OpenTelemetry exporter, an events file, a
dashboard) reads the same payloads from another. Fields a loop does not know keep their defaults:
a LangChain agent has no ToolSandbox user role and no message limit. Once the ToolSandbox loop
runs on the session, ``toolsandbox.live.hook`` re-exports these classes instead of defining its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from dynsteer_hook.model.events import Event, ToolCall
from dynsteer_hook.model.records import NativeSimilarity, Report, StageRecord, StopRecord
from dynsteer_hook.runtime.clock import ClosedAction


@dataclass(frozen=True, slots=True)
class RolloutStart:
    """A rollout is about to play.

    Attributes:
        scenario: The task's name (a ToolSandbox scenario, a sample, an agent's task).
        agent: What plays the agent (a role's name, ``langchain``, ``openai-agents:<agent name>``).
        agent_model: The agent's model, when known.
        user: What plays the user, when something does.
        blueprint: Where the blueprint came from (a file's name, ``compiled from the agent's tools``).
        stale: The blueprint was compiled from another version of the task's public view.
        max_messages: The loop's message limit (0: none known).
    """

    scenario: str
    agent: str = "agent"
    agent_model: str | None = None
    user: str = ""
    blueprint: str = ""
    stale: bool = False
    max_messages: int = 0


@dataclass(frozen=True, slots=True)
class EventSeen:
    """One raw event of the rollout (a message, a tool call as the agent sent it, a tool result).

    Attributes:
        scenario: The task's name.
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
    """An agent turn ended: what its model call cost (tokens when the loop counts them)."""

    scenario: str
    turn: int
    seconds: float
    tokens: int | None


@dataclass(frozen=True, slots=True)
class ActionClosed:
    """A closed action (the t clock): its calls with their results, and the stages it settled, as judged.

    Attributes:
        scenario: The task's name.
        action: The action: its calls (each with its result, or none) or its message to the user.
        stages: The stages the action settled, judged, in blueprint order.
    """

    scenario: str
    action: ClosedAction
    stages: tuple[StageRecord, ...]


@dataclass(frozen=True, slots=True)
class Halted:
    """The evaluator stopped the rollout.

    Attributes:
        scenario: The task's name.
        stop: The stop record: reason, clock values, anchor, causal dimension.
        call: The call the stop kept from executing (a fatal minefield), else None.
    """

    scenario: str
    stop: StopRecord
    call: ToolCall | None


@dataclass(frozen=True, slots=True)
class RolloutEnd:
    """The rollout is over, with its finished report.

    Attributes:
        scenario: The task's name.
        seconds: How long the rollout played.
        crash: Why it crashed, when it did.
        interrupted: Ctrl-C stopped it.
        report: The finished report.
        report_error: Why the report files could not be written, when they could not.
        evaluator_seconds: Time spent feeding the evaluator and the observers.
        native: The loop's own score of the rollout, when it has one (ToolSandbox's similarity).
        notes: What the loop and the session noted (an observer dropped, a call refused), as in the report.
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
    """Observes rollouts: one no-op method per lifecycle point, each taking one frozen payload.

    Subclass it and override what you need. An observer that raises is logged, named in the
    report's notes and dropped for the rest of the rollout; the rollout goes on without it.
    """

    def on_rollout_start(self, start: RolloutStart) -> None:
        """The rollout is about to play."""

    def on_event(self, seen: EventSeen) -> None:
        """A raw event arrived (before the evaluator judges it)."""

    def on_turn_end(self, turn: TurnEnded) -> None:
        """An agent turn ended."""

    def on_action_closed(self, closed: ActionClosed) -> None:
        """An action closed, with the stages it settled as judged."""

    def on_halt(self, halted: Halted) -> None:
        """The evaluator stopped the rollout."""

    def on_rollout_end(self, end: RolloutEnd) -> None:
        """The rollout is over and its report is finished."""
