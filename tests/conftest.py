"""Suite-wide fixtures. Builders live in ``builders.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog

from dynsteer_hook import cli


@pytest.fixture(autouse=True)
def _isolated_structlog(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Keep the CLI's structlog configuration from leaking into later tests.

    ``cli.configure_logging`` caches loggers on first use and binds them to the
    ``sys.stderr`` of the moment (pytest's capture file), which later tests would find
    closed. In-process CLI calls keep the real configuration minus the caching, and
    every test ends with structlog's defaults.
    """
    real = cli.configure_logging

    def configure(verbose: bool) -> None:
        real(verbose)
        structlog.configure(cache_logger_on_first_use=False)

    monkeypatch.setattr(cli, "configure_logging", configure)
    yield
    structlog.reset_defaults()
