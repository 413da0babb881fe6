"""Tool calls and results that do not pair up: recorded, never a reason to stop evaluating.

A trace from another agent loop can lose a result, reorder lines, reuse a call id or answer
a call nobody made. The dual clock pairs calls with results by id (first in, first out);
when the pairing breaks it does not wait forever: it closes the action once the agent has
visibly moved on (or the run ends) and records each break here as a ``TraceFault``. The
ledger's memory is bounded, so a hostile trace of a million orphans costs constant space.
``LineIndex`` maps raw-clock positions back to the lines of an event file, for messages
that name the line.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

FaultKind = Literal["orphan_result", "late_result", "result_before_call", "duplicate_call_id", "unanswered_call"]

KEEP_FAULTS = 100
"""Faults kept for the report; later ones are counted (and still reach the audit log)."""

_REMEMBER = 256  # ids remembered for telling a late or early result from a plain orphan


@dataclass(frozen=True, slots=True)
class TraceFault:
    """One break in the call/result pairing of a trace.

    Attributes:
        kind: ``orphan_result`` (answers no call), ``late_result`` (its call was already closed
            unanswered), ``result_before_call`` (the call came after its result),
            ``duplicate_call_id`` (an id already waiting for a result), ``unanswered_call``
            (closed without a result because the agent moved on or the run ended).
        k: Raw-clock position of the offending event (the call, for an unanswered call).
        call_id: The id involved.
        tool: The call's tool, when known.
        detail: What happened, in one sentence fragment.
    """

    kind: FaultKind
    k: int
    call_id: str
    tool: str | None
    detail: str


def _remember(memory: OrderedDict[str, int], key: str, value: int) -> None:
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > _REMEMBER:
        memory.popitem(last=False)


@dataclass(slots=True)
class PairingLedger:
    """The clock's record of pairing faults, with a bounded memory of recent ids."""

    faults: list[TraceFault] = field(default_factory=list)
    count: int = 0
    _fresh: list[TraceFault] = field(default_factory=list)
    _orphans: OrderedDict[str, int] = field(default_factory=OrderedDict)  # id -> k of a result that matched nothing
    _closed: OrderedDict[str, int] = field(default_factory=OrderedDict)  # id -> k of a call closed unanswered
    _user_calls: OrderedDict[str, int] = field(default_factory=OrderedDict)  # id -> open user calls with that id

    def record(self, fault: TraceFault) -> None:
        """Keep a fault (the first ``KEEP_FAULTS`` for the report; every one until drained)."""
        self.count += 1
        if len(self.faults) < KEEP_FAULTS:
            self.faults.append(fault)
        self._fresh.append(fault)

    def drain(self) -> list[TraceFault]:
        """Faults recorded since the last drain, oldest first."""
        if not self._fresh:
            return []
        fresh, self._fresh = self._fresh, []
        return fresh

    def user_call(self, call_id: str) -> None:
        """A user's call (ending the conversation): its result is expected and is no orphan."""
        _remember(self._user_calls, call_id, self._user_calls.get(call_id, 0) + 1)

    def agent_call(self, k: int, call_id: str, tool: str, already_waiting: bool) -> None:
        """An agent's call: flag an id that is already waiting, or one whose result came first."""
        if already_waiting:
            self.record(TraceFault("duplicate_call_id", k, call_id, tool,
                                   f"call id {call_id!r} of {tool} is already waiting for a result; results pair first in, first out"))
        early = self._orphans.pop(call_id, None)
        if early is not None:
            self.record(TraceFault("result_before_call", k, call_id, tool,
                                   f"the result for call {call_id!r} ({tool}) came before the call, at k={early}"))

    def unmatched_result(self, k: int, call_id: str) -> None:
        """A result no waiting agent call has: a user call's result, a late one, or an orphan."""
        waiting = self._user_calls.get(call_id, 0)
        if waiting:
            if waiting == 1:
                del self._user_calls[call_id]
            else:
                self._user_calls[call_id] = waiting - 1
            return
        closed = self._closed.pop(call_id, None)
        if closed is not None:
            self.record(TraceFault("late_result", k, call_id, None,
                                   f"the result for call {call_id!r} came after its call (k={closed}) was closed unanswered"))
            return
        _remember(self._orphans, call_id, k)
        self.record(TraceFault("orphan_result", k, call_id, None, f"the result for call {call_id!r} matches no call waiting for one"))

    def unanswered(self, k_call: int, call_id: str, tool: str, why: str) -> None:
        """An agent call closed without a result."""
        _remember(self._closed, call_id, k_call)
        self.record(TraceFault("unanswered_call", k_call, call_id, tool, f"call {call_id!r} ({tool}) got no result: {why}"))


class LineIndex:
    """Maps raw-clock positions (k) to the lines of the file they were read from.

    Only the places where the distance between line and k changes (blank and meta lines)
    are stored, so a file of a million events costs a few entries.
    """

    __slots__ = ("_ks", "_offsets")

    def __init__(self) -> None:
        self._ks: list[int] = []
        self._offsets: list[int] = []

    def note(self, k: int, line: int) -> None:
        """The event read from ``line`` is (or will be) raw event ``k``."""
        offset = line - k
        if not self._offsets or self._offsets[-1] != offset:
            self._ks.append(k)
            self._offsets.append(offset)

    def line(self, k: int) -> int | None:
        """The line raw event ``k`` came from (None before the first noted event)."""
        i = bisect_right(self._ks, k) - 1
        return k + self._offsets[i] if i >= 0 else None
