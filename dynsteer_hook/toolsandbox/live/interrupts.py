"""Ctrl-C during a run: in-flight scenarios end as interrupted with whole files, queued ones never start.

SIGTERM and SIGHUP are taken the same way (``dynsteer_hook.stop_signals``): "Ctrl-C" below
means any of the three, and the run's exit status says which came.

Every process that plays scenarios (the parent with ``-p 1``, each spawn worker otherwise)
has one ``InterruptControl``. Ctrl-C only sets ``requested``, except while a rollout is
*armed* and outside a *held* section (an evaluator step, the report being written): there
it raises ``KeyboardInterrupt`` once, at a point where nothing is half-done. An idle
worker merely notes it, so no worker prints a traceback. Workers start with Ctrl-C
ignored (the parent ignores it while it spawns them) until their control is installed.

The parent of a pool sets a shared stop event and forwards SIGINT to its workers, since
``kill -INT`` (or ``kill -TERM``) reaches the parent alone; a worker still starting up when
Ctrl-C came sees the event before its next scenario. A second Ctrl-C in the parent stops
waiting for the workers and ends them.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from dynsteer_hook import stop_signals


class InterruptControl:
    """This process's view of Ctrl-C (see the module docstring).

    Args:
        shared: The pool's stop event, set by the parent on Ctrl-C; it reaches a worker
            that was still starting (and ignoring the signal) when Ctrl-C came.
    """

    def __init__(self, shared: Any = None) -> None:
        self.requested = False
        self._shared = shared
        self._armed = False
        self._held = 0

    def stopping(self) -> bool:
        """Whether Ctrl-C came, here or in the parent (checked once per scenario, not per event)."""
        if not self.requested and self._shared is not None and self._shared.is_set():
            self.requested = True
        return self.requested

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The handler of SIGINT, SIGTERM and SIGHUP."""
        stop_signals.note(signum)
        self.requested = True
        if self._armed and not self._held:
            self._armed = False  # once: the rollout then unwinds undisturbed
            raise KeyboardInterrupt

    @contextmanager
    def armed(self) -> Iterator[None]:
        """A rollout: Ctrl-C interrupts it (at once, or when the held section it lands in ends)."""
        if self.stopping():
            raise KeyboardInterrupt
        self._armed = True
        try:
            yield
        finally:
            self._armed = False

    def disarm(self) -> None:
        """The rollout is over before its armed block ends (ToolSandbox evaluates it next): a Ctrl-C from here on is
        only noted, for what follows to look at."""
        self._armed = False

    def hold(self) -> None:
        """Enter a section that Ctrl-C must not cut (sections nest)."""
        self._held += 1

    def release(self, *, deliver: bool = True) -> None:
        """Leave a held section; a Ctrl-C that came meanwhile is raised here when ``deliver``."""
        self._held -= 1
        if deliver and self.requested and self._armed and not self._held:
            self._armed = False
            raise KeyboardInterrupt

    @contextmanager
    def held(self) -> Iterator[None]:
        """A section Ctrl-C must not cut; a Ctrl-C that came meanwhile is raised when it ends."""
        self.hold()
        try:
            yield
        except BaseException:
            self.release(deliver=False)
            raise
        self.release()


_CONTROL = InterruptControl()


def current() -> InterruptControl:
    """The control of this process (a quiet one unless a run installed its own)."""
    return _CONTROL


@contextmanager
def installed() -> Iterator[InterruptControl]:
    """A fresh control that handles Ctrl-C (and SIGTERM, SIGHUP) in this process for the duration of the block."""
    global _CONTROL
    previous_control, _CONTROL = _CONTROL, InterruptControl()
    try:
        with stop_signals.handling(_CONTROL.handle):
            yield _CONTROL
    finally:
        _CONTROL = previous_control


def init_worker(shared: Any, signals: tuple[int, ...] = (signal.SIGINT,)) -> None:
    """Pool initializer: this worker's control takes ``signals`` (those its parent takes) from now on and watches the
    parent's stop event."""
    global _CONTROL
    _CONTROL = InterruptControl(shared)
    for signum in signals:
        signal.signal(signum, _CONTROL.handle)


@contextmanager
def ignoring_interrupts() -> Iterator[tuple[int, ...]]:
    """Ignore Ctrl-C (and SIGTERM, SIGHUP) in this block; processes spawned inside it start ignoring them too. Yields
    the signals it ignores: those the process takes, for the workers to take once they are ready."""
    taken = tuple(int(s) for s in stop_signals.taken())
    with stop_signals.handling(signal.SIG_IGN, taken):
        yield taken


class ParentControl:
    """The pool parent's Ctrl-C: the first sets the stop event and is forwarded to the workers (as SIGINT, whichever
    signal came), a second stops the wait (once; later ones are only noted)."""

    def __init__(self, shared: Any) -> None:
        self.requested = False
        self.given_up = False
        self._shared = shared

    def handle(self, signum: int, frame: FrameType | None) -> None:
        stop_signals.note(signum)
        if self.requested:
            if not self.given_up:  # once: giving up on the workers is not cut short in turn
                self.given_up = True
                raise KeyboardInterrupt
            return
        self.requested = True
        self._shared.set()
        for child in multiprocessing.active_children():
            if child.pid is not None:
                with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                    os.kill(child.pid, signal.SIGINT)

    @contextmanager
    def installed(self) -> Iterator[ParentControl]:
        """Handle Ctrl-C (and SIGTERM, SIGHUP) this way for the duration of the block."""
        with stop_signals.handling(self.handle):
            yield self
