"""What the models of one rollout spent, per role: calls, prompt and completion tokens, dollars.

A role is the agent, the user simulator or the judges. Each figure is a sum over the role's
calls with a flag saying whether every call told it: a provider that sends no usage block
leaves the tokens unknown, a model litellm has no price for leaves the dollars unknown, and a
role that does not count its calls at all (ToolSandbox's own LLM roles) leaves everything
unknown. The report shows an unknown figure as null, never 0; a budget counts only what is
known. Pure values: no litellm, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dynsteer_hook.model.records import CostRecord, RoleCost

ROLES: tuple[str, ...] = ("agent", "user", "judges")
"""The roles a rollout's cost is told by, in report order."""


@dataclass(frozen=True, slots=True)
class Spend:
    """What one role spent so far; a figure whose ``*_known`` flag is false is a lower bound (the known part)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls_known: bool = True
    tokens_known: bool = True
    cost_known: bool = True

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens known so far."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.calls + other.calls, self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens, self.cost_usd + other.cost_usd,
                     self.calls_known and other.calls_known, self.tokens_known and other.tokens_known,
                     self.cost_known and other.cost_known)

    def record(self, model: str | None = None) -> RoleCost:
        """The report's record: each figure, or None where a call did not tell it."""
        return RoleCost(model=model, calls=self.calls if self.calls_known else None,
                        prompt_tokens=self.prompt_tokens if self.tokens_known else None,
                        completion_tokens=self.completion_tokens if self.tokens_known else None,
                        cost_usd=round(self.cost_usd, 6) if self.cost_known else None)


UNKNOWN = Spend(calls_known=False, tokens_known=False, cost_known=False)
"""A role that is a model but does not say what it spent."""


def total(spent: Mapping[str, Spend]) -> Spend:
    """Every role's spending added up."""
    out = Spend()
    for s in spent.values():
        out = out + s
    return out


def cost_record(spent: Mapping[str, Spend], models: Mapping[str, str | None]) -> CostRecord:
    """The report's cost block: each role that spent or is a model, and the total."""
    order = [r for r in ROLES if r in spent] + sorted(r for r in spent if r not in ROLES)
    return CostRecord(roles={r: spent[r].record(models.get(r)) for r in order}, total=total(spent).record())
