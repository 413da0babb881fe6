"""Evaluator configuration: documented defaults, range checks with one-sentence errors, overrides."""

from __future__ import annotations

import argparse
import re

import pytest

from dynsteer_hook.flags import add_config_flags, config_from_args, threshold_fields
from dynsteer_hook.model.config import DIMENSIONS, EvaluatorConfig
from dynsteer_hook.model.errors import ConfigError


def test_defaults_are_valid_and_uniform() -> None:
    """The default config builds and starts every dimension at weight 1/4."""
    assert EvaluatorConfig().normalized_initial_weights() == {d: 0.25 for d in DIMENSIONS}


def test_partial_initial_weights_are_completed_and_normalised() -> None:
    """Unlisted dimensions get weight 1 before normalising: {correctness: 2} -> 2/5, 1/5, 1/5, 1/5."""
    w = EvaluatorConfig(initial_weights={"correctness": 2.0}).normalized_initial_weights()
    assert w == pytest.approx({"correctness": 0.4, "efficiency": 0.2, "safety": 0.2, "tool_compliance": 0.2})


@pytest.mark.parametrize(
    ("over", "fragment"),
    [
        ({"theta_pass": 1.5}, "theta_pass=1.5 is not accepted (input should be less than or equal to 1)"),
        ({"theta_fail": -0.1}, "theta_fail=-0.1 is not accepted (input should be greater than or equal to 0)"),
        ({"theta_fail": 0.7, "theta_warn": 0.6}, "theta_fail must not exceed theta_warn"),
        ({"theta_low_u": 0.6, "theta_high_u": 0.5}, "the low bound must not exceed the high one"),
        ({"alpha": -1.0}, "alpha=-1.0 is not accepted (input should be greater than or equal to 0)"),
        ({"n_stag": 0}, "n_stag=0 is not accepted (input should be greater than or equal to 1)"),
        ({"structural_patience": 0}, "structural_patience=0 is not accepted (input should be greater than or equal to 1)"),
        ({"max_tier": 4}, "max_tier=4 is not accepted (input should be less than or equal to 3)"),
        ({"initial_weights": {"speed": 1.0}}, "initial_weights={'speed': 1.0} is not accepted (input should be 'correctness'"),
        ({"initial_weights": {"safety": 0.0}}, "initial_weights={'safety': 0.0} is not accepted (input should be greater than 0)"),
        ({"min_weight": 0.25}, "min_weight=0.25 is not accepted (input should be less than 0.25)"),
        ({"theta_pass": float("nan")}, "theta_pass=nan is not accepted"),
        ({"alpha": 1e308}, "alpha=1e+308 is not accepted (input should be less than or equal to 100)"),
        ({"beta": float("inf")}, "beta=inf is not accepted (input should be a finite number)"),
        ({"initial_weights": {"safety": 1e300}}, "initial_weights={'safety': 1e+300} is not accepted (input should be less than or equal to 1000000)"),
    ],
)
def test_invalid_values_are_rejected(over: dict[str, object], fragment: str) -> None:
    """Each out-of-range or inconsistent value is a ConfigError with a one-line message naming it."""
    with pytest.raises(ConfigError) as exc:
        EvaluatorConfig(**over)  # type: ignore[arg-type]
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_overrides_copy_and_validate() -> None:
    """with_overrides returns a changed copy, validates it, and rejects unknown names."""
    base = EvaluatorConfig()
    changed = base.with_overrides(n_stag=3)
    assert (changed.n_stag, base.n_stag) == (3, 8)
    with pytest.raises(ConfigError, match=r"unknown config field\(s\) \['nope'\]"):
        base.with_overrides(nope=1)
    with pytest.raises(ConfigError, match="theta_pass"):
        base.with_overrides(theta_pass=2.0)


