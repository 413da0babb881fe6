"""The run's one progress bar: drawn in place on a terminal (a real pseudo-terminal here), a plain line per scenario
elsewhere, coloured only on a terminal and never with NO_COLOR; and the engines tell it every result as it comes."""

from __future__ import annotations

import fcntl
import io
import os
import re
import select
import struct
import sys
import termios
from collections.abc import Iterator
from typing import Any

import pytest

from dynsteer_hook.toolsandbox.live.engines import run_jobs
from dynsteer_hook.toolsandbox.live.progress import RunProgress, outcome_of

ANSI_COLOUR = re.compile(r"\x1b\[(?:0|1|2|3\d)m")

RESULTS: list[dict[str, Any]] = [
    {"name": "clean", "exception_type": None, "dynsteer": {"outcome": "completed", "halted": False}},
    {"name": "looping", "exception_type": None, "dynsteer": {"outcome": "halted", "halted": True}},
    {"name": "unreachable", "exception_type": "LLMUnavailableError", "dynsteer": {"outcome": "crashed", "halted": False}},
]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.5
        return self.now


@pytest.fixture
def pty_stream() -> Iterator[tuple[int, io.TextIOWrapper]]:
    """A pseudo-terminal: its master end (to read what was drawn) and its slave end as a text stream (a terminal)."""
    master, slave = os.openpty()
    # a terminal 120 columns wide: the bar measures the terminal it draws on (a test runner's COLUMNS may say 80)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    stream = io.TextIOWrapper(io.FileIO(slave, "w"), encoding="utf-8", write_through=True)
    try:
        yield master, stream
    finally:
        stream.close()
        os.close(master)


def _drain(master: int) -> str:
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if not ready:
            return b"".join(chunks).decode("utf-8")
        chunks.append(os.read(master, 65536))


def test_outcome_words() -> None:
    """A crash is a crash whatever the report says, a halt is a halt, and Ctrl-C is neither."""
    assert [outcome_of(r) for r in RESULTS] == ["completed", "halted", "crashed"]
    assert outcome_of({"name": "x", "interrupted": "in_flight", "dynsteer": {"halted": True}}) == "interrupted"
    assert outcome_of({"name": "native", "exception_type": None, "similarity": 1.0}) == "played"


def test_off_a_terminal_each_scenario_is_one_plain_line() -> None:
    """A file or a pipe gets one line per finished scenario with the counts so far: no carriage return, no colour."""
    out = io.StringIO()
    with RunProgress(3, out, clock=_Clock()) as progress:
        for r in RESULTS:
            progress.finished(r)
    text = out.getvalue()
    assert text.splitlines() == [
        "[1/3] clean: completed; so far 0 halted, 0 crashed",
        "[2/3] looping: halted; so far 1 halted, 0 crashed",
        "[3/3] unreachable: crashed; so far 1 halted, 1 crashed",
    ]
    assert "\r" not in text and "\x1b" not in text


def test_on_a_terminal_one_bar_is_redrawn_in_place_and_coloured(pty_stream: tuple[int, io.TextIOWrapper],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """On a pseudo-terminal the bar starts at 0 of 3, is rewritten in place after every scenario, shows halts in yellow and
    crashes in red, and ends its line when closed."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    master, stream = pty_stream
    with RunProgress(3, stream, clock=_Clock()) as progress:
        assert progress.terminal and progress.colour
        for r in RESULTS:
            progress.finished(r)
    drawn = _drain(master)
    frames = [ANSI_COLOUR.sub("", f).replace("\x1b[K", "") for f in drawn.split("\r") if f.strip()]
    assert frames[0].startswith("dynsteer run [------------------------] 0/3 scenarios, 0 halted, 0 crashed, 0:")
    assert "[########----------------] 1/3 scenarios, 0 halted, 0 crashed" in frames[1]
    assert "[########################] 3/3 scenarios, 1 halted, 1 crashed" in frames[-1]
    assert drawn.endswith("\n") and drawn.count("\n") == 1  # one line on the terminal, whatever the number of scenarios
    assert "\x1b[33m1 halted\x1b[0m" in drawn and "\x1b[31m1 crashed\x1b[0m" in drawn


def test_no_color_keeps_the_bar_and_drops_the_colour(pty_stream: tuple[int, io.TextIOWrapper], monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR (any non-empty value) removes every colour code; the bar is still drawn in place."""
    monkeypatch.setenv("NO_COLOR", "1")
    master, stream = pty_stream
    with RunProgress(3, stream, clock=_Clock()) as progress:
        for r in RESULTS:
            progress.finished(r)
    drawn = _drain(master)
    assert "\r" in drawn and "3/3 scenarios, 1 halted, 1 crashed" in drawn
    assert not ANSI_COLOUR.search(drawn)


def test_a_log_line_goes_above_the_bar_and_the_bar_is_drawn_again(pty_stream: tuple[int, io.TextIOWrapper],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A warning logged while the bar is on standard error erases the bar, takes a line of its own, and the bar comes back
    under it; once the bar is closed, log lines are written as they are."""
    import logging

    from dynsteer_hook.logs import configure_logging

    monkeypatch.setenv("NO_COLOR", "1")
    master, stream = pty_stream
    monkeypatch.setattr(sys, "stderr", stream)
    configure_logging(False)
    log = logging.getLogger("dynsteer_hook.test")
    with RunProgress(2, clock=_Clock()) as progress:
        progress.finished(RESULTS[0])
        log.warning("the judge timed out")
        progress.finished(RESULTS[1])
    log.warning("after the run")
    drawn = _drain(master).replace("\r\n", "\n")  # the terminal turns each newline into CR LF
    before, after = drawn.split("the judge timed out")
    assert before.endswith("\r\x1b[K") and after.startswith("\n\r")  # the bar erased, the warning on its own line, the bar back
    assert "1/2 scenarios" in after.split("\n")[1] and "2/2 scenarios" in after
    assert drawn.endswith("\nafter the run\n")


def test_a_narrow_terminal_gets_a_shorter_line() -> None:
    """The label, then the bar, give way so that the line never wraps on a narrow terminal."""
    progress = RunProgress(1032, io.StringIO(), terminal=True, colour=False, clock=_Clock())
    assert len(progress.line(100)) < 100 and progress.line(100).startswith("dynsteer run [")
    assert progress.line(75).startswith("[") and len(progress.line(75)) < 75
    assert progress.line(50).startswith("0/1032 scenarios, 0 halted") and len(progress.line(50)) < 50
    assert progress.line(30) == "0/1032 scenarios, 0 halted, 0"


def _square(n: int) -> int:
    return n * n


def test_engines_tell_each_result_once_as_it_comes() -> None:
    """``run_jobs`` tells ``on_result`` every result (and every job given up) once, before yielding it."""
    told: list[int] = []
    got = []
    for r in run_jobs(_square, [1, 2, 3], on_result=told.append):
        got.append(r)
        assert told == got  # told before the caller sees it
    assert told == [1, 4, 9]
    told.clear()
    assert list(run_jobs(_square, [2, 3], on_result=told.append, stopped=lambda job: -job)) == [4, 9]
    assert told == [4, 9]
