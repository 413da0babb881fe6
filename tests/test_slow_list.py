"""tests/slow_tests.txt names tests that exist, so a renamed or removed test cannot leave the list (and the fast subset) stale."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_listed_slow_test_exists() -> None:
    """Each line names a test file under tests/ and a test function defined in it."""
    lines = [x.strip() for x in (TESTS / "slow_tests.txt").read_text(encoding="utf-8").splitlines() if x.strip() and not x.startswith("#")]
    assert lines, "the list is empty"
    for line in lines:
        path, _, name = line.partition("::")
        source = (TESTS.parent / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {re.escape(name)}\(", source, flags=re.M), f"{line}: no such test"
