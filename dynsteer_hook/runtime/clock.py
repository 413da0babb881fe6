"""The dual clock: raw events (k) and closed actions (t).

k advances on every event. t advances when an action reaches semantic closure: every
tool call the agent issued has its result and the agent has yielded control (issuing the
calls, or speaking to the user). Parallel calls stay in one action until the last result
arrives. User tool calls (ending the conversation) and messages tick k only.

A result that never comes must not freeze the clock. While calls wait, the action also
closes once the agent has visibly moved on (``moved_on``): the user speaks, the agent
speaks a second time, or the agent calls again after some of the action's results came
(it has seen them and acted). At the end of a run ``flush`` closes what is left. The calls
closed this way have no result, and every break of the pairing is recorded in ``pairing``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from dynsteer_hook.model.events import AgentMessage, Event, StateChange, ToolCall, ToolResult, UserMessage
from dynsteer_hook.runtime.pairing import PairingLedger


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """A tool call and, once it came, its result, with their raw-clock positions."""

    k_call: int
    call: ToolCall
    k_result: int | None = None
    result: ToolResult | None = None

    @property
    def failed(self) -> bool:
        """Whether the call has no result or raised."""
        return self.result is None or self.result.exception is not None


@dataclass(frozen=True, slots=True)
class ClosedAction:
    """One closed agent action a_t: a batch of answered calls, or a message to the user."""

    t: int
    k_start: int
    k_end: int
    calls: tuple[CallOutcome, ...] = ()
    message: AgentMessage | None = None

    @property
    def kind(self) -> str:
        """'tool' when the action made calls, else 'message'."""
        return "tool" if self.calls else "message"

    @property
    def state_changes(self) -> tuple[StateChange, ...]:
        """Every database change the action's calls caused."""
        return tuple(c for o in self.calls if o.result is not None for c in o.result.state_changes)


@dataclass(slots=True)
class _Open:
    k_start: int
    k_last: int
    calls: list[CallOutcome] = field(default_factory=list)
    pending: dict[str, deque[int]] = field(default_factory=dict)
    message: AgentMessage | None = None
    answered: int = 0
    waiting: int = 0  # calls without their result yet (a count: checked on every event)

    def n_pending(self) -> int:
        return self.waiting


class DualClock:
    """Counts raw events and detects closed actions."""

    __slots__ = ("_open", "k", "orphan_results", "pairing", "t")

    def __init__(self) -> None:
        self.k = 0
        self.t = 0
        self._open: _Open | None = None
        self.orphan_results = 0
        self.pairing = PairingLedger()

    @property
    def pending_calls(self) -> tuple[ToolCall, ...]:
        """Agent calls issued and not yet answered."""
        if self._open is None:
            return ()
        return tuple(self._open.calls[i].call for q in self._open.pending.values() for i in q)

    def moved_on(self, event: Event) -> ClosedAction | None:
        """Close the waiting action when ``event`` shows the agent has moved on (call before ``tick``).

        k does not advance: the closed action ends at its own last event, and ``event`` is
        ticked afterwards as usual.
        """
        op = self._open
        if op is None or not op.n_pending():
            return None
        if isinstance(event, UserMessage):
            why = f"the user spoke at k={self.k + 1} before it came"
        elif isinstance(event, AgentMessage) and op.message is not None:
            why = f"the agent spoke again at k={self.k + 1} before it came"
        elif isinstance(event, ToolCall) and event.actor == "agent" and (op.message is not None or op.answered):
            why = f"the agent made another call at k={self.k + 1} before it came"
        else:
            return None
        return self._close_unanswered(why)

    def flush(self) -> ClosedAction | None:
        """At the end of a run, close the action still waiting for results, if any."""
        if self._open is None:
            return None
        return self._close_unanswered("the run ended before it came")

    def tick(self, event: Event) -> ClosedAction | None:
        """Advance k for ``event``; return the action it closes, if any."""
        self.k += 1
        k = self.k
        if isinstance(event, ToolCall):
            if event.actor != "agent":
                self.pairing.user_call(event.call_id)
                return None
            if self._open is None:
                self._open = _Open(k_start=k, k_last=k)
            batch = self._open
            self.pairing.agent_call(k, event.call_id, event.tool, already_waiting=event.call_id in batch.pending)
            batch.calls.append(CallOutcome(k, event))
            batch.pending.setdefault(event.call_id, deque()).append(len(batch.calls) - 1)
            batch.waiting += 1
            batch.k_last = k
            return None
        if isinstance(event, ToolResult):
            op = self._open
            queue = op.pending.get(event.call_id) if op is not None else None
            if op is None or not queue:
                self.orphan_results += 1
                self.pairing.unmatched_result(k, event.call_id)
                return None
            i = queue.popleft()
            if not queue:
                del op.pending[event.call_id]
            o = op.calls[i]
            op.calls[i] = CallOutcome(o.k_call, o.call, k, event)
            op.answered += 1
            op.waiting -= 1
            op.k_last = k
            return self._close(k) if op.n_pending() == 0 else None
        if isinstance(event, AgentMessage):
            if self._open is not None and self._open.n_pending():
                self._open.message = event
                self._open.k_last = k
                return None
            self._open = _Open(k_start=k, k_last=k, message=event)
            return self._close(k)
        return None

    def _close_unanswered(self, why: str) -> ClosedAction:
        assert self._open is not None
        op = self._open
        for q in op.pending.values():
            for i in q:
                o = op.calls[i]
                self.pairing.unanswered(o.k_call, o.call.call_id, o.call.tool, why)
        return self._close(op.k_last)

    def _close(self, k: int) -> ClosedAction:
        assert self._open is not None
        op, self._open = self._open, None
        self.t += 1
        return ClosedAction(self.t, op.k_start, k, tuple(op.calls), op.message)
