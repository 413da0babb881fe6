"""Playing scenarios one after another, or in ``spawn`` worker processes, with Ctrl-C handled.

Workers are started with Ctrl-C ignored and install their ``InterruptControl`` first
thing; the parent forwards Ctrl-C to them and keeps collecting what they return (an
interrupted scenario comes back as a result too). When all is in, the pool is closed and
joined, so that workers exit on their own and clean up after themselves; only a second
Ctrl-C in the parent terminates them.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any, TypeVar

from dynsteer_hook.toolsandbox import interrupts

Item = TypeVar("Item", bound=tuple[str, Any])


def play_all(worker: Callable[[Item], dict[str, Any]], items: list[Item], processes: int,
             stopped: Callable[[str, Any], dict[str, Any]]) -> list[dict[str, Any]]:
    """The results of ``worker`` over ``items``, in completion order.

    Args:
        worker: Plays one ``(name, scenario)`` item; never raises for Ctrl-C (it returns a stopped result).
        items: What to play.
        processes: Worker processes; 1 (or a single item) plays in this process.
        stopped: The result of an item given up after a second Ctrl-C, from its name and scenario.
    """
    if processes <= 1 or len(items) <= 1:
        with interrupts.installed():
            return [worker(item) for item in items]
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    with interrupts.ignoring_interrupts():  # workers start deaf to Ctrl-C until their control is in place
        pool = ctx.Pool(min(processes, len(items)), initializer=interrupts.init_worker, initargs=(stop,))
    results: list[dict[str, Any]] = []
    with interrupts.ParentControl(stop).installed():
        try:
            for r in pool.imap_unordered(worker, items):
                results.append(r)
            pool.close()  # workers then exit on their own, cleaning up after themselves (terminate would not)
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting, keep what came back
            done = {r["name"] for r in results}
            results += [stopped(name, scenario) for name, scenario in items if name not in done]
            pool.terminate()
        except BaseException:
            pool.terminate()
            raise
        pool.join()
    return results
