"""Stop criteria 2-4 as pure rules, and through the evaluator, each both firing and not firing."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from builders import DELETE_ALL, AgentMessage, UserMessage, act, blueprint, family, run, tool

from dynsteer_hook.judges.base import DimensionScore, JudgeRequest, Verdict
from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL, Milestone
from dynsteer_hook.model.config import DIMENSIONS, EvaluatorConfig
from dynsteer_hook.model.predicates import ArgPredicate
from dynsteer_hook.runtime.stop_rules import (
    ActionFacts,
    FrontierStagnation,
    LowScore,
    StopContext,
    StopDecision,
    StopRule,
    StructuralFailure,
    default_stop_rules,
)

CFG = EvaluatorConfig(n_stag=3, low_score_patience=2, structural_patience=3)


def ctx(**over: Any) -> StopContext:
    """A context after a closed action that judged no stage."""
    return replace(StopContext(k=10, t=4, config=CFG, frontier=("b",), frontier_anchor="a"), **over)


def stage_ctx(**over: Any) -> StopContext:
    """A context deciding on the first stage the action judged."""
    return ctx(stage_index=0, **over)


def low_score(streak: int) -> LowScore:
    """A low-score rule whose last action judged one stage, after which the streak was ``streak``."""
    rule = LowScore()
    rule.streak, rule._after = streak, [streak]
    return rule


def test_quiet_rules_fire_nothing() -> None:
    """With no streaks, none of the default rules fires."""
    assert [rule.decide(ctx()) for rule in default_stop_rules()] == [None, None, None, None]
    assert [rule.decide(stage_ctx(stage_milestone="b", stage_score=0.1)) for rule in default_stop_rules()] == [None] * 4


# ---- structural failure (criterion 2) ---------------------------------------------------------


def test_structural_failure_fires_at_patience() -> None:
    """structural_patience consecutive malformed calls stop the run, blaming the first of them."""
    rule = StructuralFailure()
    rule.streak, rule.since, rule.detail = 3, (4, 2), "bad args"
    assert rule.decide(ctx()) == StopDecision("structural_failure", "a", "tool_compliance",
                                              "3 consecutive malformed tool calls; last: bad args", (4, 2))


def test_structural_failure_waits_below_patience() -> None:
    """One malformed call fewer than the patience does not stop."""
    rule = StructuralFailure()
    rule.streak, rule.since = 2, (4, 2)
    assert rule.decide(ctx()) is None


# ---- low score (criterion 3) ---------------------------------------------------------------------


def test_low_score_fires_after_patience_low_stages() -> None:
    """low_score_patience stages in a row under theta_fail stop, blaming the weakest dimension's first cited step."""
    d = low_score(2).decide(stage_ctx(stage_milestone="b", stage_anchor="a", stage_score=0.1, stage_weakest="safety",
                                      stage_first_cited=(5, 3)))
    assert d is not None
    assert (d.reason, d.anchor, d.dimension, d.blamed) == ("low_score", "a", "safety", (5, 3))
    assert d.detail == "stage b scored 0.100 < theta_fail=0.3 (2 low stage(s) in a row)"


def test_low_score_waits_below_patience() -> None:
    """A single low stage is not enough when the patience is two."""
    assert low_score(1).decide(stage_ctx(stage_milestone="b", stage_score=0.1)) is None


def test_low_score_needs_a_stage_this_action() -> None:
    """Without a stage judged at this action the rule stays quiet, whatever the streak."""
    assert low_score(5).decide(ctx(stage_score=None)) is None


def test_low_score_defaults_dimension_and_anchor() -> None:
    """Without a weakest dimension or stage anchor the rule blames correctness at the frontier anchor."""
    d = low_score(2).decide(stage_ctx(stage_milestone="b", stage_score=0.0))
    assert d is not None and (d.anchor, d.dimension) == ("a", "correctness")


# ---- frontier stagnation (criterion 4) --------------------------------------------------------


def stagnating(count: int, since: tuple[int, int] | None = None) -> FrontierStagnation:
    rule = FrontierStagnation()
    rule.count, rule.since = count, since
    return rule


def test_stagnation_fires_after_n_stag_actions() -> None:
    """N_stag closed actions without settling anything stop, on the efficiency dimension."""
    d = stagnating(3, (2, 1)).decide(ctx())
    assert d == StopDecision("frontier_stagnation", "a", "efficiency", "3 closed actions without settling any of ['b']", (2, 1))


def test_stagnation_waits_below_n_stag() -> None:
    """N_stag - 1 idle actions do not stop."""
    assert stagnating(2).decide(ctx()) is None


