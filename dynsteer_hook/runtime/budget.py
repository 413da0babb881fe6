"""The budget stop: a rollout whose models (agent, user simulator, judges) spent more than allowed is halted.

``Budget`` is a stop rule like the others (``stop_rules``): it reads what every role spent so far from
the context (``StopContext.spending``) and decides ``budget`` once the dollars or the tokens exceed
their limit. The evaluator asks it after every closed action (the judges may have spent) and every
time a role reports its spending (``Evaluator.spent``, after each model turn of the agent or the user
simulator), so a rollout is stopped before the next model call, not at the next closed action. Only
what the providers told counts: a call whose tokens or dollars are unknown adds 0 to them.
"""

from __future__ import annotations

import math

from dynsteer_hook.model.errors import ConfigError
from dynsteer_hook.model.spending import total
from dynsteer_hook.runtime.stop_rules import StopContext, StopDecision, StopRule

REASON = "budget"


class Budget(StopRule):
    """Stops a rollout whose models spent more than ``max_cost_usd`` dollars or ``max_tokens`` tokens (None: no limit).

    Raises:
        ConfigError: A limit that is negative, NaN or infinite (one sentence).
    """

    def __init__(self, max_cost_usd: float | None = None, max_tokens: int | None = None) -> None:
        if max_cost_usd is not None and not (math.isfinite(max_cost_usd) and max_cost_usd >= 0):
            raise ConfigError(f"the budget's dollars {max_cost_usd} must be a finite number of at least 0")
        if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 0):
            raise ConfigError(f"the budget's tokens {max_tokens} must be a whole number of at least 0")
        self.max_cost_usd = max_cost_usd
        self.max_tokens = max_tokens

    def decide(self, ctx: StopContext) -> StopDecision | None:
        if not ctx.spending:
            return None
        spent = total(ctx.spending)
        if self.max_cost_usd is not None and spent.cost_usd > self.max_cost_usd:
            what = f"${spent.cost_usd:.6f} spent, over the budget of ${self.max_cost_usd:g} per rollout"
        elif self.max_tokens is not None and spent.tokens > self.max_tokens:
            what = f"{spent.tokens} tokens spent, over the budget of {self.max_tokens} per rollout"
        else:
            return None
        by_role = ", ".join(f"{role} ${s.cost_usd:.6f} / {s.tokens} tokens" for role, s in ctx.spending.items() if s.calls)
        return StopDecision(REASON, ctx.frontier_anchor, "efficiency", f"{what} ({by_role})", None)
