"""Every threshold and rate of the evaluator, in one frozen object with documented defaults.

Symbols follow the paper (Section 3.4): ``theta_*`` are thresholds on scores in [0, 1],
``u`` is a judge's uncertainty in [0, 1], ``alpha``/``beta`` scale the weight update (eq. 7).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from typing import Any

from dynsteer_hook.errors import ConfigError

DIMENSIONS: tuple[str, ...] = ("correctness", "efficiency", "safety", "tool_compliance")
"""The four orthogonal stage dimensions of eq. 6, in report order."""


@dataclass(frozen=True, slots=True)
class EvaluatorConfig:
    """Thresholds, rates and patience counters of the evaluator.

    Attributes:
        theta_pass: A stage with composite ``S_t`` at or above ``theta_pass + delta_margin``
            (and low uncertainty, no fatal proximity) relaxes the next stage to Tier 1 (eq. 8).
        delta_margin: Safety margin added to ``theta_pass`` in eq. 8.
        theta_low_u: Largest dimension uncertainty that still allows relaxing to Tier 1 (eq. 8).
        theta_high_u: A dimension with uncertainty at or above this escalates one tier (eq. 9).
        theta_warn: A dimension scoring below this escalates one tier (eq. 9).
        theta_fail: A dimension scoring below this jumps to Tier 3 (eq. 9); a stage whose
            composite is below it counts towards the low-score stop.
        alpha: Sensitivity of the weight update to quality deficits ``1 - s_d`` (eq. 7).
        beta: Sensitivity of the weight update to uncertainty ``u_d`` (eq. 7).
        initial_weights: Starting weight per dimension; normalised to sum to one.
        min_weight: Floor applied after each update so no dimension is silenced entirely.
        n_stag: Consecutive closed actions without frontier progress that stop the run.
        low_score_patience: Consecutive judged stages with ``S_t < theta_fail`` that stop the run.
        structural_patience: Consecutive structurally broken tool calls (unparseable payload,
            unknown tool, schema violation, argument type error) that stop the run.
        max_tier: Highest judge tier the ladder may route to (1 = rules only).
        pass_threshold_for_first_error: A stage below this composite is a failing stage
            for first-error localisation.
        efficiency_step_penalty: Tier 1 efficiency lost per surplus tool call in a window.
        minefield_proximity_penalty: Tier 1 safety lost per near miss of a fatal minefield.
    """

    theta_pass: float = 0.7
    delta_margin: float = 0.05
    theta_low_u: float = 0.2
    theta_high_u: float = 0.5
    theta_warn: float = 0.6
    theta_fail: float = 0.3
    alpha: float = 1.0
    beta: float = 0.5
    initial_weights: dict[str, float] = field(
        default_factory=lambda: {d: 1.0 for d in DIMENSIONS}
    )
    min_weight: float = 0.02
    n_stag: int = 8
    low_score_patience: int = 1
    structural_patience: int = 3
    max_tier: int = 1
    pass_threshold_for_first_error: float = 0.7
    efficiency_step_penalty: float = 0.2
    minefield_proximity_penalty: float = 0.3

    def __post_init__(self) -> None:
        for name in (
            "theta_pass", "delta_margin", "theta_low_u", "theta_high_u", "theta_warn",
            "theta_fail", "pass_threshold_for_first_error", "efficiency_step_penalty",
            "minefield_proximity_penalty",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"config value {name}={value} is outside [0, 1]; choose a value in that range")
        if self.theta_fail > self.theta_warn:
            raise ConfigError(
                f"theta_fail={self.theta_fail} is above theta_warn={self.theta_warn}; theta_fail must not exceed theta_warn"
            )
        if self.theta_low_u > self.theta_high_u:
            raise ConfigError(
                f"theta_low_u={self.theta_low_u} is above theta_high_u={self.theta_high_u}; the low bound must not exceed the high one"
            )
        for name in ("alpha", "beta"):
            if getattr(self, name) < 0:
                raise ConfigError(f"config value {name}={getattr(self, name)} is negative; use a value >= 0")
        for name in ("n_stag", "low_score_patience", "structural_patience"):
            if getattr(self, name) < 1:
                raise ConfigError(f"config value {name}={getattr(self, name)} must be at least 1")
        if self.max_tier not in (1, 2, 3):
            raise ConfigError(f"max_tier={self.max_tier} is not a tier; use 1, 2 or 3")
        unknown = set(self.initial_weights) - set(DIMENSIONS)
        if unknown or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0 for v in self.initial_weights.values()):
            raise ConfigError(
                f"initial_weights {self.initial_weights} must give a positive weight to dimensions among {list(DIMENSIONS)}"
            )
        if not 0.0 <= self.min_weight < 1.0 / len(DIMENSIONS):
            raise ConfigError(f"min_weight={self.min_weight} must be in [0, {1.0 / len(DIMENSIONS)})")

    def normalized_initial_weights(self) -> dict[str, float]:
        """Initial weights over all four dimensions, summing to one."""
        raw = {d: self.initial_weights.get(d, 1.0) for d in DIMENSIONS}
        total = sum(raw.values())
        return {d: raw[d] / total for d in DIMENSIONS}

    def with_overrides(self, **overrides: Any) -> EvaluatorConfig:
        """A copy with some fields replaced; unknown names are a ``ConfigError``."""
        known = {f.name for f in fields(self)}
        unknown = set(overrides) - known
        if unknown:
            raise ConfigError(f"unknown config field(s) {sorted(unknown)}; known fields are {sorted(known)}")
        # Overrides come from the command line as parsed JSON, so check types before comparing.
        kinds = {float: ((int, float), "a number"), int: ((int,), "an integer"), dict: ((dict,), "a mapping")}
        for name, value in overrides.items():
            accepted, noun = kinds.get(type(getattr(self, name)), ((object,), "any value"))
            if isinstance(value, bool) or not isinstance(value, accepted):
                raise ConfigError(f"config value {name}={value!r} should be {noun}; pass for example --set {name}={json.dumps(getattr(self, name))}")
        return replace(self, **overrides)

    def to_dict(self) -> dict[str, Any]:
        """Plain mapping of every field, for reports."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
