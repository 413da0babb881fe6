"""Meta-evaluation statistics: DS(eps) of eq. 10, paired tests, spread over repeats, Table 3."""

from __future__ import annotations

import pytest

from dynsteer_hook.toolsandbox.offline.metaeval import (
    PairTest,
    all_pairs,
    discriminability,
    kendall_tau,
    repeat_spread,
    saturation,
    stop_table,
    wilcoxon_p,
)


def _test(significant: bool, beyond: bool = True) -> PairTest:
    return PairTest("a", "b", 0.0, 0.0, 10, 0.001 if significant else 0.5, beyond, significant)


def test_ds_is_the_coefficient_of_variation_times_the_separated_share() -> None:
    """With the paper's DynSTEER means (sigma 0.0345 over mu 0.6892, 6 of 6 pairs) DS is 0.0500."""
    means = {"flash": 0.7338, "pro": 0.7111, "max": 0.6503, "plus": 0.6615}
    ds = discriminability(means, [_test(True)] * 6)
    assert ds.pairs == 6 and ds.significant == 6
    assert ds.mu == pytest.approx(0.6892, abs=1e-4) and ds.sigma_pop == pytest.approx(0.0345, abs=2e-4)
    assert ds.ds == pytest.approx(0.0500, abs=3e-4)
    assert discriminability(means, [_test(True)] * 3 + [_test(False)] * 3).ds == pytest.approx(ds.ds / 2)


def test_a_pair_needs_the_margin_and_the_test() -> None:
    """A pair is separated only when its means differ by more than eps and the paired test rejects equality."""
    keys = [(f"task{i}", 0) for i in range(12)]
    scores = {
        "good": {k: 0.9 + 0.001 * i for i, k in enumerate(keys)},
        "bad": {k: 0.5 + 0.002 * i for i, k in enumerate(keys)},
        "same": {k: 0.9 + 0.001 * i + 0.0001 for i, k in enumerate(keys)},
    }
    tests = {(t.a, t.b): t for t in all_pairs(scores, eps=0.01, alpha=0.01)}
    assert tests[("bad", "good")].significant and tests[("bad", "good")].paired == 12
    assert not tests[("good", "same")].beyond_margin and not tests[("good", "same")].significant


def test_wilcoxon_is_undefined_without_differences() -> None:
    """Identical paired scores give no p-value (the test cannot reject anything)."""
    assert wilcoxon_p([0.5, 0.7], [0.5, 0.7]) is None
    p = wilcoxon_p([1.0] * 10, [0.0] * 10)
    assert p is not None and p < 0.01


def test_spread_and_saturation() -> None:
    """Mean and sample std over repeats; saturation is the share of exact 1.0 scores."""
    assert repeat_spread([0.5]) == (0.5, 0.0)
    mean, std = repeat_spread([0.4, 0.6])
    assert mean == pytest.approx(0.5) and std == pytest.approx(0.1414, abs=1e-4)
    assert saturation([1.0, 1.0, 0.5, 0.0]) == 0.5 and saturation([]) == 0.0


def test_kendall_tau_compares_rankings() -> None:
    """The same order gives 1, the reverse -1, fewer than two agents nothing."""
    assert kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 10, "b": 20, "c": 30}) == pytest.approx(1.0)
    assert kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 2, "c": 1}) == pytest.approx(-1.0)
    assert kendall_tau({"a": 1}, {"a": 2}) is None


def test_stop_table_groups_by_criterion() -> None:
    """Table 3: halted runs, unique tasks and mean progress per criterion, and over all."""
    stops = [
        {"reason": "low_score", "task": "t1", "stop_progress": 0.5, "saved_progress": 0.5},
        {"reason": "low_score", "task": "t1", "stop_progress": 0.25, "saved_progress": 0.75},
        {"reason": "fatal_minefield", "task": "t2", "stop_progress": 1.0, "saved_progress": 0.0},
    ]
    table = stop_table(stops)
    assert table["low_score"] == {"halted_runs": 2, "unique_tasks": 1, "mean_stop_progress": 0.375, "mean_saved_progress": 0.625}
    assert table["all"]["halted_runs"] == 3 and table["all"]["unique_tasks"] == 2
    assert stop_table([]) == {}


def test_the_paired_test_prints_no_scipy_note() -> None:
    """A sample too small for scipy's normal approximation gives its p-value, and no warning reaches the console."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = wilcoxon_p([1, 0.5, 0, 1, 0.2], [0.5, 0.5, 0, 0.2, 0.2])
    assert p == pytest.approx(0.1797, abs=1e-4)
    assert caught == []
