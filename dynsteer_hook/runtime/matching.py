"""Which unsettled milestones a tool call could settle, found without scanning every milestone of its tool.

Compiled blueprints put many milestones on one tool (every message sent, every contact
looked up), told apart by an exact argument value. A call is checked against all of them
on every closed action, so a linear scan makes a long run quadratic. This index files
each milestone under the first ``eq`` predicate whose operand is non-numeric text: such a
predicate holds exactly when the argument is text equal to the operand after trimming and
case folding (``predicates.values_equal``), so a call can only settle the milestones filed
under its own argument's folded text, plus the few with no such predicate. Candidates
still go through every predicate; the index only skips milestones that would fail.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from dynsteer_hook.model.blueprint import Milestone
from dynsteer_hook.model.predicates import numeric_value


def _key(m: Milestone) -> tuple[str, str] | None:
    for p in m.args:
        if p.op == "eq" and isinstance(p.value, str) and numeric_value(p.value) is None:
            return p.arg, p.value.strip().casefold()
    return None


class MilestoneIndex:
    """Unsettled milestones by tool, each filed under one exact-text predicate where it has one."""

    __slots__ = ("_keyed", "_loose", "_order", "_where")

    def __init__(self, milestones: Iterable[Milestone]) -> None:
        self._order: dict[str, int] = {}
        self._keyed: dict[str, dict[str, dict[str, dict[str, Milestone]]]] = defaultdict(lambda: defaultdict(dict))
        self._loose: dict[str, dict[str, Milestone]] = defaultdict(dict)
        self._where: dict[str, dict[str, Milestone]] = {}
        for i, m in enumerate(milestones):
            self._order[m.id] = i
            key = _key(m)
            if key is None:
                bucket = self._loose[m.tool]
            else:
                bucket = self._keyed[m.tool][key[0]].setdefault(key[1], {})
            bucket[m.id] = m
            self._where[m.id] = bucket

    def candidates(self, tool: str, args: Mapping[str, Any]) -> list[Milestone]:
        """Unsettled milestones of ``tool`` that ``args`` might satisfy, in blueprint order."""
        found = list(self._loose.get(tool, {}).values())
        for arg, by_value in self._keyed.get(tool, {}).items():
            value = args.get(arg)
            if isinstance(value, str):
                found += by_value.get(value.strip().casefold(), {}).values()
        found.sort(key=lambda m: self._order[m.id])
        return found

    def discard(self, milestone: str) -> None:
        """Forget a settled milestone."""
        bucket = self._where.pop(milestone, None)
        if bucket is not None:
            del bucket[milestone]
