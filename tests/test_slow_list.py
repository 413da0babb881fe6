"""How the suite is split and spread: tests/slow_tests.txt names tests that exist, so a renamed or removed test cannot leave
the list (and the fast subset) stale, and the groups of a parallel run reach pytest-xdist's scheduler."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def test_every_listed_slow_test_exists() -> None:
    """Each line names a test file under tests/ and a test function defined in it."""
    lines = [x.strip() for x in (TESTS / "slow_tests.txt").read_text(encoding="utf-8").splitlines() if x.strip() and not x.startswith("#")]
    assert lines, "the list is empty"
    for line in lines:
        path, _, name = line.partition("::")
        source = (TESTS.parent / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {re.escape(name)}\(", source, flags=re.M), f"{line}: no such test"


def test_the_xdist_groups_reach_the_scheduler(request: pytest.FixtureRequest) -> None:
    """Under ``--dist loadgroup`` every ``xdist_group`` (a module's shared fixtures, the one Ray instance) reaches pytest-xdist's
    scheduler, which reads it from the node id the worker gives the test: a pytest release that keeps the worker from
    changing node ids (pytest 9.2 with pytest-xdist 3.8) makes the scheduler ignore every group without a word, and each
    worker then builds the module fixtures again. Without ``--dist loadgroup`` (``-n 0``) there is nothing to check."""
    if not getattr(request.config.option, "loadgroup", False):
        return
    lost = [i.nodeid for i in request.session.items if i.get_closest_marker("xdist_group") is not None and "@" not in i.nodeid]
    assert not lost, f"{len(lost)} tests lost their xdist_group (e.g. {lost[0]}) with pytest {pytest.__version__}; see pyproject.toml"
