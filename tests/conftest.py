"""Suite-wide fixtures. Builders live in ``builders.py``."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from fake_llm import PRICE_IN, PRICE_OUT, FakeLLMServer
from privileges import pyfunc_call

from dynsteer_hook import cli

# As the dynsteer command does (cli._one_polars_thread), before ToolSandbox imports polars: one worker per core runs the
# tests, and the subprocesses they start inherit the setting.
os.environ.setdefault("POLARS_MAX_THREADS", "1")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """Tests marked ``unprivileged`` run without root's power to ignore permission bits (privileges.py)."""
    return pyfunc_call(pyfuncitem)


# Tests that play real ToolSandbox scenarios or start Ray are slow whatever they assert (loading the scenarios alone takes ~10 s).
SLOW_FIXTURES = frozenset({"scenarios", "shipped_runs", "ray_instance"})
# Tests measured slow without such a fixture (tests/slow_tests.txt: one test id per line, without parameters).
MEASURED_SLOW = frozenset(line.strip() for line in (Path(__file__).parent / "slow_tests.txt").read_text(encoding="utf-8").splitlines()
                          if line.strip() and not line.startswith("#"))


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(d.scope in ("module", "class") for defs in info.name2fixturedefs.values() for d in defs)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark, group and order the tests for the fast subset (``-m "not slow"``) and parallel runs (``--dist loadgroup``).

    Tests using ``SLOW_FIXTURES`` or listed in ``slow_tests.txt`` are ``slow``. Tests of a module that share a module-scoped
    fixture (a set of rollouts, a model server) get one ``xdist_group`` per module, so that one
    worker builds the fixture once and runs them all. Modules with the most ``slow`` tests come
    first, each module's tests kept together (moving a test away from its module would build its
    module fixtures twice): the long ones start at once and the short ones fill the workers up at
    the end (``--no-loadscope-reorder`` keeps this order).
    """
    for item in items:
        measured = item.nodeid.split("[")[0] in MEASURED_SLOW
        if (measured or SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ()))) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("xdist_group") is None and _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    ordered = sorted(modules.values(), key=lambda group: -sum(i.get_closest_marker("slow") is not None for i in group))
    items[:] = [item for group in ordered for item in group]


@pytest.fixture(autouse=True)
def _isolated_structlog(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Keep the CLI's structlog configuration from leaking into later tests.

    ``cli.configure_logging`` caches loggers on first use and binds them to the
    ``sys.stderr`` of the moment (pytest's capture file), which later tests would find
    closed. In-process CLI calls keep the real configuration minus the caching, and
    every test ends with structlog's defaults and the package's logging as it found it.
    """
    real = cli.configure_logging

    def configure(verbose: bool) -> None:
        real(verbose)
        structlog.configure(cache_logger_on_first_use=False)

    monkeypatch.setattr(cli, "configure_logging", configure)
    package = logging.getLogger("dynsteer_hook")  # the CLI gives the package's logging a handler and a level too
    handlers, level = list(package.handlers), package.level
    yield
    structlog.reset_defaults()
    package.handlers[:] = handlers
    package.setLevel(level)


@pytest.fixture
def core_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``cli.main`` as a core-only install would: without the ToolSandbox subcommands.

    ``build_parser`` registers ``run``/``demo`` when ``dynsteer_hook.toolsandbox.commands.register`` imports,
    which loads ToolSandbox (seconds). The core suite tests ``evaluate``/``validate``/``schema``
    only; tests/toolsandbox covers the rest.
    """
    monkeypatch.setitem(sys.modules, "dynsteer_hook.toolsandbox.commands.register", None)


@pytest.fixture
def priced_model(monkeypatch: pytest.MonkeyPatch) -> str:
    """A model name with a price of our own in litellm's price map (PRICE_IN, PRICE_OUT), so no test hard-codes litellm's table."""
    from dynsteer_hook.llm import client as llm  # sets up litellm (its local price map) before the map is touched

    name = "dynsteer-priced-test-model"
    monkeypatch.setitem(llm.litellm.model_cost, name, {"input_cost_per_token": PRICE_IN, "output_cost_per_token": PRICE_OUT,
                                                       "litellm_provider": "openai", "mode": "chat"})
    return name


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (random free port), stopped after the test."""
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()
