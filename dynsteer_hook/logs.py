"""structlog configured once, for the command line and the worker processes it starts.

Library modules only ``structlog.get_logger(__name__).bind(...)``; this is the one place
that decides where log lines go (stderr, human-readable) and how much is shown.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(verbose: bool) -> None:
    """Configure structlog for a command-line process: warnings and errors on stderr (everything with ``verbose``)."""
    level = logging.DEBUG if verbose else logging.WARNING
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
