"""Fixtures for tests on real ToolSandbox scenarios (loaded once per session: ~10 s)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from dynsteer_hook.toolsandbox.live.runner import load_scenarios

import tool_sandbox.scenarios  # noqa: F401 - fail loudly, never skip, when ToolSandbox is missing

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # known_agents: test-side agents of known quality


@pytest.fixture(scope="session")
def scenarios() -> dict[str, Any]:
    """All 1032 ToolSandbox scenarios, seeded as ToolSandbox's CLI seeds them."""
    return load_scenarios(None)
