"""Where a recorded faulty call sits on dynsteer's dual clock in a run's events file.

A variant records its fault as (agent step, call position). In ``dynsteer_events.jsonl``
every event ticks the raw clock k (the meta line does not), and every closed agent action
ticks t (``dynsteer_hook.runtime.clock``). An agent step is one closed action: a message to the
user, or a batch of calls closed when the last of their results arrives. The faulty call's
k is the index of its ``tool_call`` event; its t is the action that call belongs to, or,
when the run stopped before the call's result (a halt before a fatal call executes), the
action it would have closed (one past the last closed action).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dynsteer_hook.files.events import read_events
from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.model.events import AgentMessage, ToolCall
from dynsteer_hook.runtime.clock import DualClock


@dataclass(frozen=True, slots=True)
class CallClock:
    """A call's place on the dual clock, and the id the events file gives it."""

    k: int
    t: int
    call_id: str


class CallNotPlayedError(DynsteerError):
    """The events file never reaches the requested agent step or call."""


def call_clock(events: str | Path, step: int, call: int = 0) -> CallClock:
    """The (k, t) of call ``call`` of agent step ``step`` (both from 0) in an events file.

    Raises:
        CallNotPlayedError: The run ended before that call (the message says how far it got).
        EventFileError: The file is missing or a line is malformed.
    """
    if step < 0 or call < 0:
        raise CallNotPlayedError(f"agent step {step} and call {call} must count from 0")
    clock = DualClock()
    steps = -1
    position = -1
    found: tuple[int, str, int] | None = None  # k, call id, t of the action it opens or joins
    for event in read_events(events):
        agent_call = isinstance(event, ToolCall) and event.actor == "agent"
        if not clock.pending_calls and (agent_call or isinstance(event, AgentMessage)):
            steps += 1  # an agent step begins when no earlier call is still open
            position = -1
        if agent_call:
            position += 1
        closes_before = clock.t
        action = clock.tick(event)
        if found is None and agent_call and (steps, position) == (step, call):
            assert isinstance(event, ToolCall)
            found = (clock.k, event.call_id, closes_before + 1)
        if found is not None and action is not None and any(o.k_call == found[0] for o in action.calls):
            return CallClock(found[0], action.t, found[1])
    if found is None:
        raise CallNotPlayedError(f"the events file {events} ends after agent step {steps}, before call {call} of step {step}")
    return CallClock(found[0], found[2], found[1])
