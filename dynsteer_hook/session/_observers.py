"""The observers of one rollout, each isolated from the rollout and from the others.

An observer is code the rollout does not need (an exporter, a dashboard, a file): its bug, or a
collector that has gone away, must not cost the user the rollout. So each call to an observer is
guarded: one that raises is logged with its traceback, named in a note for the report, and dropped
for the rest of the rollout; the other observers, the evaluator and the agent's loop go on. Only
``Exception`` is caught: Ctrl-C and the halt signal still travel.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

import structlog

from dynsteer_hook.model.untrusted import clip

_log = structlog.wrap_logger(logging.getLogger(__name__))

ERROR_CHARS = 300
"""Characters kept of an observer's error message in the report's note (it may quote agent text)."""


class Observer(Protocol):
    """What the session calls: the lifecycle methods of ``RolloutHook`` (a subclass of it, or any object with them)."""

    def on_rollout_start(self, start: Any) -> None: ...

    def on_event(self, seen: Any) -> None: ...

    def on_turn_end(self, turn: Any) -> None: ...

    def on_action_closed(self, closed: Any) -> None: ...

    def on_halt(self, halted: Any) -> None: ...

    def on_rollout_end(self, end: Any) -> None: ...


class ObserverGroup:
    """The observers still attached to a rollout, told each lifecycle point in order.

    Args:
        observers: The observers, in the order they are told.
        task: The task's name, for the log.
    """

    def __init__(self, observers: Sequence[Observer], task: str) -> None:
        self._live: list[Observer] = list(observers)
        self._task = task
        self.notes: list[str] = []
        """One sentence per observer dropped, for the report's notes."""

    def __bool__(self) -> bool:
        return bool(self._live)

    @property
    def live(self) -> tuple[Observer, ...]:
        """The observers not dropped."""
        return tuple(self._live)

    def tell(self, method: str, payload: object) -> None:
        """Call ``method`` of every live observer with ``payload``; an observer that raises is dropped."""
        for observer in tuple(self._live):
            try:
                getattr(observer, method)(payload)
            except Exception as exc:  # an observer's fault is never the rollout's
                self._drop(observer, method, exc)

    def _drop(self, observer: Observer, method: str, exc: Exception) -> None:
        self._live.remove(observer)
        name = type(observer).__name__
        _log.warning("observer_dropped", observer=name, method=method, error=f"{type(exc).__name__}: {clip(str(exc), ERROR_CHARS)}",
                     task=self._task, exc_info=exc)
        self.notes.append(f"observer {name} raised {type(exc).__name__} in {method} ({clip(str(exc), ERROR_CHARS)}); "
                          "it was dropped for the rest of the rollout, which went on without it")
