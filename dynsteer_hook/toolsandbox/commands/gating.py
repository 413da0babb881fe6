"""The gates of ``run``, ``rerun``, ``replay`` and ``diff`` on the console: every verdict on standard output, the failed
ones in one sentence on stderr, and the exit status they give (``report.gates`` judges them)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dynsteer_hook.report.gates import EXIT_GATE, GateResult, Gates, Measures, failure_sentence, judge_gates, measure, summary_line


def row_measures(rows: Iterable[Mapping[str, Any]]) -> Measures:
    """The measures of a run page's rows (``report.run_page.run_rows`` or ``replay_rows``): a row with a stop was halted."""
    return measure((str(r["outcome"]), r["score"], bool(r["stop"])) for r in rows)


def verdicts(gates: Gates, measures: Measures, **regression: Any) -> list[GateResult]:
    """Judge the gates that are set and print their verdicts on standard output (nothing without gates)."""
    if not gates.any:
        return []
    judged = judge_gates(gates, measures, **regression)
    line = summary_line(judged)
    if line:
        print(line)
    return judged


def say_failed(judged: Sequence[GateResult]) -> bool:
    """Print the one sentence of the failed gates on stderr; whether any failed."""
    sentence = failure_sentence(judged)
    if sentence is None:
        return False
    sys.stdout.flush()
    print(sentence, file=sys.stderr)
    return True


def gated_status(judged: Sequence[GateResult], status: int) -> int:
    """The exit status once every file is written: ``status`` when it is not 0 (1, a scenario crashed, comes before a
    gate), else EXIT_GATE when a gate failed; the failed gates are said either way."""
    failed = say_failed(judged)
    return status or (EXIT_GATE if failed else 0)


def gates_of(args: argparse.Namespace, evaluator: str = "dynsteer") -> Gates:
    """The gates the flags ask for, checked before anything runs (``evaluator``: the run's, for which dynsteer's scores exist).

    Raises:
        DynsteerError: A bar out of range, or gates on a run dynsteer does not judge.
    """
    from dynsteer_hook.report.gates import check_gates_judge_dynsteer, gates_from_args

    gates = gates_from_args(args)
    check_gates_judge_dynsteer(gates, evaluator)
    return gates