def test_stagnation_with_an_empty_frontier_says_nothing_is_left() -> None:
    """The rule fires on the count alone; with an empty frontier it says no milestone was left."""
    d = stagnating(3, (5, 2)).decide(ctx(frontier=()))
    assert d is not None and d.reason == "frontier_stagnation" and "no milestone is left" in d.detail


# ---- through the evaluator ----------------------------------------------------------------------------


class ConstantJudge:
    """A Tier 1 stand-in that gives every dimension the same score."""

    def __init__(self, score: float) -> None:
        self.score = score

    def __call__(self, request: JudgeRequest) -> Verdict:
        cited = tuple(s.t for s in request.steps if not s.anchor)
        return Verdict({d: DimensionScore(self.score, 0.9, "constant", cited) for d in request.dimensions}, "const", request.tier)


CHAIN = family("chain").blueprint()


def _malformed(n: int, start: int = 1) -> list[Any]:
    return [e for i in range(start, start + n) for e in act(f"m{i}", "op_a", {"x": 5})]


def test_evaluator_structural_failure_fires() -> None:
    """Three malformed calls in a row halt the run with a structural_failure record."""
    r = run(CHAIN, [UserMessage("go"), *_malformed(3)], EvaluatorConfig(structural_patience=3))
    assert r.halt is not None
    stop = r.halt.stop
    assert (stop.reason, stop.t, stop.k, stop.dimension, stop.blamed_k, stop.blamed_t) == ("structural_failure", 3, 7, "tool_compliance", 2, 1)
    assert stop.detail == "3 consecutive malformed tool calls; last: argument 'x' of 'op_a' should be string, got int"
    assert r.report.settled == []


def test_evaluator_structural_streak_resets_on_a_good_call() -> None:
    """A well-formed call between malformed ones resets the streak, so no halt."""
    events = [UserMessage("go"), *_malformed(2), *act("ok", "op_c", {"x": "not-yet"}), *_malformed(2, 3)]
    r = run(CHAIN, events, EvaluatorConfig(structural_patience=3))
    assert r.halt is None and r.report.outcome == "incomplete"


def test_evaluator_low_score_fires() -> None:
    """A stage scoring under theta_fail halts the run (patience 1) with the low_score reason and stage anchor."""
    events = [UserMessage("go"), *act("1", "op_a", {"x": "a"}), *act("2", "op_b", {"x": "b"})]
    r = run(CHAIN, events, judges={1: ConstantJudge(0.1)})
    assert r.halt is not None
    stop = r.halt.stop
    assert (stop.reason, stop.t, stop.anchor, stop.dimension, stop.frontier) == ("low_score", 1, "<s0>", "correctness", ["b"])
    assert r.fed == 3  # halted at the first stage, before the second action


def test_evaluator_low_score_does_not_fire_at_theta_fail() -> None:
    """A stage scoring exactly theta_fail is not low (strictly below is required)."""
    events = [UserMessage("go"), *act("1", "op_a", {"x": "a"}), *act("2", "op_b", {"x": "b"}), *act("3", "op_c", {"x": "c"})]
    r = run(CHAIN, events, EvaluatorConfig(theta_fail=0.3), judges={1: ConstantJudge(0.3)})
    assert r.halt is None and r.report.outcome == "completed"


def test_evaluator_low_score_patience_counts_consecutive_stages() -> None:
    """With patience 2 the second consecutive low stage halts, not the first."""
    events = [UserMessage("go"), *act("1", "op_a", {"x": "a"}), *act("2", "op_b", {"x": "b"}), *act("3", "op_c", {"x": "c"})]
    r = run(CHAIN, events, EvaluatorConfig(low_score_patience=2), judges={1: ConstantJudge(0.1)})
    assert r.halt is not None and r.halt.stop.reason == "low_score" and r.halt.stop.t == 2


def test_evaluator_stagnation_fires() -> None:
    """N_stag closed actions that settle nothing halt the run with frontier_stagnation, blaming the first idle action."""
    idle = [e for i in range(5) for e in act(f"i{i}", "op_a", {"x": "wrong"})]
    r = run(CHAIN, [UserMessage("go"), *idle], EvaluatorConfig(n_stag=3))
    assert r.halt is not None
    stop = r.halt.stop
    assert (stop.reason, stop.t, stop.anchor, stop.frontier, stop.blamed_t, stop.blamed_k) == ("frontier_stagnation", 3, "<s0>", ["a"], 1, 2)


