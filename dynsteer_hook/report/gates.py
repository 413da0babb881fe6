"""Gates for CI: a run, a replay or a diff that is written whole but does not meet a bar ends with exit status 3.

``--fail-under SCORE`` asks for a mean dynsteer score of at least SCORE, ``--max-halt-rate RATE`` for at most that share
of halted scenarios (virtual stops, in a replay), and ``--fail-on-regression`` (``diff`` only) for no shared scenario
scoring lower after than before. A gate is judged once every file is written, so a failed gate loses nothing; the
command then says, in one sentence on stderr, which gate failed and by how much. Exit 1 stays "a scenario crashed"
and 2 "bad input": when a scenario crashed the status is 1 whatever the gates say (scores with a crash among them are
no result to trust), though the failed gates are still said.

The measures are the ones the run page and the summaries show: the mean over the scenarios that were judged (crashed
and interrupted ones are not), and the halts over every scenario played. Pure: values in, values out; the commands
print the sentence.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dynsteer_hook.model.errors import DynsteerError

__all__ = ["EXIT_GATE", "GateResult", "Gates", "Measures", "add_gate_flags", "check_gates_judge_dynsteer", "failure_sentence", "gates_from_args",
           "judge_gates", "measure", "summary_line"]

EXIT_GATE = 3
"""Exit status of a command whose outputs were all written but whose gate failed."""
UNJUDGED = ("crashed", "interrupted")
"""Outcomes left out of the mean score, as the run page and the summaries leave them out."""


@dataclass(frozen=True, slots=True)
class Gates:
    """The bars a command's result must meet (None or False: no such gate)."""

    fail_under: float | None = None
    max_halt_rate: float | None = None
    fail_on_regression: bool = False

    @property
    def any(self) -> bool:
        """Whether any gate is set."""
        return self.fail_under is not None or self.max_halt_rate is not None or self.fail_on_regression


@dataclass(frozen=True, slots=True)
class Measures:
    """What the gates look at in one run.

    Attributes:
        scenarios: Scenarios played (interrupted ones are not).
        halted: Of them, how many were halted (or stopped virtually, in a replay).
        mean_score: The mean dynsteer score of the judged scenarios, None when none was judged.
    """

    scenarios: int
    halted: int
    mean_score: float | None

    @property
    def halt_rate(self) -> float | None:
        """Halted scenarios over the scenarios played, None when none was played."""
        return self.halted / self.scenarios if self.scenarios else None


@dataclass(frozen=True, slots=True)
class GateResult:
    """One gate's verdict.

    Attributes:
        flag: The flag that set it.
        limit: Its bar (None for ``--fail-on-regression``).
        value: What was measured (None when nothing could be).
        passed: Whether the result meets the bar.
        words: The verdict as a clause: what was measured and, for a failure, by how much it misses the bar.
    """

    flag: str
    limit: float | None
    value: float | None
    passed: bool
    words: str


def add_gate_flags(p: argparse.ArgumentParser, *, regression: bool = False, side: str = "") -> None:
    """Declare ``--fail-under`` and ``--max-halt-rate`` (and ``--fail-on-regression`` with ``regression``) on ``p``."""
    of = f" of {side}" if side else ""
    group = p.add_argument_group("gates for CI (exit status 3 when one fails, once every file is written)")
    group.add_argument("--fail-under", type=float, default=None, metavar="SCORE",
                       help=f"fail when the mean dynsteer score{of} is below SCORE (0 to 1)")
    group.add_argument("--max-halt-rate", type=float, default=None, metavar="RATE",
                       help=f"fail when the share of halted scenarios{of} (virtual stops in a replay) is above RATE (0 to 1)")
    if regression:
        group.add_argument("--fail-on-regression", action="store_true",
                           help="fail when any scenario both runs hold scores lower in RUN_B than in RUN_A")


def gates_from_args(args: argparse.Namespace) -> Gates:
    """The gates a command's flags ask for (none when the command has no gate flags), checked before anything is read.

    Raises:
        DynsteerError: A bar that is no number from 0 to 1 (one sentence naming the flag).
    """
    gates = Gates(getattr(args, "fail_under", None), getattr(args, "max_halt_rate", None), bool(getattr(args, "fail_on_regression", False)))
    for flag, value, what in (("--fail-under", gates.fail_under, "a mean dynsteer score"), ("--max-halt-rate", gates.max_halt_rate,
                                                                                           "a share of the scenarios")):
        if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise DynsteerError(f"{flag} {value:g} must be a number from 0 to 1 ({what})")
    return gates


