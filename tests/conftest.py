"""Suite-wide fixtures. Builders live in ``builders.py``."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator

import pytest
import structlog
from fake_llm import PRICE_IN, PRICE_OUT, FakeLLMServer

from dynsteer_hook import cli


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
