"""Matching and windows: which milestone a call settles on the ready frontier, what has settled
and when, the bindings a settling call carries, and the steps of the run with their windows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dynsteer_hook.judges.base import BindingCheck
from dynsteer_hook.judges.steps import CallFacts
from dynsteer_hook.model.blueprint import Milestone
from dynsteer_hook.model.events import StateChange
from dynsteer_hook.model.graph import FrontierTracker
from dynsteer_hook.model.predicates import all_hold, predicate_holds, values_equal
from dynsteer_hook.runtime.grounding import TextGrounding
from dynsteer_hook.runtime.index import BlueprintIndex
from dynsteer_hook.runtime.matching import MilestoneIndex
from dynsteer_hook.runtime.windows import StepLog


def _extract(result: Any, path: str) -> list[Any]:
    """Values at a dotted path of a result; lists are searched element-wise."""
    values = [result]
    for part in [p for p in path.split(".") if p]:
        nxt: list[Any] = []
        for v in values:
            if isinstance(v, (list, tuple)):
                if part.isdigit() and int(part) < len(v):
                    nxt.append(v[int(part)])
                else:
                    nxt.extend(x[part] for x in v if isinstance(x, Mapping) and part in x)
            elif isinstance(v, Mapping) and part in v:
                nxt.append(v[part])
        values = nxt
    flat: list[Any] = []
    for v in values:
        flat.extend(v if isinstance(v, (list, tuple)) else [v])
    return flat


def _state_holds(m: Milestone, changes: Sequence[StateChange]) -> bool:
    sp = m.state
    if sp is None:
        return True
    for c in changes:
        if c.namespace.casefold() != sp.namespace.casefold():
            continue
        rows: list[Mapping[str, Any]] = []
        if sp.change in ("added", "any"):
            rows += list(c.added)
        if sp.change in ("removed", "any"):
            rows += list(c.removed)
        if sp.change in ("updated", "any"):
            rows += [after for _, after in c.updated]
        if rows and (not sp.where or any(all_hold(sp.where, r) for r in rows)):
            return True
    return False


class Settlement:
    """Frontier settlement of one run, and its step log.

    Args:
        index: The blueprint's look-ups.
        grounding: What the agent has been shown (read, not copied).
    """

    __slots__ = ("_grounding", "_index", "_settled_call", "_unsettled", "log", "settled_at", "settled_order", "tracker")

    def __init__(self, index: BlueprintIndex, grounding: TextGrounding) -> None:
        self._index = index
        self._grounding = grounding
        self.tracker = FrontierTracker.for_blueprint(index.blueprint)
        self._unsettled = MilestoneIndex(index.blueprint.milestones)
        self.settled_at: dict[str, int] = {}
        self.settled_order: list[str] = []
        self._settled_call: dict[str, CallFacts] = {}
        self.log = StepLog(index.dominators, index.tool_owners, self.settled_at)

    def match(self, tool: str, canonical: str | None, args: Mapping[str, Any], changes: Sequence[StateChange],
              taken: set[str]) -> tuple[str | None, list[str]]:
        """The frontier milestone this call settles (most specific first) and the unready ones it would have."""
        pool = self._unsettled.candidates(tool, args)
        if canonical and canonical != tool:
            pool += self._unsettled.candidates(canonical, args)
        best: tuple[int, int, str] | None = None
        unready: list[str] = []
        for m in pool:
            if m.id in self.settled_at:
                continue
            if not all(predicate_holds(p, args, self._grounding) for p in m.args) or not _state_holds(m, changes):
                continue
            if m.id in taken or not self.tracker.is_ready(m.id):
                unready.append(m.id)
                continue
            rank = (-(len(m.args) + (1 if m.state else 0)), self._index.order[m.id], m.id)
            if best is None or rank < best:
                best = rank
        return (best[2] if best else None), unready

    def settle(self, milestones: Sequence[str], t: int, facts: Sequence[CallFacts]) -> None:
        """Record that ``milestones`` settled at closed action ``t`` (by the calls in ``facts`` that say so)."""
        for m in milestones:
            self.tracker.settle(m)
            self.settled_at[m] = t
            self.settled_order.append(m)
            self._unsettled.discard(m)
            self.log.settled(m, t)
            for c in facts:
                if c.settled == m:
                    self._settled_call[m] = c

    def binding_checks(self, m: str, call: CallFacts | None, upto: int) -> tuple[BindingCheck, ...]:
        """Whether each binding ``m`` consumes came from its producer's result, or was seen elsewhere."""
        checks: list[BindingCheck] = []
        for b in self._index.consumed.get(m, []):
            value = (call.arguments or {}).get(b.arg) if call else None
            producer = self._settled_call.get(b.producer)
            produced = _extract(producer.result, b.path) if producer is not None else []
            from_producer = value is not None and any(values_equal(value, p) for p in produced)
            checks.append(BindingCheck(b.name, b.arg, value, from_producer, self._grounding.seen(value, upto)))
        return tuple(checks)

    def unsettled(self) -> list[str]:
        """Milestones not settled, in blueprint order."""
        return [m.id for m in self._index.blueprint.milestones if m.id not in self.settled_at]
