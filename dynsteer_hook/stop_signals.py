"""The signals that end a command as Ctrl-C does, which of them came, and the exit status it gives.

SIGINT (Ctrl-C), SIGTERM (``kill``, a service manager, a batch scheduler's time limit) and SIGHUP
(the terminal closed) all stop a command the same way: what is in flight ends cleanly, what
finished is kept and summarised. Left to their defaults, SIGTERM and SIGHUP would kill the
process where it stands, summaries unwritten. The exit status says which signal it was,
128 plus its number as a shell reports a death by it: 130 for SIGINT, 143 for SIGTERM,
129 for SIGHUP. A signal the process ignored when it started (``nohup`` ignores SIGHUP; a
shell's background job may ignore SIGINT) is left ignored, except SIGINT, which a run always
takes. The first of them this process received is kept here (global state, fenced into this
module).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

Handler = Callable[[int, FrameType | None], Any]

_received: int | None = None


def note(signum: int) -> None:
    """Keep ``signum`` as the signal that stopped this process, unless one came before it."""
    global _received
    if _received is None:
        _received = signum


def received() -> int | None:
    """The first stop signal this process received (None: none came)."""
    return _received


def forget() -> None:
    """Forget the signal received (a new run starts, or a test)."""
    global _received
    _received = None


def exit_status(signum: int | None = None) -> int:
    """The exit status of a command a stop signal ended: 128 + the signal's number (``signum``, else the one received,
    else SIGINT)."""
    return 128 + int(signum or _received or signal.SIGINT)


def name(signum: int | None = None) -> str:
    """The signal's name (``SIGTERM``): ``signum``, else the one received, else SIGINT."""
    return signal.Signals(signum or _received or signal.SIGINT).name


def by_whom() -> str:
    """Words for a message, empty for Ctrl-C, ``" by SIGTERM"`` for the others."""
    chosen = _received or signal.SIGINT
    return "" if chosen == signal.SIGINT else f" by {name(chosen)}"


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def taken() -> tuple[signal.Signals, ...]:
    """The stop signals this process takes: SIGINT, and SIGTERM and SIGHUP unless they are ignored."""
    if not _main_thread():
        return ()
    return tuple(s for s in STOP_SIGNALS if s == signal.SIGINT or signal.getsignal(s) != signal.SIG_IGN)


@contextmanager
def handling(handler: Handler | int, signals: tuple[int, ...] | None = None) -> Iterator[None]:
    """Give ``signals`` (default: ``taken()``) to ``handler`` (a function, or ``signal.SIG_IGN``) for the block, then
    give each its previous handler back. Outside the main thread, which alone receives signals, nothing changes."""
    if not _main_thread():
        yield
        return
    chosen = taken() if signals is None else signals
    previous = {s: signal.signal(s, handler) for s in chosen}
    try:
        yield
    finally:
        for s, before in previous.items():
            with contextlib.suppress(TypeError):  # a handler installed from C reads back as None: nothing to restore
                signal.signal(s, before)


def raise_interrupt(signum: int, frame: FrameType | None) -> None:
    """A handler that notes the signal and raises ``KeyboardInterrupt``, as Python's own SIGINT handler does."""
    note(signum)
    raise KeyboardInterrupt


def take_all() -> None:
    """Make SIGTERM and SIGHUP raise ``KeyboardInterrupt`` in this process, as Ctrl-C does (unless they are ignored);
    SIGINT notes itself too. For the process's entry point, before the command starts."""
    if not _main_thread():
        return
    for s in taken():
        if s == signal.SIGINT and signal.getsignal(s) != signal.default_int_handler:
            continue  # Ctrl-C ignored or already taken by someone: left as it is
        signal.signal(s, raise_interrupt)
