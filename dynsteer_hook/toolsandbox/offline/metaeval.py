"""Meta-evaluation of an evaluator over several agents (paper §4.1, eq. 10, Tables 1 and 3).

Pure functions over scores: no files, no ToolSandbox. An evaluator separates agents well when
their mean scores differ by more than a margin and the paired differences are significant;
the Discriminability Score

    DS(eps) = (sigma_pop / mu) * N_sig(eps) / C(M, 2)

multiplies the coefficient of variation of the agents' mean scores (it penalises a metric
that compresses everyone to the same value) by the share of agent pairs it separates. Here a
pair counts in ``N_sig`` when its mean scores differ by more than ``eps`` *and* a paired
Wilcoxon signed-rank test over the tasks both agents ran rejects equality at ``alpha``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from statistics import fmean, pstdev
from typing import Any

PairKey = tuple[str, int]
"""A scored trajectory's identity shared across agents: (task, repeat)."""


@dataclass(frozen=True, slots=True)
class PairTest:
    """The comparison of two agents under one evaluator."""

    a: str
    b: str
    mean_a: float
    mean_b: float
    paired: int
    p_value: float | None
    beyond_margin: bool
    significant: bool


@dataclass(frozen=True, slots=True)
class Discriminability:
    """Eq. 10 for one evaluator over M agents."""

    mu: float
    sigma_pop: float
    cv: float
    pairs: int
    beyond_margin: int
    significant: int
    ds: float


def wilcoxon_p(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Two-sided p-value of the paired Wilcoxon signed-rank test (``None`` when every difference is zero or n < 1)."""
    diffs = [a - b for a, b in zip(x, y, strict=True)]
    if not diffs or all(abs(d) < 1e-12 for d in diffs):
        return None
    from scipy.stats import wilcoxon

    # scipy warns when ties or zeros make it switch to the normal approximation: a note on its method, not for the console.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(wilcoxon(x, y, zero_method="wilcox", alternative="two-sided").pvalue)


def compare_pair(a: str, b: str, scores: Mapping[str, Mapping[PairKey, float]], eps: float, alpha: float) -> PairTest:
    """Mean scores, the paired test over the trajectories both agents have, and whether the pair is separated."""
    sa, sb = scores[a], scores[b]
    keys = sorted(set(sa) & set(sb))
    mean_a, mean_b = fmean(sa.values()), fmean(sb.values())
    p = wilcoxon_p([sa[k] for k in keys], [sb[k] for k in keys]) if keys else None
    beyond = abs(mean_a - mean_b) > eps
    return PairTest(a, b, mean_a, mean_b, len(keys), p, beyond, beyond and p is not None and p < alpha)


def discriminability(agent_means: Mapping[str, float], tests: Sequence[PairTest]) -> Discriminability:
    """DS(eps) of eq. 10 from the agents' mean scores and their pair tests."""
    means = list(agent_means.values())
    mu = fmean(means) if means else 0.0
    sigma = pstdev(means) if len(means) > 1 else 0.0
    cv = sigma / mu if mu else 0.0
    pairs = math.comb(len(means), 2)
    sig = sum(1 for t in tests if t.significant)
    return Discriminability(mu, sigma, cv, pairs, sum(1 for t in tests if t.beyond_margin), sig, cv * sig / pairs if pairs else 0.0)


def all_pairs(scores: Mapping[str, Mapping[PairKey, float]], eps: float, alpha: float) -> list[PairTest]:
    """Every agent pair, in name order."""
    return [compare_pair(a, b, scores, eps, alpha) for a, b in combinations(sorted(scores), 2)]


def saturation(values: Sequence[float]) -> float:
    """Share of exact 1.0 scores (a saturated metric cannot rank the agents that reach it)."""
    return sum(1 for v in values if v >= 1.0 - 1e-12) / len(values) if values else 0.0


def repeat_spread(per_repeat_means: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation over repeats (std 0 with one repeat)."""
    if not per_repeat_means:
        return 0.0, 0.0
    mean = fmean(per_repeat_means)
    if len(per_repeat_means) < 2:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in per_repeat_means) / (len(per_repeat_means) - 1)
    return mean, math.sqrt(var)


def kendall_tau(first: Mapping[str, float], second: Mapping[str, float]) -> float | None:
    """Kendall's tau-b between two rankings of the same agents (``None`` with fewer than two)."""
    names = sorted(set(first) & set(second))
    if len(names) < 2:
        return None
    from scipy.stats import kendalltau

    tau = kendalltau([first[n] for n in names], [second[n] for n in names]).statistic
    return None if tau is None or math.isnan(tau) else float(tau)


def stop_table(stops: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Paper Table 3: per stop criterion, halted runs, unique tasks, mean stop and saved progress.

    Args:
        stops: One mapping per halted run with ``reason``, ``task``, ``stop_progress``, ``saved_progress``.
    """
    out: dict[str, dict[str, Any]] = {}
    for reason in sorted({s["reason"] for s in stops}):
        rs = [s for s in stops if s["reason"] == reason]
        out[reason] = {
            "halted_runs": len(rs),
            "unique_tasks": len({s["task"] for s in rs}),
            "mean_stop_progress": round(fmean(s["stop_progress"] for s in rs), 6),
            "mean_saved_progress": round(fmean(s["saved_progress"] for s in rs), 6),
        }
    if stops:
        out["all"] = {
            "halted_runs": len(stops),
            "unique_tasks": len({s["task"] for s in stops}),
            "mean_stop_progress": round(fmean(s["stop_progress"] for s in stops), 6),
            "mean_saved_progress": round(fmean(s["saved_progress"] for s in stops), 6),
        }
    return out
