"""A clean scripted solver for one scenario, read off its hidden milestones.

The solver reaches the milestones in an order ToolSandbox accepts (``order.py``), one call
per step, each tried first in a scratch copy of the world (``world.py``): a state goal
becomes the calls that produce its rows, a traced call is made with the hidden arguments
(the first alternative that runs), and a message goal is said verbatim. Values a hidden
milestone takes from an earlier result are filled by ToolSandbox's own extractor, applied
to the result the scratch world returned.

One result cannot be tried in advance: ``get_current_timestamp`` returns the wall clock at
the moment the call is played, and ToolSandbox checks later calls against it (within one
second). The solver predicts that moment (``now`` plus a lead), passes the predicted value
on, and records it in ``KnownScript.clock``: such a script must be played right after it is
generated. A multi-turn task opens with a question to the user; an insufficient-information
task ends with the agent declining (or saying the hidden message when there is one).
"""

from __future__ import annotations

import json
import time
from typing import Any

from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.execution_context import ScenarioCategories
from tool_sandbox.common.scenario import Scenario

from .actions import complete_arguments, search_criteria, state_calls
from .dialogue import CLARIFY, CLOSING, DECLINE, instruction, user_messages, user_requests
from .hidden import CallGoal, HiddenMilestone, MessageGoal, StateGoal, Text, read_hidden
from .model import Call, KnownScript, Skip, Step, calling, say
from .order import plan_order
from .world import CLOCK_TOOLS, World, agent_catalog, is_multi_turn, is_offline_tool

# Seconds from the end of generation to the first step being played, and per earlier step
# (``play_fresh`` generates for the moment generation ends). Fitted on 229 plays of clean and
# variant scripts (the base and all-tools variants of the 32 clock-dependent base scenarios):
# lead -0.004 s, 0.013 s per step. With these values the prediction was off by -0.07 to
# +0.15 s played natively and -0.57 to +0.12 s with dynsteer live; ToolSandbox tolerates 1 s.
LEAD = 0.02
PER_STEP = 0.015


class UnsolvableError(Exception):
    """The scenario has no scripted solution this generator can build (the message says why)."""


def _mentions(result: Any, needed: str) -> bool:
    """Whether a result holds a value (a string of 4+ characters) that a later goal needs."""
    if isinstance(result, str):
        return len(result) >= 4 and result in needed
    if isinstance(result, dict):
        return any(_mentions(v, needed) for v in result.values())
    if isinstance(result, list):
        return any(_mentions(v, needed) for v in result)
    return False


