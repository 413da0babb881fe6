"""The budget flags of ``dynsteer run``: ``--max-cost`` and ``--max-tokens-per-rollout`` halt a rollout (stop reason
``budget``), ``--run-max-cost`` stops starting scenarios once the run has spent it. Bad values are one sentence."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from typing import Any

from dynsteer_hook.model.errors import DynsteerError


def add_budget_flags(p: argparse.ArgumentParser) -> None:
    """Declare the budget flags."""
    g = p.add_argument_group("budgets (agent, user simulator and judges together; only what the providers tell counts)")
    g.add_argument("--max-cost", type=float, default=None, metavar="USD",
                   help="dollars one rollout's models may spend; past it the rollout is halted (stop reason budget)")
    g.add_argument("--max-tokens-per-rollout", type=int, default=None, metavar="N",
                   help="tokens one rollout's models may spend; past them the rollout is halted (stop reason budget)")
    g.add_argument("--run-max-cost", type=float, default=None, metavar="USD",
                   help="dollars the whole run may spend; once spent no further scenario starts (those playing finish)")


def _dollars(value: float | None, flag: str) -> float | None:
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise DynsteerError(f"{flag} {value} must be a finite number of dollars, 0 or more")
    return value


def budget_limits(args: argparse.Namespace, limits: Any) -> Any:
    """``limits`` (``RolloutLimits``) with the rollout's budget from the flags, checked (one sentence when bad)."""
    max_cost = _dollars(args.max_cost, "--max-cost")
    tokens = args.max_tokens_per_rollout
    if tokens is not None and tokens < 0:
        raise DynsteerError(f"--max-tokens-per-rollout {tokens} must be a whole number of tokens, 0 or more")
    _dollars(args.run_max_cost, "--run-max-cost")
    if (max_cost is not None or tokens is not None or args.run_max_cost is not None) and args.evaluator != "dynsteer":
        raise DynsteerError("the budgets (--max-cost, --max-tokens-per-rollout, --run-max-cost) count what dynsteer records; "
                            "drop --evaluator native, or drop them")
    return dataclasses.replace(limits, max_cost_usd=max_cost, max_tokens=tokens)


def say_left(results: list[dict[str, Any]], run_max_cost: float | None) -> None:
    """One sentence on stderr when the run's budget kept scenarios from starting."""
    if run_max_cost is None:
        return
    from dynsteer_hook.toolsandbox.live.run_budget import budget_block, sentence

    said = sentence(budget_block(run_max_cost, results))
    if said:
        print(said, file=sys.stderr)
