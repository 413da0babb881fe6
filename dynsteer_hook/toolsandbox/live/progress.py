"""What a run shows while it plays: one line of progress over all its scenarios, on stderr.

On a terminal it is one bar rewritten in place (scenarios done of total, halts and crashes so
far, the time taken); anywhere else (a file, a pipe, CI) one plain line per finished scenario.
Colour only on a terminal, never with ``NO_COLOR`` (``logs.use_colour``). The bar is closed
(its line ended) before anything else is printed, so verdicts and totals start on a line of
their own. A halt is a result, not a failure: it is counted apart from the crashes.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

from dynsteer_hook.logs import hold_line, paint, use_colour

BAR_WIDTH = 24


def outcome_of(result: dict[str, Any]) -> str:
    """One word for a scenario's result: ``crashed``, ``interrupted``, ``halted``, or the report's outcome (``played`` natively)."""
    d = result.get("dynsteer") or {}
    if result.get("interrupted"):
        return "interrupted"
    if result.get("not_started"):
        return "not_started"
    if result.get("exception_type") or d.get("outcome") == "crashed":
        return "crashed"
    if d.get("halted"):
        return "halted"
    return str(d.get("outcome", "played"))


class RunProgress:
    """Progress over the scenarios of a run (or of a demo's runs together).

    Args:
        total: Scenarios the run will finish.
        stream: Where progress goes (default: the standard error of the moment).
        terminal: Draw a bar in place (default: whether ``stream`` is a terminal); False prints a line per scenario.
        colour: Colour the counts (default: ``use_colour(stream)``).
        clock: Seconds, for the time shown (tests pass their own).
        label: What the bar is of (``dynsteer run``).
    """

    def __init__(self, total: int, stream: TextIO | None = None, *, terminal: bool | None = None, colour: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, label: str = "dynsteer run") -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)()) if terminal is None else terminal
        self.colour = use_colour(self.stream) if colour is None else colour
        self.label = label
        self.done = 0
        self.counts: dict[str, int] = {}
        self._clock = clock
        self._start = clock()
        self._drawn = False

    def __enter__(self) -> RunProgress:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def start(self) -> None:
        """Draw the empty bar (on a terminal; a plain stream gets its first line with the first scenario)."""
        if self.terminal:
            self._draw()
            if self.stream is sys.stderr:
                hold_line(self)  # the package's log lines go above the bar, not over it

    def finished(self, result: dict[str, Any]) -> None:
        """One scenario finished (any outcome): redraw the bar, or print its line."""
        self.done += 1
        outcome = outcome_of(result)
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        if self.terminal:
            self._draw()
            return
        self._write(f"[{self.done}/{self.total}] {result.get('name', '?')}: {outcome}; so far {self._tally(self.colour)}\n")

    def close(self) -> None:
        """End the bar's line, so that what is printed next starts on a line of its own."""
        hold_line(None)
        if self.terminal and self._drawn:
            self._draw()
            self._write("\n")
            self._drawn = False

    def clear_line(self) -> None:
        """Erase the bar (a log line is about to be written where it was)."""
        if self._drawn:
            self._write("\r\x1b[K")

    def redraw(self) -> None:
        """Draw the bar again under what was written."""
        if self._drawn:
            self._draw()

    def _tally(self, colour: bool) -> str:
        halted, crashed = self.counts.get("halted", 0), self.counts.get("crashed", 0)
        parts = [paint(f"{halted} halted", "yellow", colour and halted > 0), paint(f"{crashed} crashed", "red", colour and crashed > 0)]
        if self.counts.get("interrupted"):
            parts.append(f"{self.counts['interrupted']} interrupted")
        if self.counts.get("not_started"):
            parts.append(f"{self.counts['not_started']} not started (budget)")
        return ", ".join(parts)

    def line(self, width: int = 100) -> str:
        """The bar as one line of at most ``width`` - 1 visible characters: label, bar, scenarios done of total, halts and
        crashes so far, time (the label and then the bar go first when the terminal is narrow)."""
        filled = BAR_WIDTH if self.total <= 0 else min(BAR_WIDTH, BAR_WIDTH * self.done // self.total)
        bar = "[" + "#" * filled + "-" * (BAR_WIDTH - filled) + "] "
        seconds = int(self._clock() - self._start)
        tail = f"{self.done}/{self.total} scenarios, {{}}, {seconds // 60}:{seconds % 60:02d}"
        for head in (f"{self.label} {bar}", bar):
            if len(head + tail.format(self._tally(False))) < width:
                return head + tail.format(self._tally(self.colour))
        plain = tail.format(self._tally(False))
        return tail.format(self._tally(self.colour)) if len(plain) < width else plain[: max(1, width - 1)]

    def _draw(self) -> None:
        width = _columns(self.stream)
        # \r and the erase-to-end-of-line code rewrite the line in place; a line wider than the terminal would wrap instead.
        self._write("\r" + self.line(width) + "\x1b[K")
        self._drawn = True

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # progress is a courtesy: a closed standard error never stops the run


def _columns(stream: object) -> int:
    """The width of the terminal ``stream`` draws on (not of standard output, which may be piped), else ``COLUMNS`` or 100."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size((100, 20)).columns
    return columns if columns > 0 else shutil.get_terminal_size((100, 20)).columns
