"""What the built-in stop rules count with: failures of identical calls, questions asked, a user asking to go on.

The stop rules ask for the identical call that failed most often after every closed action, so
that question is answered from a heap kept as the counts change (a lazy max: an entry whose count
or start no longer matches its call is dropped when it reaches the top), not by a pass over every
failing call: a run of ten thousand actions, each a different failing call, costs linear time.
"""

from __future__ import annotations

import hashlib
import heapq
import re

from dynsteer_hook.runtime.faults import asks_user

_GO_ON = re.compile(r"\b(?:keep (?:trying|going|at it)|try (?:again|it|once more)|go ahead|give it (?:a|another) "
                    r"(?:shot|try|go)|go for it|proceed|carry on|take your time|let me know when)\b", re.IGNORECASE)


def asks_to_go_on(text: str) -> bool:
    """Whether a user turn asks the agent to go on ("keep trying", "go ahead")."""
    return _GO_ON.search(text) is not None


class FailingCalls:
    """Failures of each identical call (a success of it ends its count), and the call that failed most often."""

    __slots__ = ("_failing", "_top")

    def __init__(self) -> None:
        self._failing: dict[bytes, tuple[int, tuple[int, int], str]] = {}  # identical failing call -> (failures, first, detail)
        self._top: list[tuple[int, int, bytes]] = []  # (-failures, first k, call) per count reached; stale entries stay

    def outcome(self, sig: bytes, ok: bool, k: int, t: int, detail: str) -> None:
        """Count a failure of an identical call (a success of it ends its count)."""
        if ok:
            self._failing.pop(sig, None)
            return
        n, since, _ = self._failing.get(sig, (0, (k, t), ""))
        self._failing[sig] = (n + 1, since, detail)
        heapq.heappush(self._top, (-(n + 1), since[0], sig))

    def clear(self) -> None:
        """Forget every count (progress was made, or the agent spoke to the user)."""
        self._failing.clear()
        self._top.clear()

    def most_failed(self) -> tuple[int, tuple[int, int], str] | None:
        """The identical call that failed most often (the earliest to start failing on ties): failures, first, detail."""
        top = self._top
        while top:
            minus_n, k, sig = top[0]
            current = self._failing.get(sig)
            if current is not None and current[0] == -minus_n and current[1][0] == k:
                return current
            heapq.heappop(top)  # a count since raised, or a call that since succeeded or started over
        return None


class Questions:
    """The questions a run's agent has asked the user (asking the same again is no progress)."""

    __slots__ = ("_asked",)

    def __init__(self) -> None:
        self._asked: set[bytes] = set()

    def new(self, text: str) -> bool:
        """Whether a message asks the user for something it has not asked before (and note it)."""
        if not asks_user(text):
            return False
        key = hashlib.blake2b(" ".join(text.casefold().split()).encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if key in self._asked:
            return False
        self._asked.add(key)
        return True
