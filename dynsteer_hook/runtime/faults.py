"""Faulty steps of a run: every call or action a rule, a judge or a stop rule blamed.

The first error of a run is its earliest faulty step on both clocks, whether the stage it
belongs to passed or not: an agent that sends a malformed call and then the right one made
an error, and recovered from it. ``FaultLedger`` keeps the faults as they are found (the
first ``limit`` by raw clock, plus a count) and turns them into report records once the
run is over, when it is known which stage holds each step and whether the run recovered.

A message that asks the user for something is never a fault (``asks_user``): the task may
need what only the user knows.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dynsteer_hook.report import FaultRecord, FirstError, StageRecord

_ASKING = re.compile(
    r"\?|\b(please (provide|tell|share|confirm|specify|let me know)|could you|can you|would you|do you|"
    r"what is|which|let me know|i need (to know|your|the))\b",
    re.IGNORECASE,
)


def asks_user(text: str) -> bool:
    """Whether a message to the user asks for something (a question, or a request for information)."""
    return _ASKING.search(text[:2000]) is not None


@dataclass(frozen=True, slots=True)
class Fault:
    """One blamed call (``tool`` set) or action (``tool`` None), before the run's end tells its stage."""

    k: int
    t: int
    tool: str | None
    dimension: str
    cause: str
    detail: str
    settled: str | None = None  # the milestone the faulty call itself settled, if any

    @property
    def key(self) -> tuple[int, int]:
        return (self.k, self.t)


class FaultLedger:
    """The faults of a run, earliest first: at most one per call, and a blame of a whole action only where
    none of its calls has a fault of its own.

    Args:
        limit: How many faults are kept (the earliest ones); all are counted.
    """

    __slots__ = ("_calls", "_count", "_faults", "_limit", "_steps")

    def __init__(self, limit: int = 200) -> None:
        self._limit = limit
        self._faults: list[Fault] = []
        self._calls: set[int] = set()  # k of calls that have a fault
        self._steps: set[int] = set()  # t of actions that have a fault
        self._count = 0

    @property
    def count(self) -> int:
        """How many faults were found in all."""
        return self._count

    def has_step(self, t: int) -> bool:
        """Whether action ``t`` already has a fault."""
        return t in self._steps

    def add(self, fault: Fault) -> None:
        """Record a fault unless its call (or, for an action, the action) already has one."""
        if fault.tool is not None:
            if fault.k in self._calls:
                return
            self._calls.add(fault.k)
            whole = [f for f in self._faults if f.tool is None and f.t == fault.t]
            for f in whole:  # a call's own fault is more precise than a judge's blame of its whole action
                self._faults.remove(f)
                self._count -= 1
        elif fault.t in self._steps:
            return
        self._steps.add(fault.t)
        self._count += 1
        if len(self._faults) >= self._limit and fault.key >= self._faults[-1].key:
            return
        bisect.insort(self._faults, fault, key=lambda f: f.key)
        if len(self._faults) > self._limit:
            self._faults.pop()

    def records(self, stages: Sequence[StageRecord], settled_at: Mapping[str, int]) -> list[FaultRecord]:
        """The faults as report records, in order of k: each with its stage and whether the run recovered."""
        last_settled = max(settled_at.values(), default=0)
        out: list[FaultRecord] = []
        for f in self._faults:
            stage = f.settled or _holding_stage(f.t, stages)
            same_step = any(t == f.t and m != f.settled for m, t in settled_at.items()) if last_settled == f.t else False
            out.append(FaultRecord(
                k=f.k, t=f.t, tool=f.tool, dimension=f.dimension, cause=f.cause, stage=stage,
                recovered=last_settled > f.t or same_step, detail=f.detail,
            ))
        return out


def _holding_stage(t: int, stages: Sequence[StageRecord]) -> str | None:
    """The first stage that settled at ``t`` or judged ``t`` inside its window (not as its anchor)."""
    for st in stages:
        if st.t == t or (t > st.window.t_start and t in st.window.steps):
            return st.milestone
    return None


def first_error(records: Sequence[FaultRecord]) -> FirstError | None:
    """The earliest faulty step, as the report's ``first_error``."""
    if not records:
        return None
    f = records[0]
    return FirstError(k=f.k, t=f.t, stage=f.stage, dimension=f.dimension, detail=f.detail, cause=f.cause, recovered=f.recovered)
