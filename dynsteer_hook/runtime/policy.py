"""Uncertainty-adaptive review: composite score (eq. 6), weights (eq. 7), tiers (eq. 8-9).

Pure functions of values; the evaluator owns the state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from dynsteer_hook.model.config import DIMENSIONS, EvaluatorConfig

CHEAP, STANDARD, EXPENSIVE = 1, 2, 3


def composite(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """S_t = sum_d w_d s_d over the dimensions scored (eq. 6), renormalised over them."""
    total = sum(weights[d] for d in scores)
    if total <= 0:
        return 0.0
    return sum(weights[d] * scores[d] for d in scores) / total


def update_weights(
    weights: Mapping[str, float],
    scores: Mapping[str, float],
    uncertainties: Mapping[str, float],
    alpha: float,
    beta: float,
    min_weight: float = 0.0,
) -> dict[str, float]:
    """Exponential-gradient weight update (eq. 7), then an optional floor.

    w_d <- w_d exp(alpha (1 - s_d) + beta u_d) / Z. Dimensions without a score this stage
    keep their relative weight (exponent 0). With ``min_weight`` > 0, weights under the floor
    are raised to it and the rest rescaled so the total stays one.
    """
    raw = {
        d: weights[d] * math.exp(alpha * (1.0 - scores[d]) + beta * uncertainties.get(d, 0.0)) if d in scores else weights[d]
        for d in weights
    }
    z = sum(raw.values())
    new = {d: v / z for d, v in raw.items()}
    if min_weight <= 0:
        return new
    # Water-filling: raise every weight under the floor to it and rescale the others,
    # repeating until no rescaled weight falls under the floor (at most one pass per dimension).
    floored: set[str] = set()
    while True:
        rest = sum(v for d, v in new.items() if d not in floored)
        budget = 1.0 - min_weight * len(floored)
        scaled = {d: (min_weight if d in floored else v * budget / rest) for d, v in new.items()}
        below = {d for d, v in scaled.items() if d not in floored and v < min_weight}
        if not below:
            return scaled
        floored |= below


def base_level(stage_score: float, uncertainties: Mapping[str, float], fatal_proximity: int, cfg: EvaluatorConfig) -> int:
    """Level_base for the next stage (eq. 8): cheap only for a confident, clean pass."""
    max_u = max(uncertainties.values(), default=0.0)
    if stage_score >= cfg.theta_pass + cfg.delta_margin and max_u <= cfg.theta_low_u and fatal_proximity == 0:
        return CHEAP
    return STANDARD


def next_levels(
    levels: Mapping[str, int],
    scores: Mapping[str, float],
    uncertainties: Mapping[str, float],
    base: int,
    cfg: EvaluatorConfig,
) -> dict[str, int]:
    """Per-dimension tier for the next stage (eq. 9).

    A dimension under theta_fail jumps to the expensive tier; one under theta_warn or with
    uncertainty at or above theta_high_u climbs one tier; the rest follow Level_base.
    Dimensions not scored this stage keep their level.
    """
    out: dict[str, int] = {}
    for d in DIMENSIONS:
        if d not in scores:
            out[d] = levels[d]
        elif scores[d] < cfg.theta_fail:
            out[d] = EXPENSIVE
        elif scores[d] < cfg.theta_warn or uncertainties.get(d, 0.0) >= cfg.theta_high_u:
            out[d] = min(EXPENSIVE, levels[d] + 1)
        else:
            out[d] = base
    return out