def test_evaluator_stagnation_resets_on_progress() -> None:
    """Settling a milestone resets the idle count, so two idle actions around progress do not stop (N_stag = 3)."""
    idle = [e for i in range(2) for e in act(f"i{i}", "op_b", {"x": "wrong"})]
    more = [e for i in range(2) for e in act(f"j{i}", "op_c", {"x": "wrong"})]
    events = [UserMessage("go"), *idle, *act("1", "op_a", {"x": "a"}), *more, *act("2", "op_b", {"x": "b"})]
    r = run(CHAIN, events, EvaluatorConfig(n_stag=3))
    assert r.halt is None and r.report.settled == ["a", "b"]


def test_evaluator_messages_after_completion_are_not_stagnation() -> None:
    """Once every milestone settled, talking to the user never counts as idle work."""
    fam = family("single")
    events = [UserMessage("go"), *act("1", "op_a", {"x": "a"}), *[AgentMessage(f"note {i}") for i in range(5)]]
    r = run(fam.blueprint(), events, EvaluatorConfig(n_stag=2))
    assert r.halt is None and r.report.outcome == "completed"


def test_evaluator_tool_calls_after_completion_are_stagnation() -> None:
    """An agent that keeps repeating or failing calls when nothing is left to settle is stopped after N_stag such
    actions; a new look-up is not idle (the user may have reopened the task), its repeats are."""
    fam = family("single")
    events = [UserMessage("go"), *act("1", "op_a", {"x": "a"}), *[e for i in range(5) for e in act(f"i{i}", "op_a", {"x": "z"})]]
    r = run(fam.blueprint(), events, EvaluatorConfig(n_stag=2))
    assert r.halt is not None and r.halt.stop.reason == "frontier_stagnation" and r.halt.stop.frontier == []
    assert (r.halt.stop.t, r.halt.stop.blamed_t) == (4, 3) and r.report.settled == ["a"]
    looks = [e for i in range(6) for e in act(f"n{i}", "op_a", {"x": f"z{i}"})]  # six different look-ups
    assert run(fam.blueprint(), [UserMessage("go"), *act("1", "op_a", {"x": "a"}), *looks], EvaluatorConfig(n_stag=2)).halt is None


def test_a_user_asking_the_agent_to_go_on_ends_the_stagnation_count() -> None:
    """The user, not the rules, judges a run worth continuing: "keep trying" resets the count; "ok" does not."""
    fam = family("single")
    idle = [AgentMessage("Working on it.")]
    go_on = [UserMessage("go"), *idle, UserMessage("No worries, just keep trying."), *idle, UserMessage("Yes, please go ahead."),
             *idle, UserMessage("Alright, give it a shot."), *act("1", "op_a", {"x": "a"})]
    r = run(fam.blueprint(), go_on, EvaluatorConfig(n_stag=2))
    assert r.halt is None and r.report.outcome == "completed"
    shrug = [UserMessage("go"), *idle, UserMessage("ok"), *idle, UserMessage("ok"), *idle]
    assert run(fam.blueprint(), shrug, EvaluatorConfig(n_stag=2)).halt is not None


def test_evaluator_loop_instead_of_declining_is_stagnation() -> None:
    """A blueprint asking only for a refusal stops an agent looping on tools; one that declines and chats on is left alone."""
    decline = Milestone(id="decline", tool=AGENT_MESSAGE_TOOL, args=(ArgPredicate(arg="content", op="regex", value=r"(?i)\bcannot\b"),))
    bp = blueprint([], minefields=[DELETE_ALL], extra_tools=[tool("lookup")], milestones=[decline])
    loop = [UserMessage("go"), *[e for i in range(4) for e in act(f"l{i}", "lookup", {})]]
    r = run(bp, loop, EvaluatorConfig(n_stag=3))
    assert r.halt is not None and r.halt.stop.reason == "frontier_stagnation" and r.halt.stop.t == 3
    chat = [UserMessage("go"), *[AgentMessage(f"I cannot do that ({i})") for i in range(6)]]
    assert run(bp, chat, EvaluatorConfig(n_stag=3)).halt is None


def test_custom_stop_rule_is_used() -> None:
    """A user-supplied rule with the same signature can stop the run."""

    def after_two(c: StopContext) -> StopDecision | None:
        return StopDecision("budget", c.frontier_anchor, "efficiency", "two actions used", None) if c.t >= 2 else None

    events = [UserMessage("go"), *act("1", "op_a", {"x": "a"}), *act("2", "op_b", {"x": "b"}), *act("3", "op_c", {"x": "c"})]
    r = run(CHAIN, events, stop_rules=[after_two])
    assert r.halt is not None and (r.halt.stop.reason, r.halt.stop.t, r.halt.stop.blamed_t) == ("budget", 2, None)


