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
from typing import Any, Protocol

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


class LineOwner(Protocol):
    """Something drawn on the last line of standard error (a progress bar) that log lines must not overwrite."""

    def clear_line(self) -> None:
        """Erase the drawn line, leaving the cursor at its start."""

    def redraw(self) -> None:
        """Draw the line again."""


_LINE: list[LineOwner] = []
"""The line drawn on standard error in this process, if any (``hold_line``)."""


def hold_line(owner: LineOwner | None) -> None:
    """Say that ``owner`` draws the last line of standard error (None: nothing does): log lines then go above it."""
    _LINE[:] = [] if owner is None else [owner]


def write_stderr(text: str) -> None:
    """Write to the standard error of the moment, above the progress line if one is drawn (a closed stream loses the text)."""
    with contextlib.suppress(OSError, ValueError):  # a closed standard error: the line is lost, the run goes on
        owners = list(_LINE)
        for owner in owners:
            owner.clear_line()
        sys.stderr.write(text)
        for owner in owners:
            owner.redraw()


class _Console:
    """Standard error for structlog's printer: the stream of the moment, written through ``write_stderr``."""

    def write(self, text: str) -> None:
        write_stderr(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()


class _Stderr(logging.Handler):
    """Writes each line to the standard error of the moment (a test's capture, a redirected stream)."""

    def emit(self, record: logging.LogRecord) -> None:
        write_stderr(self.format(record) + "\n")


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
        logger_factory=structlog.PrintLoggerFactory(file=_Console()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    # The package's loggers hand structlog's rendered lines to logging: one handler prints them, the level was filtered above.
    package = logging.getLogger(PACKAGE_LOGGER)
    package.handlers = [h for h in package.handlers if not isinstance(h, _Stderr)]
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("%(message)s"))
    package.addHandler(handler)
    package.setLevel(logging.DEBUG)
