"""The console, set up once for the command line and the worker processes it starts: logging and colour.

Library modules log through ``structlog.wrap_logger(logging.getLogger(__name__))``: their
lines reach the standard library's ``logging``, so a program that embeds the package and
configures nothing sees its warnings only (Python's last-resort handler) and never an
unrequested line on stdout. This is the one place that decides where the command line's log
lines go (stderr, human-readable), how much is shown, and whether anything is coloured:
only on a terminal, never when ``NO_COLOR`` is set (https://no-color.org) or ``TERM`` is
``dumb``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Any

import structlog

PACKAGE_LOGGER = "dynsteer_hook"


def use_colour(stream: Any) -> bool:
    """Whether text written to ``stream`` may be coloured: a terminal, no ``NO_COLOR``, not a dumb terminal."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):  # a closed stream
        return False


def paint(text: str, colour: str, enabled: bool) -> str:
    """``text`` in one of ``red``, ``yellow``, ``green``, ``bold``, ``dim`` when ``enabled`` (see ``use_colour``), else as it is."""
    if not enabled:
        return text
    code = {"red": "31", "yellow": "33", "green": "32", "bold": "1", "dim": "2"}[colour]
    return f"\x1b[{code}m{text}\x1b[0m"


class _Stderr(logging.Handler):
    """Writes each line to the standard error of the moment (a test's capture, a redirected stream)."""

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed standard error: the line is lost, the run goes on
            sys.stderr.write(self.format(record) + "\n")


def configure_logging(verbose: bool) -> None:
    """Configure the console of a command-line process: warnings and errors on stderr (everything with ``verbose``)."""
    level = logging.DEBUG if verbose else logging.WARNING
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.dev.ConsoleRenderer(colors=use_colour(sys.stderr)),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    # The package's loggers hand structlog's rendered lines to logging: one handler prints them, the level was filtered above.
    package = logging.getLogger(PACKAGE_LOGGER)
    package.handlers = [h for h in package.handlers if not isinstance(h, _Stderr)]
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("%(message)s"))
    package.addHandler(handler)
    package.setLevel(logging.DEBUG)
