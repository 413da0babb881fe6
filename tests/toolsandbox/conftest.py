"""Fixtures for tests on real ToolSandbox scenarios (loaded once per session: ~10 s)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynsteer_hook.toolsandbox.live.runner import load_scenarios

import tool_sandbox.scenarios  # noqa: F401 - fail loudly, never skip, when ToolSandbox is missing

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # known_agents: test-side agents of known quality

from shipped_runs import ShippedRuns, shared_folder


@pytest.fixture(scope="session")
def scenarios() -> dict[str, Any]:
    """All 1032 ToolSandbox scenarios, seeded as ToolSandbox's CLI seeds them."""
    return load_scenarios(None)


@pytest.fixture(scope="session")
def shipped_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ShippedRuns:
    """The shipped scripts played by the scripted agent and user, live with dynsteer or natively, each once per test
    session (once across parallel workers too). Read only: a test that changes a run copies it first."""
    return ShippedRuns(shared_folder(tmp_path_factory, "shipped_runs"), lambda: request.getfixturevalue("scenarios"))


@pytest.fixture(scope="session")
def ray_instance() -> Iterator[Any]:
    """One local Ray instance for every Ray test of the session (``--engine ray`` joins an instance already running).

    Ray tests also carry ``xdist_group("ray")``, so that one worker starts it.
    """
    from needs import need_module

    ray: Any = need_module("ray", "Ray is optional: pip install 'dynsteer-hook[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()
