"""The paired Wilcoxon signed-rank test in plain Python, for commands that must answer fast.

``metaeval.wilcoxon_p`` asks scipy, whose ``scipy.stats`` takes 0.6-1 s to import: most of the two seconds
``dynsteer diff`` may take on two 1,032-scenario runs. This is the same test, computed as scipy 1.13 computes
``wilcoxon(x, y, zero_method="wilcox", alternative="two-sided")`` (no continuity correction; zero differences
dropped; the exact null distribution for at most 50 pairs without zeros, the normal approximation with the tie
correction otherwise), and ``tests/toolsandbox/test_signed_rank.py`` holds it to scipy's p-values. Pure: numbers
in, a number out.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

__all__ = ["EXACT_UP_TO", "signed_rank_p"]

EXACT_UP_TO = 50
"""Pairs up to which the p-value comes from the exact distribution (when no difference is zero), as scipy's ``auto``."""


@functools.cache
def _null_counts(n: int) -> tuple[int, ...]:
    """How many of the 2**n sign patterns give each rank sum 0 .. n(n+1)/2 (the exact null distribution, as counts)."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    top = 0
    for rank in range(1, n + 1):
        top += rank
        for total in range(top, rank - 1, -1):
            counts[total] += counts[total - rank]
    return tuple(counts)


def _average_ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Ranks from 1 with ties given their average rank, and the size of every group of ties."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    groups: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        groups.append(j - i + 1)
        i = j + 1
    return ranks, groups


def signed_rank_p(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Two-sided p-value of the paired Wilcoxon signed-rank test of ``x`` against ``y`` (pairs in the same order).

    ``None`` when there is nothing to test: no pairs, or every difference is zero (as ``metaeval.wilcoxon_p``).
    """
    diffs = [a - b for a, b in zip(x, y, strict=True)]
    nonzero = [d for d in diffs if d != 0]
    if not diffs or all(abs(d) < 1e-12 for d in diffs) or not nonzero:
        return None
    ranks, ties = _average_ranks([abs(d) for d in nonzero])
    r_plus = sum(r for r, d in zip(ranks, nonzero, strict=True) if d > 0)
    n = len(nonzero)
    if len(diffs) <= EXACT_UP_TO and n == len(diffs):
        counts = _null_counts(n)
        k = int(r_plus)  # scipy reads the statistic as an integer (a tie's half rank is dropped)
        below = sum(counts[: k + 1])
        above = sum(counts[k:])
        return min(1.0, 2 * min(below, above) / (1 << n))
    mean = n * (n + 1) / 4
    var = (n * (n + 1) * (2 * n + 1) - sum(t**3 - t for t in ties) / 2) / 24
    if var <= 0:
        return None
    z = (r_plus - mean) / math.sqrt(var)
    return min(1.0, math.erfc(abs(z) / math.sqrt(2)))
