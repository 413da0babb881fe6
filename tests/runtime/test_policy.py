"""Uncertainty-adaptive review: eq. 6 (composite), eq. 7 (weights), eq. 8 (base tier), eq. 9 (per-dimension tier).

Expected values are computed by hand in the comments, not by the implementation.
"""

from __future__ import annotations

import pytest

from dynsteer_hook.model.config import DIMENSIONS, EvaluatorConfig
from dynsteer_hook.runtime.policy import CHEAP, EXPENSIVE, STANDARD, base_level, composite, next_levels, update_weights

C, E, S, K = DIMENSIONS  # correctness, efficiency, safety, tool_compliance
UNIFORM = {C: 0.25, E: 0.25, S: 0.25, K: 0.25}
CFG = EvaluatorConfig()  # theta_pass 0.7, delta_margin 0.05, theta_low_u 0.2, theta_high_u 0.5, theta_warn 0.6, theta_fail 0.3


def approx(d: dict[str, float]) -> dict[str, object]:
    return {k: pytest.approx(v, abs=1e-6) for k, v in d.items()}


# ---- eq. 6 ----------------------------------------------------------------------------------


def test_composite_eq6() -> None:
    """S_t is the weighted sum of the dimension scores."""
    # 0.4*1.0 + 0.3*0.5 + 0.2*0.0 + 0.1*0.8 = 0.4 + 0.15 + 0 + 0.08 = 0.63
    w = {C: 0.4, E: 0.3, S: 0.2, K: 0.1}
    assert composite({C: 1.0, E: 0.5, S: 0.0, K: 0.8}, w) == pytest.approx(0.63, abs=1e-12)


def test_composite_renormalises_over_scored_dimensions() -> None:
    """When only some dimensions are scored, their weights are renormalised to sum to one."""
    # (0.4*1.0 + 0.3*0.5) / (0.4 + 0.3) = 0.55 / 0.7 = 0.7857142857
    w = {C: 0.4, E: 0.3, S: 0.2, K: 0.1}
    assert composite({C: 1.0, E: 0.5}, w) == pytest.approx(0.7857142857, abs=1e-9)


def test_composite_with_no_weight_is_zero() -> None:
    """Zero total weight gives a zero score rather than a division error."""
    assert composite({C: 1.0}, {C: 0.0, E: 1.0}) == 0.0


# ---- eq. 7 ----------------------------------------------------------------------------------


def test_weight_update_eq7_uniform() -> None:
    """Exponential-gradient update from uniform weights, alpha=1, beta=0.5."""
    # exponents alpha(1-s) + beta u: C 1*0 + .5*0 = 0; E 1*.5 + .5*.2 = .6; S 0; K 1*1 + .5*.4 = 1.2
    # e^0 = 1, e^.6 = 1.8221188, e^1.2 = 3.3201169; Z = 1 + 1.8221188 + 1 + 3.3201169 = 7.1422357
    # w = (1, 1.8221188, 1, 3.3201169) / 7.1422357 = (0.1400122, 0.2551188, 0.1400122, 0.4648568)
    new = update_weights(UNIFORM, {C: 1.0, E: 0.5, S: 1.0, K: 0.0}, {C: 0.0, E: 0.2, S: 0.0, K: 0.4}, alpha=1.0, beta=0.5)
    assert new == approx({C: 0.1400122, E: 0.2551188, S: 0.1400122, K: 0.4648568})


def test_weight_update_eq7_nonuniform() -> None:
    """The update multiplies the previous weights before normalising (alpha=2, beta=1)."""
    # exponents: C 2*.5 = 1; E 2*0 + 1*.5 = .5; S 0; K 2*1 = 2
    # raw: .4e = 1.0873127, .3e^.5 = .4946164, .2, .1e^2 = .7389056; Z = 2.5208347
    # w = (0.4313304, 0.1962113, 0.0793388, 0.2931194)
    w = {C: 0.4, E: 0.3, S: 0.2, K: 0.1}
    new = update_weights(w, {C: 0.5, E: 1.0, S: 1.0, K: 0.0}, {C: 0.0, E: 0.5, S: 0.0, K: 0.0}, alpha=2.0, beta=1.0)
    assert new == approx({C: 0.4313304, E: 0.1962113, S: 0.0793388, K: 0.2931194})
    assert sum(new.values()) == pytest.approx(1.0)


def test_weight_update_with_zero_rates_keeps_weights() -> None:
    """alpha = beta = 0 leaves the (normalised) weights unchanged."""
    w = {C: 0.4, E: 0.3, S: 0.2, K: 0.1}
    assert update_weights(w, {d: 0.0 for d in w}, {d: 1.0 for d in w}, 0.0, 0.0) == approx(w)


