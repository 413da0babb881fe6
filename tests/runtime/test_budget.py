"""The budget stop and the cost record: what each role spent, a halt once a rollout spends past its limits."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest
from builders import UserMessage, act, family

from dynsteer_hook.judges.base import DimensionScore, JudgeRequest, Verdict
from dynsteer_hook.model.config import DIMENSIONS, EvaluatorConfig
from dynsteer_hook.model.errors import ConfigError, Halt
from dynsteer_hook.model.records import ListSink
from dynsteer_hook.model.spending import UNKNOWN, Spend
from dynsteer_hook.runtime.budget import Budget
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.runtime.stop_rules import StopContext, default_stop_rules


def ctx(spending: Mapping[str, Spend]) -> StopContext:
    return StopContext(k=3, t=1, config=EvaluatorConfig(), frontier=("b",), frontier_anchor="a", spending=spending)


def evaluator(*rules: Budget, **kw: object) -> Evaluator:
    return Evaluator(family("chain").blueprint(), stop_rules=[*default_stop_rules(), *rules], sink=ListSink(), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("limits", "spent", "stops"), [
    ({"max_cost_usd": 0.01}, Spend(1, 100, 50, 0.01), False),  # exactly at the limit: not over it
    ({"max_cost_usd": 0.01}, Spend(1, 100, 50, 0.0101), True),
    ({"max_tokens": 150}, Spend(1, 100, 50, 0.0), False),
    ({"max_tokens": 150}, Spend(1, 100, 51, 0.0), True),
    ({"max_cost_usd": 0.0}, Spend(1, 10, 10, 0.0, cost_known=False), False),  # unknown dollars count 0
    ({}, Spend(9, 10**9, 10**9, 1e6), False),  # no limits
])
def test_budget_decides_only_past_its_limits(limits: dict[str, float], spent: Spend, stops: bool) -> None:
    """The rule stops once the known dollars or tokens of every role together exceed a limit, never at it."""
    decision = Budget(**limits).decide(ctx({"agent": spent}))  # type: ignore[arg-type]
    assert (decision is not None) is stops
    if decision is not None:
        assert (decision.reason, decision.anchor, decision.dimension, decision.blamed) == ("budget", "a", "efficiency", None)
        assert "over the budget" in decision.detail and "agent $" in decision.detail


def test_budget_adds_up_every_role() -> None:
    """Agent, user and judges together: each under the limit, their sum over it."""
    spending = {"agent": Spend(1, 40, 10, 0.004), "user": Spend(1, 40, 10, 0.004), "judges": Spend(2, 40, 10, 0.004)}
    decision = Budget(max_cost_usd=0.01).decide(ctx(spending))
    assert decision is not None and "$0.012000 spent" in decision.detail


@pytest.mark.parametrize("bad", [-0.01, math.nan, math.inf])
def test_budget_refuses_a_bad_limit(bad: float) -> None:
    """A negative, NaN or infinite budget is one sentence, not a rule that never fires."""
    with pytest.raises(ConfigError, match="must be a finite number of at least 0"):
        Budget(max_cost_usd=bad)
    with pytest.raises(ConfigError, match="whole number"):
        Budget(max_tokens=-1)


def test_spending_past_the_budget_halts_at_once_and_is_reported() -> None:
    """A role's spending reported between events halts the run there, as a stop like the others, with the cost record."""
    ev = evaluator(Budget(max_cost_usd=0.05))
    ev.observe(UserMessage("please"))
    for e in act("c1", "op_a", {"x": "a"}):
        ev.observe(e)
    ev.spent("agent", Spend(1, 500, 20, 0.03), "openai/agent")
    with pytest.raises(Halt) as halt:
        ev.spent("agent", Spend(2, 1000, 40, 0.06), "openai/agent")
    assert halt.value.stop.reason == "budget" and halt.value.stop.t == 1
    ev.spent("user", UNKNOWN)  # after the halt: still recorded, never raises again
    report = ev.finish()
    assert report.outcome == "halted" and report.stop is not None and report.stop.reason == "budget"
    assert report.cost is not None
    assert report.cost.roles["agent"].model_dump() == {"model": "openai/agent", "calls": 2, "prompt_tokens": 1000,
                                                       "completion_tokens": 40, "cost_usd": 0.06}
    assert report.cost.roles["user"].model_dump() == {"model": None, "calls": None, "prompt_tokens": None,
                                                      "completion_tokens": None, "cost_usd": None}
    # A total with an unknown part is unknown, never a number that reads as all of it.
    assert report.cost.total.cost_usd is None and report.cost.total.prompt_tokens is None


def test_a_run_within_budget_is_not_stopped() -> None:
    """Spending under the limits stops nothing; the report says what was spent and that the judges spent nothing."""
    ev = evaluator(Budget(max_cost_usd=1.0, max_tokens=10_000))
    ev.observe(UserMessage("please"))
    ev.spent("agent", Spend(1, 100, 10, 0.001))
    for e in act("c1", "op_a", {"x": "a"}):
        ev.observe(e)
    report = ev.finish()
    assert report.stop is None and report.cost is not None
    assert list(report.cost.roles) == ["agent"]
    assert report.cost.total.model_dump() == {"model": None, "calls": 1, "prompt_tokens": 100, "completion_tokens": 10, "cost_usd": 0.001}


class _PricedJudge:
    """A Tier 2 judge whose every call costs a cent and 1,000 tokens."""

    def __call__(self, request: JudgeRequest) -> Verdict:
        scores = {d: DimensionScore(0.9, 0.9, "fine") for d in request.dimensions}
        return Verdict(scores=scores, judge="priced", tier=2, tokens=1000, cost_usd=0.01, calls=1, spend=Spend(1, 900, 100, 0.01))


def test_judges_spending_counts_and_halts_at_the_closed_action() -> None:
    """The judges' calls are a role of their own; judged stages that spend past the budget halt at the action that judged them."""
    config = EvaluatorConfig(min_tier=2, max_tier=2)
    ev = evaluator(Budget(max_cost_usd=0.015), config=config, judges={2: _PricedJudge()})
    ev.observe(UserMessage("please"))
    for e in act("c1", "op_a", {"x": "a"}):
        ev.observe(e)
    with pytest.raises(Halt) as halt:
        for e in act("c2", "op_b", {"x": "b"}):
            ev.observe(e)
    assert halt.value.stop.reason == "budget" and halt.value.stop.t == 2
    report = ev.finish()
    assert report.cost is not None and report.cost.roles["judges"].calls == 2
    assert report.cost.roles["judges"].prompt_tokens == 1800 and report.cost.roles["judges"].cost_usd == pytest.approx(0.02)
    assert set(DIMENSIONS) <= set(report.stages[0].scores)