@pytest.mark.parametrize(
    ("over", "fragment"),
    [
        ({"n_stag": "abc"}, "n_stag='abc' is not accepted (input should be a valid integer); its default is 8"),
        ({"n_stag": 2.5}, "n_stag=2.5 is not accepted (input should be a valid integer)"),
        ({"n_stag": True}, "n_stag=True is not accepted (input should be a valid integer)"),
        ({"theta_fail": "low"}, "theta_fail='low' is not accepted (input should be a valid number); its default is 0.3"),
        ({"initial_weights": [1, 2]}, "initial_weights=[1, 2] is not accepted (input should be a valid dictionary)"),
    ],
)
def test_overrides_of_the_wrong_type_are_config_errors(over: dict[str, object], fragment: str) -> None:
    """Overrides from the command line with a value of the wrong type are a ConfigError, not a TypeError."""
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        EvaluatorConfig().with_overrides(**over)


def test_integer_overrides_for_float_fields_are_fine() -> None:
    """An integer where a float is expected (e.g. --set alpha=2) is accepted."""
    assert EvaluatorConfig().with_overrides(alpha=2).alpha == 2


def test_non_numeric_initial_weight_is_a_config_error() -> None:
    """A weight that is not a number is rejected like a non-positive one."""
    with pytest.raises(ConfigError, match=re.escape("initial_weights={'safety': 'a'} is not accepted (input should be a valid number)")):
        EvaluatorConfig(initial_weights={"safety": "a"})


def _changed(name: str) -> float | int:
    default = EvaluatorConfig.model_fields[name].default
    return default + 1 if isinstance(default, int) else default / 2


@pytest.mark.parametrize("name", sorted(threshold_fields()))
def test_every_number_field_is_a_command_line_flag(name: str) -> None:
    """--<field> sets that field, for every number field of EvaluatorConfig (the flags are derived, not listed)."""
    parser = argparse.ArgumentParser()
    add_config_flags(parser)
    value = _changed(name)
    assert getattr(config_from_args(parser.parse_args([f"--{name.replace('_', '-')}", str(value)])), name) == value


def test_set_reaches_fields_that_are_not_numbers() -> None:
    """--set initial_weights='{...}' sets the weights; a --set of a field wins over its named flag."""
    parser = argparse.ArgumentParser()
    add_config_flags(parser)
    args = parser.parse_args(["--set", 'initial_weights={"safety": 3}', "--n-stag", "4", "--set", "n_stag=5"])
    config = config_from_args(args)
    assert config.initial_weights == {"safety": 3.0} and config.n_stag == 5


def test_min_tier_above_max_tier_is_one_sentence() -> None:
    """Forcing a tier the ladder may not reach names both fields."""
    with pytest.raises(ConfigError, match=r"min_tier=3 is above max_tier=2"):
        EvaluatorConfig(min_tier=3, max_tier=2)


def test_min_tier_flag_lets_the_ladder_reach_the_forced_tier() -> None:
    """--min-tier 3 alone raises max_tier to 3 (a judge model is then required); an explicit lower --max-tier is refused."""
    p = argparse.ArgumentParser()
    add_config_flags(p)
    assert config_from_args(p.parse_args(["--min-tier", "3"])).max_tier == 3
    assert config_from_args(p.parse_args([])).min_tier == 1
    with pytest.raises(ConfigError, match="min_tier"):
        config_from_args(p.parse_args(["--min-tier", "3", "--max-tier", "2"]))


def test_the_weight_update_stays_finite_at_the_bounds() -> None:
    """At the largest alpha, beta and starting weight, a thousand stages of worst and best scores keep every weight a finite
    number and the weights summing to one (eq. 7 never overflows inside the bounds)."""
    import math

    from dynsteer_hook.model.config import MAX_INITIAL_WEIGHT, MAX_RATE
    from dynsteer_hook.runtime.policy import update_weights

    cfg = EvaluatorConfig(alpha=MAX_RATE, beta=MAX_RATE, min_weight=0.0, initial_weights={"safety": MAX_INITIAL_WEIGHT})
    weights = cfg.normalized_initial_weights()
    for i in range(1000):
        scores = {d: float((i + j) % 2) for j, d in enumerate(DIMENSIONS)}
        weights = update_weights(weights, scores, dict.fromkeys(DIMENSIONS, 1.0), cfg.alpha, cfg.beta, cfg.min_weight)
        assert all(math.isfinite(w) and w >= 0 for w in weights.values()) and math.isclose(sum(weights.values()), 1.0)
