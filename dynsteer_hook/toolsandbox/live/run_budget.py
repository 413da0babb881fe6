"""The run's budget (``dynsteer run --run-max-cost USD``): once the scenarios that came back have spent it, no further
scenario starts.

The parent adds up what each finished scenario's models spent (agent, user simulator, judges: the known dollars of its
cost record) in the order the results come back; once the sum
reaches the budget the engines hand out no further scenario (``engines.Closing``: then one scenario per free worker,
each handed out only once the results before it were added up). Scenarios already playing finish, so a run may end past
its budget by what they spend (``--max-cost`` bounds each of them). Each scenario left is recorded as
not started, with the reason; it has no files, and ``dynsteer_summary.json`` lists it under ``run_budget``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.live.engines import Closing
from dynsteer_hook.toolsandbox.live.results import ScenarioResult

from tool_sandbox.common.scenario import Scenario

LEFT = "the run's budget was spent (--run-max-cost)"
"""Why a scenario the budget kept from starting was not played (its record's ``not_started``)."""


def known_cost(result: Mapping[str, Any]) -> float:
    """The dollars a scenario's models are known to have spent (a role whose price is unknown adds 0; a scenario without
    a cost record, one not started or whose evaluator failed, adds 0)."""
    d = result.get("dynsteer")
    cost = d.get("cost") if isinstance(d, Mapping) else None
    roles = cost.get("roles") if isinstance(cost, Mapping) else None
    if not isinstance(roles, Mapping):
        return 0.0
    return sum(float(r.get("cost_usd") or 0.0) for r in roles.values() if isinstance(r, Mapping))


class RunBudget:
    """Told each finished scenario's result, says whether the run has spent ``max_cost_usd`` dollars."""

    def __init__(self, max_cost_usd: float) -> None:
        self.max_cost_usd = max_cost_usd
        self.spent = 0.0
        self.finished = 0

    def __call__(self, result: Mapping[str, Any]) -> bool:
        self.spent += known_cost(result)
        self.finished += 1
        return self.spent >= self.max_cost_usd

    def closing(self) -> Closing:
        """The engines' rule: start nothing once the budget is spent; a scenario left is ``left(item)``."""
        return Closing(until=self, skipped=left)



def left(item: tuple[str, Scenario]) -> dict[str, Any]:
    """The record of a scenario the run's budget kept from starting."""
    name, scenario = item
    return ScenarioResult.left(name, scenario.categories, LEFT).record()


def budget_block(max_cost_usd: float, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``run_budget`` block of the run's summaries: the budget, what the run spent, the scenarios it left."""
    spent = sum(known_cost(r) for r in results)
    names = sorted(r["name"] for r in results if r.get("not_started") == LEFT)
    return {"max_cost_usd": max_cost_usd, "spent_usd": round(spent, 6), "not_started": names, "left": len(names)}


def sentence(block: Mapping[str, Any]) -> str | None:
    """One line for stderr when the budget kept scenarios from starting (None when it did not)."""
    if not block["left"]:
        return None
    return (f"dynsteer: the run spent ${block['spent_usd']:.4f} of its budget of ${block['max_cost_usd']:g} (--run-max-cost); "
            f"{block['left']} scenario(s) were left unplayed (e.g. {block['not_started'][0]}), listed under run_budget in "
            "dynsteer_summary.json")
