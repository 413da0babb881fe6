"""The judge ladder: which tier judges each dimension of a stage, the adaptive weights and tiers
(eq. 7-9), and the accounting of judge calls, tokens, cost and degradations.

A judge that raises is replaced by the tier below it; a judge that gives no score for a
dimension is completed by Tier 1. Either is recorded on the stage and in the usage.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from dynsteer_hook.judges.base import DimensionScore, Judge, JudgeRequest, StageContext, StageGoal, Verdict
from dynsteer_hook.judges.steps import Step
from dynsteer_hook.judges.tier1 import UNVERIFIED, Tier1Judge
from dynsteer_hook.model.config import DIMENSIONS, EvaluatorConfig
from dynsteer_hook.model.records import JudgeUsage
from dynsteer_hook.model.spending import Spend
from dynsteer_hook.runtime.policy import base_level, composite, next_levels, update_weights

# Through the standard library's logging: a program embedding the package sees its warnings only, unless it
# configures logging (the command line does, in logs.py).
_log = structlog.wrap_logger(logging.getLogger(__name__))


@dataclass(frozen=True, slots=True)
class StageJudgement:
    """The ladder's judgement of one stage."""

    requested: dict[str, int]
    used: dict[str, int]
    scores: dict[str, DimensionScore]
    s: dict[str, float]
    u: dict[str, float]
    composite: float
    weights_used: dict[str, float]
    weights: dict[str, float]
    next_tiers: dict[str, int]
    judges: list[str]
    degraded: list[str]