def check_gates_judge_dynsteer(gates: Gates, evaluator: str) -> None:
    """Refuse gates on a run that dynsteer does not judge (``--evaluator native``): there is no dynsteer score to gate on.

    Raises:
        DynsteerError: One sentence naming the flags and the fix.
    """
    if gates.any and evaluator != "dynsteer":
        raise DynsteerError("--fail-under and --max-halt-rate judge dynsteer's scores and halts: drop --evaluator native, or drop the gates")


def measure(items: Iterable[tuple[str, float | None, bool]]) -> Measures:
    """The measures of a run from each scenario's (outcome, dynsteer score, halted)."""
    scenarios = halted = 0
    scores: list[float] = []
    for outcome, score, stopped in items:
        if outcome == "interrupted":
            continue
        scenarios += 1
        halted += bool(stopped)
        if score is not None and outcome not in UNJUDGED:
            scores.append(score)
    return Measures(scenarios, halted, math.fsum(scores) / len(scores) if scores else None)


def _by(amount: float) -> str:
    """A difference as the sentence shows it: three decimals, more when it is smaller than that."""
    return f"{amount:.3f}" if amount >= 0.0005 else f"{amount:.2g}"


def _score_gate(limit: float, mean: float | None) -> GateResult:
    flag = "--fail-under"
    if mean is None:
        return GateResult(flag, limit, None, False, f"no scenario was judged, so no mean dynsteer score can reach {flag} {limit:g}")
    if mean < limit:
        return GateResult(flag, limit, mean, False, f"the mean dynsteer score {mean:.3f} is {_by(limit - mean)} under {flag} {limit:g}")
    return GateResult(flag, limit, mean, True, f"the mean dynsteer score {mean:.3f} meets {flag} {limit:g}")


def _halt_gate(limit: float, m: Measures) -> GateResult:
    flag = "--max-halt-rate"
    rate = m.halt_rate
    if rate is None:
        return GateResult(flag, limit, None, False, f"no scenario was played, so no halt rate can meet {flag} {limit:g}")
    share = f"the halt rate {rate:.3f} ({m.halted} of {m.scenarios} scenario(s) halted)"
    if rate > limit:
        return GateResult(flag, limit, rate, False, f"{share} is {_by(rate - limit)} over {flag} {limit:g}")
    return GateResult(flag, limit, rate, True, f"{share} meets {flag} {limit:g}")


def _regression_gate(worse: Sequence[tuple[str, float, float]], shared: int, before: str, after: str) -> GateResult:
    flag = "--fail-on-regression"
    if not worse:
        return GateResult(flag, None, 0, True, f"none of the {shared} shared scenario(s) scores lower in {after} than in {before}")
    name, a, b = worse[0]
    shown = name if len(name) <= 80 else name[:77] + "..."
    return GateResult(flag, None, len(worse), False, f"{len(worse)} of {shared} shared scenario(s) score lower in {after} than in "
                      f"{before}, against {flag} (the worst, {shown!r}, by {_by(a - b)}: {a:.3f} -> {b:.3f})")


def judge_gates(gates: Gates, m: Measures, *, worse: Sequence[tuple[str, float, float]] = (), shared: int = 0,
                before: str = "RUN_A", after: str = "RUN_B") -> list[GateResult]:
    """Every gate that is set, judged.

    Args:
        gates: The gates.
        m: The measures of the run judged (a diff's: RUN_B's).
        worse: A diff's shared scenarios that score lower after, worst first, as (name, before, after).
        shared: How many scenarios a diff pairs.
        before: How the sentence names the earlier run.
        after: How the sentence names the later run.
    """
    results: list[GateResult] = []
    if gates.fail_under is not None:
        results.append(_score_gate(gates.fail_under, m.mean_score))
    if gates.max_halt_rate is not None:
        results.append(_halt_gate(gates.max_halt_rate, m))
    if gates.fail_on_regression:
        results.append(_regression_gate(worse, shared, before, after))
    return results


def failure_sentence(results: Sequence[GateResult]) -> str | None:
    """The one sentence a command ends with on stderr when a gate failed (None when every gate passed)."""
    failed = [r for r in results if not r.passed]
    if not failed:
        return None
    which = "a gate failed" if len(failed) == 1 else f"{len(failed)} gates failed"
    return f"dynsteer: {which}: {'; '.join(r.words for r in failed)}; every file was written"


def summary_line(results: Sequence[GateResult]) -> str | None:
    """One line for standard output with every gate's verdict (None without gates)."""
    if not results:
        return None
    return "gates: " + "; ".join(f"{'passed' if r.passed else 'FAILED'}: {r.words}" for r in results)
