"""Bounds on one rollout: parallel calls per turn, a deadline for the whole rollout, and a budget for its models.

A turn of a thousand parallel calls takes ToolSandbox minutes to execute, and nothing inside
a turn is covered by the role's own timeout. So an agent's calls past the per-turn cap are
refused by the gate as malformed calls (the agent sees a tool error; the evaluator a refused
call, screened against the minefields like any other), and once the rollout deadline has
passed the conversation is ended before the next role speaks. Both are noted in the report. The budget is a
stop rule of the evaluator (``runtime.budget``): past it the rollout is halted, stop reason ``budget``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from dynsteer_hook.runtime.budget import Budget
from dynsteer_hook.runtime.stop_rules import StopRule, default_stop_rules
from dynsteer_hook.toolsandbox.calls import GatedCall, render_rejection

MAX_PARALLEL_CALLS = 32
"""Default cap on the calls one agent turn may make (``--max-parallel-calls``, ``DYNSTEER_RUN_MAX_PARALLEL_CALLS``)."""


@dataclass(frozen=True, slots=True)
class RolloutLimits:
    """The bounds of each rollout of a run (picklable).

    Attributes:
        max_parallel_calls: Calls one turn of a role may make; later ones are refused.
        deadline: Seconds a rollout may play before its conversation is ended (None: no deadline).
        max_cost_usd: Dollars the rollout's models (agent, user, judges) may spend before it is halted (None: no limit).
        max_tokens: Tokens the rollout's models may spend before it is halted (None: no limit).
    """

    max_parallel_calls: int = MAX_PARALLEL_CALLS
    deadline: float | None = None
    max_cost_usd: float | None = None
    max_tokens: int | None = None

    def stop_rules(self) -> tuple[StopRule, ...] | None:
        """The evaluator's stop rules with the budget, or None (the defaults) when the rollout has none."""
        if self.max_cost_usd is None and self.max_tokens is None:
            return None
        return (*default_stop_rules(), Budget(self.max_cost_usd, self.max_tokens))


@dataclass
class LimitTracker:
    """What one rollout's limits did: the calls refused past the cap, and whether the deadline ended it."""

    limits: RolloutLimits = field(default_factory=RolloutLimits)
    started: float = field(default_factory=time.monotonic)
    refused: int = 0
    turns_capped: int = 0
    deadline_hit: str | None = None

    def past_cap(self, verdict: GatedCall, position: int) -> GatedCall:
        """The refusal of a call that is the ``position``-th (1-based) of its turn, past the cap."""
        cap = self.limits.max_parallel_calls
        self.refused += 1
        if position == cap + 1:
            self.turns_capped += 1
        message = (f"call {position} of one turn is past the cap of {cap} parallel calls per turn; it was not run "
                   f"(send at most {cap} calls at a time)")
        sent = verdict.arguments.value if verdict.arguments.value is not None else verdict.arguments.raw
        suspects = (verdict.tool,) if verdict.tool else verdict.suspects
        return GatedCall(verdict.call_id, verdict.name, None, None, verdict.arguments, message, suspects,
                         render_rejection(verdict.call_id, "TypeError", message, sent))

    def overdue(self, agent_turns: int) -> bool:
        """Whether the deadline has passed (noted once, with the turns played)."""
        d = self.limits.deadline
        if d is None or self.deadline_hit is not None:
            return self.deadline_hit is not None
        if time.monotonic() - self.started < d:
            return False
        self.deadline_hit = (f"the rollout deadline of {d:g} s passed after {agent_turns} agent turn(s); the conversation "
                             "was ended there (--rollout-deadline)")
        return True

    def notes(self) -> tuple[str, ...]:
        """The report's sentences about what the limits did."""
        out = []
        if self.refused:
            out.append(f"{self.refused} call(s) in {self.turns_capped} turn(s) were past the cap of "
                       f"{self.limits.max_parallel_calls} parallel calls per turn and were refused as malformed "
                       "(--max-parallel-calls)")
        if self.deadline_hit:
            out.append(self.deadline_hit)
        return tuple(out)
