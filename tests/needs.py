"""Optional tools some tests need: skipped on a developer's machine that lacks them, a failure in CI.

``.ci/run`` sets ``DYNSTEER_REQUIRE_ALL=1`` after ``scripts/setup.sh`` has installed everything, so
a missing browser, model or library there is a broken set-up step, never a silent skip.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest


def unavailable(reason: str) -> NoReturn:
    """Skip the test (or, called at import, its whole module), or fail it when every optional tool is required (CI)."""
    if os.environ.get("DYNSTEER_REQUIRE_ALL") == "1":
        pytest.fail(f"{reason}; CI requires it (scripts/setup.sh installs it)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need_module(name: str, reason: str) -> ModuleType:
    """The imported module, or ``unavailable(reason)`` when it cannot be imported."""
    try:
        return importlib.import_module(name)
    except ImportError:
        unavailable(reason)