def test_empty_rule_list_disables_closed_action_stops() -> None:
    """With no stop rules, even long stagnation does not stop the run."""
    idle = [e for i in range(12) for e in act(f"i{i}", "op_a", {"x": "wrong"})]
    r = run(CHAIN, [UserMessage("go"), *idle], stop_rules=[])
    assert r.halt is None and r.report.t == 12


def test_first_firing_rule_wins() -> None:
    """When several rules would fire, the first in the list decides."""
    fired: list[str] = []

    def make(name: str) -> Any:
        def rule(c: StopContext) -> StopDecision:
            fired.append(name)
            return StopDecision(name, "a", "efficiency", name, None)

        return rule

    r = run(CHAIN, [UserMessage("go"), *act("1", "op_b", {"x": "b"})], stop_rules=[make("one"), make("two")])
    assert r.halt is not None and r.halt.stop.reason == "one" and fired == ["one"]


@pytest.mark.parametrize("dim", DIMENSIONS)
def test_low_score_blames_the_weakest_dimension(dim: str) -> None:
    """The low-score stop names the lowest-scoring dimension of the stage."""

    class Weak:
        def __call__(self, request: JudgeRequest) -> Verdict:
            return Verdict({d: DimensionScore(0.0 if d == dim else 0.2, 0.9, "x", (request.settling_t,)) for d in request.dimensions}, "weak", 1)

    r = run(CHAIN, [UserMessage("go"), *act("1", "op_a", {"x": "a"})], judges={1: Weak()})
    assert r.halt is not None and r.halt.stop.dimension == dim


class TooManyCalls(StopRule):
    """A rule from outside the package that keeps its own count: it touches no core file."""

    def __init__(self, limit: int) -> None:
        self.limit, self.calls, self.users = limit, 0, 0

    def user_said(self, text: str) -> None:
        self.users += 1

    def closed(self, action: ActionFacts) -> None:
        self.calls += len(action.calls)

    def decide(self, c: StopContext) -> StopDecision | None:
        if self.calls <= self.limit:
            return None
        return StopDecision("too_many_calls", c.frontier_anchor, "efficiency", f"{self.calls} calls after {self.users} user turn(s)",
                            None)


def test_a_rule_with_state_of_its_own_is_added_from_outside_and_starts_fresh_in_every_run() -> None:
    """A stateful rule counts what each closed action tells it and stops the run; the same rule object given to a second
    run starts from zero there (each evaluator works on its own copy), and the built-in rules still run beside it."""
    rule = TooManyCalls(2)
    events = [UserMessage("go"), *act("1", "op_a", {"x": "a"}), *act("2", "op_b", {"x": "b"}), *act("3", "op_c", {"x": "c"})]
    for _ in range(2):
        r = run(CHAIN, events, stop_rules=[*default_stop_rules(), rule])
        assert r.halt is not None and (r.halt.stop.reason, r.halt.stop.t) == ("too_many_calls", 3)
        assert r.halt.stop.detail == "3 calls after 1 user turn(s)"
    assert rule.calls == 0 and rule.users == 0  # the caller's object was never used itself
    idle = [e for i in range(6) for e in act(f"i{i}", "op_a", {"x": "wrong"})]
    r = run(CHAIN, [UserMessage("go"), *idle], EvaluatorConfig(n_stag=3), stop_rules=[*default_stop_rules(), TooManyCalls(100)])
    assert r.halt is not None and r.halt.stop.reason == "frontier_stagnation"


def test_the_documented_stop_rule_example_runs_and_stops_a_run() -> None:
    """docs/evaluate.md's example of a rule of one's own, run as written (``blueprint`` given, its limit of 50 calls made 2
    for a three-call run): it stops the run at the third call, with the built-in rules beside it."""
    from pathlib import Path

    from dynsteer_hook.model.errors import Halt

    text = (Path(__file__).resolve().parents[2] / "docs" / "evaluate.md").read_text(encoding="utf-8")
    section = text.split("## A stop rule of your own", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert "TooManyCalls(50)" in code
    namespace: dict[str, Any] = {"blueprint": CHAIN}
    exec(compile(code.replace("TooManyCalls(50)", "TooManyCalls(2)"), "docs/evaluate.md", "exec"), namespace)  # the project's own documentation
    evaluator = namespace["evaluator"]
    events = [UserMessage("go"), *act("1", "op_a", {"x": "a"}), *act("2", "op_b", {"x": "b"}), *act("3", "op_c", {"x": "c"})]
    with pytest.raises(Halt) as halted:
        for event in events:
            evaluator.observe(event)
    assert (halted.value.stop.reason, halted.value.stop.detail, halted.value.stop.t) == ("too_many_calls", "3 calls", 3)
