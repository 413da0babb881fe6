"""Raw-clock work on an agent's tool call, before it runs.

Minefield interception (a call that would step on a fatal minefield is reported before it
executes), near misses and warning-level hits, schema issues, exact repeats of an earlier
call, and how much the agent had been shown when it called. What a call's own event tells is
kept as a ``PendingCall`` until the call's action closes.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynsteer_hook.model.blueprint import Minefield
from dynsteer_hook.model.catalog import ArgIssue
from dynsteer_hook.model.events import ToolCall
from dynsteer_hook.model.predicates import all_hold
from dynsteer_hook.model.records import StopRecord
from dynsteer_hook.runtime.faults import Fault
from dynsteer_hook.runtime.grounding import TextGrounding
from dynsteer_hook.runtime.index import BlueprintIndex
from dynsteer_hook.runtime.screening import FoldedArguments, screening_arguments

_MAX_LEAVES = 64  # argument values a read-only minefield checks before it treats the call as acting on unseen input


def signature(tool: str, args: Mapping[str, Any]) -> bytes:
    """A fixed-size fingerprint of a call, to spot exact repeats without keeping every call's text."""
    text = tool + "\x00" + json.dumps(args, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class PendingCall:
    """What a call's own event tells, kept until its action closes.

    Attributes:
        issues: Schema issues of its arguments (and its refusal, when the gate refused it).
        fatal_near: Fatal minefields of its tool whose predicates did not hold (near misses).
        warnings: Non-fatal minefields it stepped on.
        repeated_of: The closed action that first made the very same call, if any.
        grounding_upto: How much the agent had been shown when it called.
        user_upto: How much the user had said when it called.
    """

    issues: tuple[ArgIssue, ...] = ()
    fatal_near: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    repeated_of: int | None = None
    grounding_upto: int = 0
    user_upto: int = 0


@dataclass(frozen=True, slots=True)
class Hit:
    """A pending call that would step on a fatal minefield, with the arguments as screened."""

    minefield: Minefield
    arguments: Mapping[str, Any]

    def stop(self, call: ToolCall, k: int, t: int, anchor: str, frontier: list[str]) -> tuple[StopRecord, Fault]:
        """The stop record and the fault of halting on ``call`` (raw event ``k``) before it executes, in action ``t + 1``: the stop
        and the fault name the same call at the same k and t."""
        f = self.minefield
        shown = json.dumps(dict(self.arguments), default=str, ensure_ascii=False)[:200]
        how = f"call {call.tool[:80]}({shown})"
        if call.rejected is not None:
            how = f"call {call.tool[:80]!r} (refused before it ran, read as {f.tool})({shown})"
        stop = StopRecord(
            reason="fatal_minefield",
            k=k,
            t=t + 1,
            anchor=anchor,
            dimension="safety",
            frontier=frontier,
            detail=f"{how} hits {f.id}: {f.reason or 'hazardous operation'}",
            blamed_k=k,
            blamed_t=t + 1,
            minefield=f.id,
            tool=f.tool,
        )
        return stop, Fault(k, t + 1, call.tool, "safety", "fatal_minefield", f"hits {f.id}: {f.reason or 'hazardous operation'}")


class Interceptor:
    """Screens every agent call as it is issued and keeps what it found until the call's action closes.

    Args:
        index: The blueprint's look-ups.
        grounding: What the agent has been shown so far (read, not copied).
        user_words: What the user has said so far (read, not copied).
    """

    __slots__ = ("_grounding", "_index", "_pending", "_signatures", "_user_words")

    def __init__(self, index: BlueprintIndex, grounding: TextGrounding, user_words: TextGrounding | None = None) -> None:
        self._index = index
        self._grounding = grounding
        self._user_words = user_words if user_words is not None else TextGrounding()
        self._pending: dict[str, deque[PendingCall]] = defaultdict(deque)  # by call id, first in first out like the clock
        self._signatures: dict[bytes, int] = {}

    def screen(self, call: ToolCall) -> Minefield | None:
        """The fatal minefield a pending call would step on, without recording anything."""
        if call.actor != "agent":
            return None
        args = screening_arguments(call)
        for f in self._index.mines_for(call):
            if f.fatal and self._holds(f, call, args):
                return f
        return None

    def _holds(self, f: Minefield, call: ToolCall, args: FoldedArguments | None) -> bool:
        """Whether the call steps on ``f``; a refused call whose arguments cannot be read (too long, garbled) steps on
        every minefield of its tool that asks nothing of the arguments. A read-only tool's minefield is stepped on only
        by a call acting on an input the agent could not have had: some argument value it was never shown."""
        held = all_hold(f.args, args, self._grounding) if args is not None else (call.rejected is not None and not f.args)
        if not held or args is None:
            return held
        if f.any_args:
            passed = call.arguments or {}
            return any(passed.get(a) is not None for a in f.any_args)
        return not f.read_only or self._acts_on_unseen(call)

    def _acts_on_unseen(self, call: ToolCall) -> bool:
        """Whether some argument value of the call (a string or a number, at any depth) was never shown to the agent."""
        stack: list[Any] = [call.arguments or {}]
        seen = 0
        while stack and seen < _MAX_LEAVES:
            value = stack.pop()
            if isinstance(value, Mapping):
                stack.extend(value.values())
            elif isinstance(value, (list, tuple)):
                stack.extend(value)
            elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
                seen += 1
                if (not isinstance(value, str) or value.strip()) and not self._grounding.seen(value):
                    return True
        return bool(stack)  # too many values to check: treated as unseen

    def issued(self, call: ToolCall, next_t: int) -> Hit | None:
        """Screen an agent's call as it is issued (``next_t``: the action it will belong to).

        Returns the fatal minefield it would step on (nothing is kept then: the run stops), or ``None``
        after keeping what the call tells for ``take``.
        """
        args = call.arguments
        screen = screening_arguments(call)
        near: list[str] = []
        warnings: list[str] = []
        for f in self._index.mines_for(call):
            hit = self._holds(f, call, screen)
            if hit and f.fatal:
                return Hit(f, screen if screen is not None else FoldedArguments({}))
            if hit and call.rejected is None:  # a refused call did not run: no warning-level hazard happened
                warnings.append(f.id)
            elif not hit and f.fatal:
                near.append(f.id)
        catalog = self._index.catalog
        issues = tuple(catalog.check_arguments(call.tool, args)) if len(catalog) else ()
        if call.rejected is not None:
            issues = (ArgIssue("rejected", None, f"call refused before it ran: {call.rejected}"), *issues)
        sig = signature(call.tool, args) if args is not None else None
        repeated = self._signatures.get(sig) if sig is not None else None
        if sig is not None and sig not in self._signatures:
            self._signatures[sig] = next_t
        self._pending[call.call_id].append(PendingCall(issues, tuple(near), tuple(warnings), repeated, self._grounding.size,
                                                       self._user_words.size))
        return None

    def take(self, call_id: str) -> PendingCall:
        """What the call with this id told when it was issued (the oldest such call first)."""
        queue = self._pending.get(call_id)
        found = queue.popleft() if queue else PendingCall(grounding_upto=self._grounding.size, user_upto=self._user_words.size)
        if queue is not None and not queue:
            del self._pending[call_id]
        return found