class JudgeLadder:
    """Judges stages tier by tier and adapts weights and tiers after each.

    Args:
        config: Thresholds and rates.
        judges: Judge per tier; Tier 1 rules are added when missing.
    """

    __slots__ = ("_config", "_cost", "_degraded", "_judges", "_levels", "_spend", "_tiers", "_tokens", "_usage_calls", "_usage_dims",
                 "_usage_requests", "_weights")

    def __init__(self, config: EvaluatorConfig, judges: Mapping[int, Judge] | None = None) -> None:
        self._config = config
        self._judges: dict[int, Judge] = dict(judges or {})
        self._judges.setdefault(1, Tier1Judge(step_penalty=config.efficiency_step_penalty, proximity_penalty=config.minefield_proximity_penalty))
        self._tiers = sorted(t for t in self._judges if 1 <= t <= config.max_tier)
        self._weights = config.normalized_initial_weights()
        self._levels = dict.fromkeys(DIMENSIONS, config.min_tier)
        self._usage_calls: dict[str, int] = defaultdict(int)
        self._usage_dims: dict[str, int] = defaultdict(int)
        self._usage_requests: dict[str, int] = defaultdict(int)
        self._degraded = 0
        self._tokens = 0
        self._cost = 0.0
        self._spend = Spend()

    def judge(self, goal: StageGoal, window: list[Step], context: StageContext, t: int, proximity: int) -> StageJudgement:
        """Judge one stage at the tiers the ladder asks for, then adapt weights and tiers for the next one."""
        cfg = self._config
        requested = {d: max(level, self._config.min_tier) for d, level in self._levels.items()}
        used = {d: max(x for x in self._tiers if x <= requested[d]) for d in DIMENSIONS}
        scores: dict[str, DimensionScore] = {}
        judges: list[str] = []
        degraded: list[str] = []
        tier1_unverified: set[str] = set()
        for tier in sorted(set(used.values()), reverse=True):
            dims = tuple(d for d in DIMENSIONS if used[d] == tier)
            verdict = self._run(tier, goal, dims, window, context, t)
            if verdict.tier == 1:
                tier1_unverified |= set(verdict.extra.get(UNVERIFIED, ()))
            for d in dims:  # a judge that raised was replaced by a lower tier's
                used[d] = min(used[d], verdict.tier)
            missing = [d for d in dims if d not in verdict.scores]
            if verdict.degraded:
                degraded.append(f"tier {tier} ({verdict.judge}): {verdict.degraded}")
            judges.append(verdict.judge)
            scores.update({d: verdict.scores[d] for d in dims if d in verdict.scores})
            if missing:
                fallback = self._run(1, goal, tuple(missing), window, context, t)
                degraded.append(f"tier {tier} gave no score for {missing}; tier 1 used")
                for d in missing:
                    used[d] = 1
                    scores[d] = fallback.scores[d]
                judges.append(fallback.judge)
        self._second_look(goal, window, context, t, used, scores, judges, degraded, tier1_unverified)
        s = {d: min(1.0, max(0.0, float(scores[d].score))) for d in DIMENSIONS}
        u = {d: min(1.0, max(0.0, float(scores[d].uncertainty))) for d in DIMENSIONS}
        weights_used = dict(self._weights)
        stage_score = composite(s, weights_used)
        self._weights = update_weights(weights_used, s, u, cfg.alpha, cfg.beta, cfg.min_weight)
        base = base_level(stage_score, u, proximity, cfg)
        self._levels = next_levels(requested, s, u, base, cfg)
        return StageJudgement(requested, used, scores, s, u, stage_score, weights_used, dict(self._weights), dict(self._levels),
                              judges, degraded)

    def _second_look(self, goal: StageGoal, window: list[Step], context: StageContext, t: int, used: dict[str, int],
                     scores: dict[str, DimensionScore], judges: list[str], degraded: list[str], unverified: set[str]) -> None:
        """Dimensions Tier 1 scored on a value it could not check climb to the next tier in this very stage, when a judge
        is configured: a guess never stands where a judge could look."""
        higher = [x for x in self._tiers if x > 1]
        dims = tuple(d for d in DIMENSIONS if d in unverified and used[d] == 1)
        if not higher or not dims:
            return
        verdict = self._run(higher[0], goal, dims, window, context, t)
        if verdict.tier == 1:  # the judge failed and fell back: Tier 1's score stands, and the degradation says why
            degraded.append(f"tier {higher[0]} ({verdict.judge}): {verdict.degraded}")
            return
        judges.append(verdict.judge)
        for d in dims:
            if d in verdict.scores:
                scores[d] = verdict.scores[d]
                used[d] = verdict.tier

    def _run(self, tier: int, goal: StageGoal, dims: tuple[str, ...], window: list[Step], context: StageContext, t: int) -> Verdict:
        request = JudgeRequest(goal=goal, dimensions=dims, steps=tuple(window), context=context, tier=tier, settling_t=t)
        judge = self._judges[tier]
        try:
            verdict = judge(request)
            if not isinstance(verdict, Verdict):
                raise TypeError(f"judge returned {type(verdict).__name__}, not a Verdict")
        except Exception as exc:
            self._degraded += 1
            _log.warning("judge_failed", tier=tier, error=str(exc)[:200])
            if tier == 1:
                raise
            fallback = self._run(max(x for x in self._tiers if x < tier), goal, dims, window, context, t)
            return Verdict(
                scores=fallback.scores, judge=fallback.judge, tier=fallback.tier,
                degraded=f"{type(exc).__name__}: {str(exc)[:160]}; fell back to tier {fallback.tier}",
            )
        key = str(tier)
        self._usage_calls[key] += 1
        self._usage_dims[key] += len(dims)
        if verdict.calls:
            self._usage_requests[str(verdict.tier)] += verdict.calls
        self._tokens += verdict.tokens
        self._cost += verdict.cost_usd
        if verdict.spend.calls or verdict.calls:
            # A judge from outside the package may count its calls and money without the tokens' split.
            self._spend += verdict.spend if verdict.spend.calls else Spend(verdict.calls, cost_usd=verdict.cost_usd, tokens_known=False)
        if verdict.degraded:
            self._degraded += 1
        return verdict

    def usage(self) -> JudgeUsage:
        """Judge calls and dimensions by tier, degradations, tokens and cost so far."""
        return JudgeUsage(calls_by_tier=dict(self._usage_calls), dimensions_by_tier=dict(self._usage_dims),
                          llm_requests_by_tier=dict(self._usage_requests), degraded=self._degraded,
                          tokens=self._tokens, cost_usd=round(self._cost, 6))

    @property
    def spend(self) -> Spend:
        """What the judges' model calls cost so far (Tier 1 makes none)."""
        return self._spend

    def settings(self) -> dict[str, dict[str, Any]]:
        """How each usable tier's judge was made, for the judges that say (``settings()``)."""
        made: dict[str, dict[str, Any]] = {}
        for tier in self._tiers:
            describe = getattr(self._judges[tier], "settings", None)
            if callable(describe):
                made[str(tier)] = dict(describe())
        return made
