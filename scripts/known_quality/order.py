"""An order of the hidden milestones that ToolSandbox's matcher and guardrails both accept.

ToolSandbox maps milestones to snapshots in an order consistent with its milestone DAG, and
each milestone carries guardrails: tables that must be the same at its snapshot as at the
snapshot of a predecessor or reference (``-1`` is the start). A table changed by another
milestone placed between the two breaks that guardrail, and with it the milestone. Among
the orders that respect the DAG and put every milestone after the ones whose results it
reads, the first one (by milestone index) that breaks no guardrail is taken.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from .hidden import HiddenMilestone, HiddenTask

# Milestone DAGs are small (at most 6 nodes in ToolSandbox); enumeration stays cheap.
MAX_ORDERS = 50_000


def _orders(nodes: Sequence[int], before: dict[int, set[int]]) -> Iterator[list[int]]:
    """Topological orders, smallest index first at every choice."""
    placed: list[int] = []
    left = set(nodes)

    def walk() -> Iterator[list[int]]:
        if not left:
            yield list(placed)
            return
        for n in sorted(left):
            if before[n] <= set(placed):
                placed.append(n)
                left.discard(n)
                yield from walk()
                left.add(n)
                placed.pop()

    yield from walk()


def breaks_guardrail(order: Sequence[int], by_index: dict[int, HiddenMilestone]) -> str | None:
    """Why ``order`` breaks a guardrail (``None`` when it keeps them all)."""
    pos = {m: p for p, m in enumerate(order)}
    for i in order:
        for ref, table in by_index[i].guards:
            start = pos.get(ref, -1) if ref >= 0 else -1
            for k in order[start + 1 : pos[i]]:
                if k != ref and table in by_index[k].changes:
                    return f"milestone {k} changes {table} between milestones {ref} and {i}"
    return None


def plan_order(task: HiddenTask) -> list[int] | None:
    """The milestone order to solve in, or ``None`` when none keeps every guardrail."""
    by_index = {m.index: m for m in task.milestones}
    before: dict[int, set[int]] = {i: set() for i in by_index}
    for u, v in task.edges:
        if u in by_index and v in by_index:
            before[v].add(u)
    for m in task.milestones:
        before[m.index] |= {r for r in m.refs if r in by_index}
    for n, order in enumerate(_orders(sorted(by_index), before)):
        if n >= MAX_ORDERS:
            break
        if breaks_guardrail(order, by_index) is None:
            return order
    return None
