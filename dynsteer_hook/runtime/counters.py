"""The run counters the stop rules read: low stages in a row, actions without frontier progress,
malformed calls in a row, and failures of one identical call.

A message that asks the user for something it has not asked before is progress: the task may
need what only the user knows. Settling a milestone resets the stagnation count and the
failures of identical calls.

The stop rules ask for the identical call that failed most often after every closed action, so
that question is answered from a heap kept as the counts change (a lazy max: an entry whose count
or start no longer matches its call is dropped when it reaches the top), not by a pass over every
failing call: a run of ten thousand actions, each a different failing call, costs linear time.
"""

from __future__ import annotations

import hashlib
import heapq
import re
from collections.abc import Sequence
from typing import Any

from dynsteer_hook.judges.steps import CallFacts
from dynsteer_hook.runtime.faults import asks_user

_GO_ON = re.compile(r"\b(?:keep (?:trying|going|at it)|try (?:again|it|once more)|go ahead|give it (?:a|another) "
                    r"(?:shot|try|go)|go for it|proceed|carry on|take your time|let me know when)\b", re.IGNORECASE)


class RunCounters:
    """Streaks and counts over the closed actions of one run."""

    __slots__ = ("_asked", "_failing", "_top", "low_streak", "stagnation", "stagnation_since", "structural", "structural_detail", "structural_since")

    def __init__(self) -> None:
        self.low_streak = 0
        self.stagnation = 0
        self.stagnation_since: tuple[int, int] | None = None
        self.structural = 0
        self.structural_since: tuple[int, int] | None = None
        self.structural_detail = ""
        self._failing: dict[bytes, tuple[int, tuple[int, int], str]] = {}  # identical failing call -> (failures, first, detail)
        self._top: list[tuple[int, int, bytes]] = []  # (-failures, first k, call) per count reached; stale entries stay
        self._asked: set[bytes] = set()

    def calls(self, facts: Sequence[CallFacts], t: int) -> None:
        """Count the malformed calls of an action in a row (a well-formed one ends the streak)."""
        for c in facts:
            if c.structural:
                self.structural += 1
                if self.structural_since is None:
                    self.structural_since = (c.k_call, t)
                self.structural_detail = c.issues[0].message if c.issues else (c.exception or "").splitlines()[-1][:160]
            else:
                self.structural, self.structural_since = 0, None

    def outcome(self, sig: bytes, ok: bool, k: int, t: int, detail: str) -> None:
        """Count a failure of an identical call (a success of it ends its count)."""
        if ok:
            self._failing.pop(sig, None)
            return
        n, since, _ = self._failing.get(sig, (0, (k, t), ""))
        self._failing[sig] = (n + 1, since, detail)
        heapq.heappush(self._top, (-(n + 1), since[0], sig))

    def stage(self, score: float, theta_fail: float) -> int:
        """Count a judged stage; the low-score streak after it."""
        self.low_streak = self.low_streak + 1 if score < theta_fail else 0
        return self.low_streak

    def action(self, *, settled: bool, message: str | None, calls: bool, had_ready: bool, k_start: int, t: int,
               idle: bool = True) -> None:
        """Count a closed action towards (or against) stagnation.

        ``idle``: the action's calls failed or repeated an earlier call. With nothing left to settle only such calls
        are idle work: a new look-up may be the agent answering a user who reopened the task ("that's not right").
        A message to the user ends the streaks of failing calls: the user may supply what the agent lacked.
        """
        if message is not None:
            self.structural, self.structural_since = 0, None
            self._failing.clear()
            self._top.clear()
        if settled:
            self.stagnation, self.stagnation_since = 0, None
            self._failing.clear()
            self._top.clear()
        elif message is not None and not calls and self._new_question(message):
            self.stagnation, self.stagnation_since = 0, None
        elif had_ready or (calls and idle):
            # With nothing left to settle only idle tool calls are idle work; talking to the user is not.
            self.stagnation += 1
            if self.stagnation_since is None:
                self.stagnation_since = (k_start, t)

    def user_said(self, text: str) -> None:
        """A user turn: one that asks the agent to go on ("keep trying", "go ahead") ends the stagnation count, since
        the user, not the rules, has judged the run worth continuing."""
        if _GO_ON.search(text):
            self.stagnation, self.stagnation_since = 0, None

    def _new_question(self, text: str) -> bool:
        """Whether a message asks the user for something it has not asked before (asking again is no progress)."""
        if not asks_user(text):
            return False
        key = hashlib.blake2b(" ".join(text.casefold().split()).encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if key in self._asked:
            return False
        self._asked.add(key)
        return True

    def stop_fields(self) -> dict[str, Any]:
        """The counters as ``StopContext`` fields (without the low-score streak, given per stage)."""
        fields: dict[str, Any] = {
            "stagnation": self.stagnation, "stagnation_since": self.stagnation_since, "structural_streak": self.structural,
            "structural_since": self.structural_since, "structural_detail": self.structural_detail,
        }
        worst = self._most_failed()
        if worst is not None:
            n, since, detail = worst
            fields |= {"repeated_failures": n, "repeated_failure_since": since, "repeated_failure_detail": detail}
        return fields

    def _most_failed(self) -> tuple[int, tuple[int, int], str] | None:
        """The identical call that failed most often (the earliest to start failing on ties), from the heap's top."""
        top = self._top
        while top:
            minus_n, k, sig = top[0]
            current = self._failing.get(sig)
            if current is not None and current[0] == -minus_n and current[1][0] == k:
                return current
            heapq.heappop(top)  # a count since raised, or a call that since succeeded or started over
        return None
