"""Stage windows and step retention: the indexed window selection answers exactly as the simple definition.

The simple definition (paper §3.3 and this project's parallel-branch rule), computed here from
the report alone: scan every closed action from t_idom(m) to t; the anchor step is context,
step t is in, a step that settled something is in when it settled an ancestor of m (or m), and
an idle step is in unless every tool it called belongs to milestones that are not ancestors of m.
Random traces over graph families and random DAGs, with tools shared between milestones, idle
retries, unowned tools, messages, failures and parallel calls, are evaluated and every stage's
window is checked against that scan.
"""

from __future__ import annotations

import random

import networkx as nx
import pytest
from builders import FAMILIES, blueprint, milestone, run
from dominator_oracle import dominator_map

from dynsteer_hook.judges.steps import Step
from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.dominators import START, DominatorTree
from dynsteer_hook.model.events import AgentMessage, Event, ToolCall, ToolResult, UserMessage
from dynsteer_hook.model.graph import milestone_graph
from dynsteer_hook.model.records import Report, StepRecord
from dynsteer_hook.runtime.windows import StepLog

PATIENT = EvaluatorConfig(n_stag=10**6, low_score_patience=10**6, structural_patience=10**6, repeated_failure_patience=10**6)


def _graph(seed: int) -> tuple[list[str], list[tuple[str, str]]]:
    if seed < len(FAMILIES):
        fam = FAMILIES[seed]
        return list(fam.nodes), list(fam.edges)
    rng = random.Random(seed)
    n = rng.randint(2, 14)
    nodes = [f"n{i}" for i in range(n)]
    p = rng.choice([0.1, 0.25, 0.5])
    return nodes, [(nodes[i], nodes[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < p]


def _case(seed: int) -> tuple[Blueprint, list[Event]]:
    """A blueprint whose milestones share three tools, and a random trace that settles it in some valid order."""
    rng = random.Random(1000 + seed)
    nodes, edges = _graph(seed)
    tool_of = {n: f"op_{rng.randrange(3)}" for n in nodes}
    bp = blueprint(nodes, edges, milestones=[milestone(n, tool_name=tool_of[n], x=n) for n in nodes])
    preds = {n: {u for u, v in edges if v == n} for n in nodes}
    settled: set[str] = set()
    events: list[Event] = [UserMessage("do it")]
    ids = iter(range(10**6))
    while len(settled) < len(nodes):
        ready = [n for n in nodes if n not in settled and preds[n] <= settled]
        roll = rng.random()
        if roll < 0.45:
            picks = rng.sample(ready, min(len(ready), rng.choice([1, 1, 2])))  # sometimes two parallel calls
            calls = [ToolCall(f"c{next(ids)}", tool_of[n], {"x": n}) for n in picks]
            events += calls + [ToolResult(c.call_id, "ok") for c in calls]
            settled |= set(picks)
        elif roll < 0.65:  # an idle call of an owned tool with arguments no milestone wants
            c = ToolCall(f"c{next(ids)}", f"op_{rng.randrange(3)}", {"x": "nothing"})
            events += [c, ToolResult(c.call_id, "ok")]
        elif roll < 0.75:  # a tool no milestone owns
            c = ToolCall(f"c{next(ids)}", "lookup", {"q": "weather"})
            events += [c, ToolResult(c.call_id, {"temp": 20})]
        elif roll < 0.85:  # a failed call of a ready milestone's tool
            n = rng.choice(ready)
            c = ToolCall(f"c{next(ids)}", tool_of[n], {"x": n})
            events += [c, ToolResult(c.call_id, None, "RuntimeError: busy")]
        else:
            events.append(AgentMessage("working on it"))
    return bp, events


def _expected(bp: Blueprint, report: Report, m: str, t: int) -> tuple[str, int, int, list[int]]:
    g = milestone_graph(bp)
    anchor = dominator_map(bp).get(m, START)
    settled_at = {x: s.t for s in report.steps for x in s.settled}
    t_anchor = 0 if anchor == START else settled_at[anchor]
    k_anchor = 0 if t_anchor == 0 else report.steps[t_anchor - 1].k_end
    related = set(nx.ancestors(g, m)) | {m}
    owners: dict[str, set[str]] = {}
    for ms in bp.milestones:
        owners.setdefault(ms.tool, set()).add(ms.id)
    steps = []
    for s in report.steps[max(t_anchor - 1, 0) : t]:
        if s.t == t_anchor or s.t == t:
            steps.append(s.t)
        elif s.settled:
            if any(x in related for x in s.settled):
                steps.append(s.t)
        else:
            tried = set().union(*(owners.get(tool, set()) for tool in s.tools)) if s.tools else set()
            if not (tried and not tried & related):
                steps.append(s.t)
    return anchor, t_anchor, k_anchor, steps


SEEDS = range(len(FAMILIES) + 45)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_stage_window_matches_the_simple_definition(seed: int) -> None:
    """Anchor, bounds on both clocks and the steps given to judges equal the scan of the whole run."""
    bp, events = _case(seed)
    r = run(bp, events, PATIENT)
    assert r.halt is None and r.report.outcome == "completed"
    for st in r.report.stages:
        anchor, t_anchor, k_anchor, steps = _expected(bp, r.report, st.milestone, st.t)
        w = st.window
        assert (w.anchor, w.t_start, w.k_start, w.steps) == (anchor, t_anchor, k_anchor, steps), st.milestone


def _step(t: int, settled: tuple[str, ...] = ()) -> Step:
    return Step(t=t, k_start=2 * t - 1, k_end=2 * t, kind="message", calls=(), message="m", settled=settled)


def _log(nodes: list[str], edges: list[tuple[str, str]]) -> tuple[StepLog, dict[str, int]]:
    settled_at: dict[str, int] = {}
    return StepLog(DominatorTree(nodes, edges), {}, settled_at), settled_at


def _feed(log: StepLog, settled_at: dict[str, int], t: int, settles: tuple[str, ...] = ()) -> None:
    step = _step(t, settles)
    log.append(step, StepRecord(t=t, k_start=step.k_start, k_end=step.k_end, kind="message", tools=[], failed=0,
                                structural=0, settled=list(settles), out_of_order=[]))
    for m in settles:
        settled_at[m] = t
        log.settled(m, t)
    log.release()


def test_a_chain_keeps_only_the_steps_since_the_last_settlement() -> None:
    """Once m_i settles no window can open before it: older full steps are released, their records kept."""
    log, at = _log(["a", "b", "c"], [("a", "b"), ("b", "c")])
    for t in range(1, 101):
        _feed(log, at, t, ("a",) if t == 50 else ())
    assert log.kept() == 51  # steps 50..100: b's window opens at a's settlement
    assert len(log.records()) == 100 and log.record(1).t == 1
    with pytest.raises(LookupError, match="released"):
        log.step(49)
    assert [s.t for s in log.window("b", 100)[3]] == list(range(50, 101))


def test_milestones_hanging_off_s0_keep_every_step() -> None:
    """An unsettled milestone whose window opens at s0 needs the whole run: nothing is released."""
    log, at = _log(["x", "y"], [])
    for t in range(1, 101):
        _feed(log, at, t, ("x",) if t == 10 else ())
    assert log.kept() == 100
    assert log.window("y", 100)[3][0].t == 1


def test_once_everything_is_settled_no_step_is_kept() -> None:
    """With nothing left to settle, no window can open again."""
    log, at = _log(["a"], [])
    for t in range(1, 21):
        _feed(log, at, t, ("a",) if t == 20 else ())
    assert log.kept() == 0 and len(log.records()) == 20


def test_a_long_chain_run_holds_a_bounded_number_of_full_steps() -> None:
    """Through the evaluator: 2,000 idle actions between settlements of a chain leave at most one stretch in memory."""
    nodes = [f"m{i}" for i in range(5)]
    bp = blueprint(nodes, [(nodes[i], nodes[i + 1]) for i in range(4)], milestones=[milestone(n, x=n) for n in nodes])
    events: list[Event] = [UserMessage("go")]
    for i, n in enumerate(nodes):
        events += [AgentMessage("thinking")] * 400
        events += [ToolCall(f"c{i}", f"op_{n}", {"x": n}), ToolResult(f"c{i}", "ok")]
    r = run(bp, events[:-2], PATIENT)  # the last milestone stays open
    assert r.report.t == 2004 and len(r.report.steps) == 2004
    assert r.evaluator._settlement.log.kept() == 401  # m4's window: m3's settling step and the 400 actions since
