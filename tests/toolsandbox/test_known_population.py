"""The rule that chooses the base scenarios of bench_compare's population (scripts/known_quality/population.py):
every selected fault kind carries its variant on as many chosen scenarios as the candidates allow, scenarios whose
clean solver ToolSandbox does not score 1.0 are skipped with the reason, and the rule sees nothing but the ground truth.
"""

from __future__ import annotations

import pytest
from known_quality.population import choose_balanced, plays_fault, scan_order

pytestmark = pytest.mark.toolsandbox

CALLS = frozenset({"repeat", "malformed", "loop"})
MINE = frozenset({"minefield"})
KINDS = ("repeat", "malformed", "loop", "minefield")


def _pool(calls: int, mines: int, neither: int) -> dict[str, frozenset[str]]:
    """Scenarios where the call faults can be built, where only a minefield can, and where none can."""
    return {**{f"c{i:02d}": CALLS for i in range(calls)}, **{f"m{i:02d}": MINE for i in range(mines)},
            **{f"z{i:02d}": frozenset() for i in range(neither)}}


def test_scan_order_starts_with_the_stride_sample_and_an_offset_starts_elsewhere() -> None:
    names = [f"s{i:02d}" for i in range(95)]
    order = scan_order(names, 24)
    assert sorted(order) == names
    assert order[:24] == names[::3][:24]
    other = scan_order(names, 24, offset=1)
    assert sorted(other) == names and other[:24] == names[1::3][:24]


def test_kinds_on_disjoint_scenarios_carry_their_variant_equally() -> None:
    """Minefields and call faults never share a scenario: half the chosen scenarios carry each; none-buildable ones are left out."""
    able = _pool(30, 10, 4)
    asked: list[str] = []
    choice = choose_balanced(scan_order(list(able), 12), able, KINDS, 12, lambda n: asked.append(n) or None)
    assert len(choice.chosen) == 12 and asked == choice.chosen
    assert choice.carried == {"repeat": 6, "malformed": 6, "loop": 6, "minefield": 6}
    assert sorted(choice.no_variant) == [f"z{i:02d}" for i in range(4)] and not choice.skipped


def test_a_clean_solver_not_scoring_one_is_skipped_and_replaced() -> None:
    able = _pool(10, 10, 0)
    refused = {"m00", "c01"}
    choice = choose_balanced(sorted(able), able, KINDS, 6, lambda n: "not 1.0" if n in refused else None)
    assert choice.skipped == dict.fromkeys(refused, "not 1.0") and choice.reasons() == {"not 1.0": 2}
    assert len(choice.chosen) == 6 and not refused & set(choice.chosen)
    assert choice.carried["minefield"] == 3 and choice.carried["repeat"] == 3


def test_an_exhausted_kind_leaves_the_rest_to_the_others() -> None:
    able = _pool(10, 2, 0)
    choice = choose_balanced(sorted(able), able, KINDS, 8, lambda n: None)
    assert choice.carried == {"repeat": 6, "malformed": 6, "loop": 6, "minefield": 2}
    assert len(choose_balanced(sorted(able), able, KINDS, 50, lambda n: None).chosen) == 12  # fewer candidates than asked


def test_only_selected_kinds_count() -> None:
    able = _pool(10, 10, 0)
    choice = choose_balanced(sorted(able), able, ("repeat", "loop"), 6, lambda n: None)
    assert all(n.startswith("c") for n in choice.chosen) and len(choice.no_variant) == 10


def test_faults_are_played_on_a_share_of_the_buildable_scenarios_a_different_subset_per_agent() -> None:
    able = _pool(12, 12, 0)
    chosen = sorted(able)
    subsets = [plays_fault(chosen, able, "repeat", j, 0.75) for j in range(3)]
    assert all(abs(len(s) - 9) <= 1 and all(n.startswith("c") for n in s) for s in subsets)  # 3/4 of 12, by twentieths
    assert len({frozenset(s) for s in subsets}) == 3
    assert plays_fault(chosen, able, "minefield", 3, 1.0) == {n for n in chosen if n.startswith("m")}
    assert plays_fault(chosen, able, "minefield", 3, 0.0) == set()
