"""The plain-Python signed-rank test gives scipy's p-values (``metaeval.wilcoxon_p``) on every kind of paired sample:
few pairs (the exact distribution), many (the normal approximation), ties, zero differences, scores on a grid."""

from __future__ import annotations

import math
import random

import pytest

from dynsteer_hook.toolsandbox.offline.metaeval import wilcoxon_p
from dynsteer_hook.toolsandbox.offline.signed_rank import EXACT_UP_TO, signed_rank_p


def _sample(kind: str, n: int, rng: random.Random) -> tuple[list[float], list[float]]:
    if kind == "grid":  # scores on a coarse grid: many ties and zero differences
        return [rng.choice((0.0, 0.25, 0.5, 0.75, 1.0)) for _ in range(n)], [rng.choice((0.0, 0.25, 0.5, 0.75, 1.0)) for _ in range(n)]
    if kind == "distinct":  # six decimals, as the summaries write scores: no ties, no zeros
        return [round(rng.random(), 6) for _ in range(n)], [round(rng.random(), 6) for _ in range(n)]
    x = [round(rng.random(), 2) for _ in range(n)]  # shifted: most pairs equal, the rest moved by a few fixed steps
    return x, [v + rng.choice((0.0, 0.0, 0.1, -0.1, 0.2)) for v in x]


@pytest.mark.parametrize("kind", ["grid", "distinct", "shifted"])
@pytest.mark.parametrize("n", [1, 2, 5, 12, EXACT_UP_TO, EXACT_UP_TO + 1, 200, 1032])
def test_the_p_value_is_scipys(kind: str, n: int) -> None:
    """Thirty samples of each kind and size: the same p-value as scipy's test, or None where it has none."""
    rng = random.Random(f"{kind}-{n}")
    for _ in range(30):
        x, y = _sample(kind, n, rng)
        mine, scipys = signed_rank_p(x, y), wilcoxon_p(x, y)
        assert (mine is None) == (scipys is None), (x, y)
        assert mine is None or scipys is None or math.isclose(mine, scipys, rel_tol=1e-9, abs_tol=1e-12), (mine, scipys, x, y)


@pytest.mark.parametrize(("x", "y"), [([], []), ([0.5], [0.5]), ([0.1, 0.9, 1.0], [0.1, 0.9, 1.0])])
def test_nothing_to_test_is_none(x: list[float], y: list[float]) -> None:
    """No pairs, or no pair that differs: no p-value."""
    assert signed_rank_p(x, y) is None


def test_a_clear_shift_is_significant_and_symmetric() -> None:
    """Twenty scenarios that all dropped by about a half: a small p, the same either way round."""
    before = [0.9 + i / 1000 for i in range(20)]
    after = [0.4 + i / 700 for i in range(20)]
    p = signed_rank_p(before, after)
    assert p is not None and p < 1e-5 and p == signed_rank_p(after, before)