def test_unscored_dimensions_keep_their_relative_weight() -> None:
    """A dimension without a score this stage gets exponent 0."""
    # raw: C .25e^(1*(1-0)) = .25e, E .25e^0 = .25, S .25, K .25; Z = .25(e + 3)
    # C = e/(e+3) = 2.7182818/5.7182818 = 0.4753669; others 1/5.7182818 = 0.1748777
    new = update_weights(UNIFORM, {C: 0.0, E: 1.0}, {}, alpha=1.0, beta=0.0)
    assert new == approx({C: 0.4753669, E: 0.1748777, S: 0.1748777, K: 0.1748777})


def test_weight_floor_raises_starved_dimensions() -> None:
    """With min_weight, a weight under the floor is raised to it and the rest rescaled to sum to one."""
    # exponents 5, 5, 5, 0: K = 1/(3e^5 + 1) = 1/446.2395 = 0.0022409 < 0.02 -> K = 0.02;
    # the other three are equal, so each gets (1 - 0.02)/3 = 0.3266667.
    new = update_weights(UNIFORM, {C: 0.0, E: 0.0, S: 0.0, K: 1.0}, {}, alpha=5.0, beta=0.0, min_weight=0.02)
    assert new == approx({C: 0.3266667, E: 0.3266667, S: 0.3266667, K: 0.02})


def test_weight_floor_is_inactive_when_nothing_is_below_it() -> None:
    """The floor changes nothing when every weight is already above it."""
    scores = {C: 1.0, E: 0.5, S: 1.0, K: 0.0}
    assert update_weights(UNIFORM, scores, {}, 1.0, 0.0, min_weight=0.02) == update_weights(UNIFORM, scores, {}, 1.0, 0.0)


# ---- eq. 8 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stage", "max_u", "proximity", "level"),
    [
        (0.75, 0.2, 0, CHEAP),  # S = theta_pass + delta = 0.7 + 0.05 and u = theta_low_u: both bounds inclusive
        (1.0, 0.0, 0, CHEAP),
        (0.74, 0.0, 0, STANDARD),  # 0.74 < 0.75
        (1.0, 0.21, 0, STANDARD),  # 0.21 > 0.2
        (1.0, 0.0, 1, STANDARD),  # a fatal near miss in the window
    ],
)
def test_base_level_eq8(stage: float, max_u: float, proximity: int, level: int) -> None:
    """Level_base is cheap only for a confident pass above theta_pass + delta with no fatal proximity."""
    uncertainties = {C: 0.0, E: max_u, S: 0.0, K: 0.0}
    assert base_level(stage, uncertainties, proximity, CFG) == level


# ---- eq. 9 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "u", "level", "base", "expected"),
    [
        (0.29, 0.0, CHEAP, CHEAP, EXPENSIVE),  # s < theta_fail = 0.3: straight to J_exp
        (0.0, 0.0, STANDARD, CHEAP, EXPENSIVE),
        (0.3, 0.0, CHEAP, CHEAP, STANDARD),  # 0.3 is not < 0.3, but < theta_warn = 0.6: one tier up
        (0.59, 0.0, STANDARD, CHEAP, EXPENSIVE),  # one tier up from standard
        (0.59, 0.0, EXPENSIVE, CHEAP, EXPENSIVE),  # capped at J_exp
        (0.9, 0.5, CHEAP, CHEAP, STANDARD),  # u >= theta_high_u = 0.5: one tier up
        (0.6, 0.49, EXPENSIVE, CHEAP, CHEAP),  # s = theta_warn, u < theta_high_u: back to Level_base
        (0.9, 0.0, CHEAP, STANDARD, STANDARD),  # follows Level_base upwards too
    ],
)
def test_next_level_eq9(score: float, u: float, level: int, base: int, expected: int) -> None:
    """Each branch of eq. 9 for one dimension."""
    levels = {d: CHEAP for d in DIMENSIONS} | {C: level}
    out = next_levels(levels, {C: score}, {C: u}, base, CFG)
    assert out[C] == expected


def test_unscored_dimensions_keep_their_level() -> None:
    """Dimensions not scored this stage keep their tier; the scored ones follow eq. 9."""
    levels = {C: CHEAP, E: STANDARD, S: EXPENSIVE, K: CHEAP}
    out = next_levels(levels, {C: 0.1}, {C: 0.0}, CHEAP, CFG)
    assert out == {C: EXPENSIVE, E: STANDARD, S: EXPENSIVE, K: CHEAP}