class _Builder:
    def __init__(self, name: str, scenario: Scenario, now: float) -> None:
        self.name = name
        self.scenario = scenario
        self.now = now
        self.world = World(scenario)
        self.catalog = agent_catalog(scenario)
        self.steps: list[Step] = []
        self.traces: dict[int, dict[str, Any]] = {}
        self.clock: list[float] = []
        self.user_text = [*user_messages(scenario), *(user_requests(instruction(scenario)) if is_multi_turn(scenario) else [])]

    def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        if tool not in self.catalog:
            raise UnsolvableError(f"the hidden goals need {tool}, which the scenario does not offer its agent")
        if not is_offline_tool(self.scenario, tool):
            raise UnsolvableError(f"needs the RapidAPI tool {tool}, which fails offline")
        outcome = self.world.call(tool, arguments)
        if not outcome.ok:
            raise UnsolvableError(f"{tool}({arguments}) fails in the scenario's world: {outcome.error}")
        result = outcome.result
        if tool in CLOCK_TOOLS:  # played later than tried: predict the moment it is played
            result = self.now + LEAD + PER_STEP * len(self.steps)
            self.clock.append(result)
        self.steps.append(calling(Call(self.catalog[tool], tool, arguments)))
        return result

    def _filled(self, fill_ref: int, extractor: Any) -> dict[str, Any]:
        trace = self.traces.get(fill_ref)
        values = extractor(trace) if trace is not None else []
        if not values:
            raise UnsolvableError(f"no value to take from milestone {fill_ref}'s result")
        return dict(values[0])

    def _grounded(self) -> str:
        seen = [*self.user_text, *(json.dumps(t.get("result"), default=str) for t in self.traces.values())]
        return "\n".join(seen)

    def _needed(self, later: list[StateGoal], messages: list[MessageGoal]) -> str:
        texts = [json.dumps(g.rows, default=str) for g in later]
        texts += [t.text for g in messages for t in (*g.exact, *g.contains)]
        return "\n".join(texts)

    def call_goal(self, m: HiddenMilestone, goal: CallGoal, later: list[StateGoal], messages: list[MessageGoal]) -> None:
        filled: dict[str, Any] = {}
        for f in goal.fills:
            filled.update(self._filled(f.ref, f.extractor))
        reasons = []
        for tool, golden in goal.alternatives:
            args = complete_arguments(self.world, tool, {**golden, **filled}, later)
            if isinstance(args, str) or tool not in self.catalog or not is_offline_tool(self.scenario, tool):
                reasons.append(args if isinstance(args, str) else f"{tool} is not offered to the agent or needs the network")
                continue
            candidates = [args, *({**criteria, **args} for criteria in search_criteria(self.world, tool, later, self._grounded()))]
            runs = [(c, o) for c in candidates if (o := self.world.probe(tool, c)).ok]
            if not runs:
                reasons.append(f"{tool}({args}) fails: {self.world.probe(tool, args).error}")
                continue
            needed = self._needed(later, messages)
            useful = [c for c, o in runs if _mentions(o.result, needed)]
            chosen = (useful or [runs[0][0]])[0]
            result = self._call(tool, chosen)
            self.traces[m.index] = {"tool_name": tool, "arguments": chosen, "result": result}
            return
        raise UnsolvableError(f"milestone {m.index}: no hidden trace can be played ({'; '.join(reasons)})")

    def _text(self, t: Text) -> str:
        return t.text.format(**self._filled(t.fill.ref, t.fill.extractor)) if t.fill else t.text

    def message_goal(self, goal: MessageGoal) -> None:
        exact = {self._text(t) for t in goal.exact}
        contains = [self._text(t) for t in goal.contains]
        if len(exact) > 1:
            raise UnsolvableError(f"one message must equal two different texts: {sorted(exact)}")
        text = next(iter(exact)) if exact else contains[0]
        missing = [c for c in contains if c not in text]
        if missing:
            raise UnsolvableError(f"the message {text!r} must also contain {missing}")
        self.steps.append(say(text))

    def solve(self) -> KnownScript:
        task = read_hidden(self.scenario)
        if task.unsupported:
            raise UnsolvableError("; ".join(task.unsupported))
        order = plan_order(task)
        if order is None:
            raise UnsolvableError("no order of the hidden milestones keeps ToolSandbox's guardrails")
        by_index = {m.index: m for m in task.milestones}
        if is_multi_turn(self.scenario):
            self.steps.append(say(CLARIFY))
        for n, i in enumerate(order):
            m = by_index[i]
            later = [g for j in order[n:] for g in by_index[j].goals if isinstance(g, StateGoal)]
            messages = [g for j in order[n:] for g in by_index[j].goals if isinstance(g, MessageGoal)]
            for goal in sorted(m.goals, key=lambda g: (not isinstance(g, StateGoal), isinstance(g, MessageGoal))):
                if isinstance(goal, StateGoal):
                    calls = state_calls(goal, self.world)
                    if isinstance(calls, str):
                        raise UnsolvableError(f"milestone {i} has {calls}")
                    for tool, args in calls:
                        self._call(tool, args)
                elif isinstance(goal, CallGoal):
                    self.call_goal(m, goal, later, messages)
                else:
                    self.message_goal(goal)
        if not self.steps or self.steps[-1].say is None or self.steps[-1].say == CLARIFY:
            insufficient = ScenarioCategories.INSUFFICIENT_INFORMATION in self.scenario.categories
            self.steps.append(say(DECLINE if insufficient and not task.milestones else CLOSING))
        user = tuple(user_requests(instruction(self.scenario))) if is_multi_turn(self.scenario) else ()
        return KnownScript(self.name, tuple(self.steps), user, tuple(self.clock))


def clean_solver(name: str, scenario: Scenario, now: float | None = None) -> KnownScript | Skip:
    """The clean scripted solver of a scenario, or why there is none.

    Args:
        name: The scenario's name.
        scenario: The scenario (its hidden evaluation is read; nothing is played).
        now: The wall-clock time the script is generated at (default: now); scripts that
            pass on a ``get_current_timestamp`` result are valid for about a second after it.
    """
    try:
        return _Builder(name, scenario, time.time() if now is None else now).solve()
    except UnsolvableError as exc:
        return Skip(name, str(exc))
