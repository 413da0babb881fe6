"""The gates for CI, as values: what they measure (the mean over judged scenarios, the halts over the played ones), the
verdict and by how much it misses, the one sentence of the failed ones, and bars refused before anything runs."""

from __future__ import annotations

import argparse

import pytest

from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.report.gates import (
    EXIT_GATE,
    Gates,
    Measures,
    add_gate_flags,
    check_gates_judge_dynsteer,
    failure_sentence,
    gates_from_args,
    judge_gates,
    measure,
    summary_line,
)


def test_the_mean_leaves_out_crashed_and_interrupted_scenarios_and_the_rate_counts_halts_over_the_played() -> None:
    """As the run page counts: a crash is played but not judged; an interrupted scenario is neither; a halt is both."""
    m = measure([("completed", 1.0, False), ("halted", 0.2, True), ("crashed", 0.0, False), ("interrupted", None, False),
                 ("incomplete", 0.6, False)])
    assert (m.scenarios, m.halted) == (4, 1)
    assert m.mean_score == pytest.approx(0.6) and m.halt_rate == pytest.approx(0.25)


def test_nothing_played_measures_nothing() -> None:
    m = measure([("interrupted", None, False)])
    assert (m.scenarios, m.mean_score, m.halt_rate) == (0, None, None)


@pytest.mark.parametrize(("gates", "measures", "passed", "words"), [
    (Gates(fail_under=0.8), Measures(10, 0, 0.8), [True], "the mean dynsteer score 0.800 meets --fail-under 0.8"),
    (Gates(fail_under=0.8), Measures(10, 0, 0.75), [False], "the mean dynsteer score 0.750 is 0.050 under --fail-under 0.8"),
    (Gates(fail_under=0.8), Measures(10, 0, 0.79999), [False], "is 1e-05 under --fail-under 0.8"),
    (Gates(fail_under=0.8), Measures(3, 0, None), [False], "no scenario was judged"),
    (Gates(max_halt_rate=0.2), Measures(10, 2, 0.5), [True], "the halt rate 0.200 (2 of 10 scenario(s) halted) meets --max-halt-rate 0.2"),
    (Gates(max_halt_rate=0.2), Measures(10, 5, 0.5), [False], "the halt rate 0.500 (5 of 10 scenario(s) halted) is 0.300 over"),
    (Gates(max_halt_rate=0.2), Measures(0, 0, None), [False], "no scenario was played"),
    (Gates(0.9, 0.0), Measures(4, 1, 0.95), [True, False], "is 0.250 over --max-halt-rate 0"),
])
def test_each_gate_says_what_it_measured_and_by_how_much_it_misses(gates: Gates, measures: Measures, passed: list[bool], words: str) -> None:
    judged = judge_gates(gates, measures)
    assert [j.passed for j in judged] == passed
    assert any(words in j.words for j in judged), [j.words for j in judged]


def test_the_regression_gate_names_the_worst_scenario() -> None:
    """--fail-on-regression fails on any worse scenario and names the worst, its drop and both scores."""
    [ok] = judge_gates(Gates(fail_on_regression=True), Measures(3, 0, 1.0), worse=[], shared=3)
    assert ok.passed and ok.words == "none of the 3 shared scenario(s) scores lower in RUN_B than in RUN_A"
    [bad] = judge_gates(Gates(fail_on_regression=True), Measures(3, 0, 1.0), worse=[("a\nb", 1.0, 0.25), ("c", 0.5, 0.4)], shared=3)
    assert not bad.passed and bad.value == 2
    assert bad.words == "2 of 3 shared scenario(s) score lower in RUN_B than in RUN_A, against --fail-on-regression (the worst, 'a\\nb', by 0.750: 1.000 -> 0.250)"


def test_failed_gates_make_one_sentence_and_every_verdict_one_line() -> None:
    judged = judge_gates(Gates(0.9, 0.1), Measures(4, 2, 0.5))
    sentence = failure_sentence(judged)
    assert sentence is not None and sentence.count("\n") == 0
    assert sentence.startswith("dynsteer: 2 gates failed: the mean dynsteer score 0.500 is 0.400 under --fail-under 0.9; the halt rate")
    assert sentence.endswith("; every file was written")
    assert summary_line(judged) == ("gates: FAILED: the mean dynsteer score 0.500 is 0.400 under --fail-under 0.9; FAILED: the halt rate "
                                    "0.500 (2 of 4 scenario(s) halted) is 0.400 over --max-halt-rate 0.1")
    assert failure_sentence(judge_gates(Gates(0.1), Measures(4, 2, 0.5))) is None and summary_line([]) is None
    assert EXIT_GATE == 3


@pytest.mark.parametrize("argv", [["--fail-under", "1.01"], ["--fail-under", "-0.1"], ["--max-halt-rate", "inf"], ["--max-halt-rate", "nan"]])
def test_a_bar_outside_zero_to_one_is_one_sentence(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    add_gate_flags(parser)
    with pytest.raises(DynsteerError, match=r"must be a number from 0 to 1"):
        gates_from_args(parser.parse_args(argv))


def test_flags_become_gates_and_gates_need_dynsteer_scores() -> None:
    parser = argparse.ArgumentParser()
    add_gate_flags(parser, regression=True)
    gates = gates_from_args(parser.parse_args(["--fail-under", "0.7", "--max-halt-rate", "0", "--fail-on-regression"]))
    assert gates == Gates(0.7, 0.0, True) and gates.any and not Gates().any
    check_gates_judge_dynsteer(gates, "dynsteer")
    check_gates_judge_dynsteer(Gates(), "native")
    with pytest.raises(DynsteerError, match="drop --evaluator native, or drop the gates"):
        check_gates_judge_dynsteer(gates, "native")
