"""Where scenario jobs run: this process, a pool of local ``spawn`` processes, or a Ray cluster.

Every engine yields the results in job order, so a run, a replay or a comparison writes the
same files whichever engine ran it. Ray is optional (``pip install dynsteer-hook[ray]``): with
``--engine ray`` jobs become Ray tasks on the cluster at ``--ray-address`` (or ``RAY_ADDRESS``),
and without an address Ray starts a local instance on this machine.

Jobs that handle Ctrl-C themselves (the scenarios of ``dynsteer run``) say what a job given up
looks like (``stopped``). Locally, workers then start with Ctrl-C ignored and install their
``InterruptControl`` first thing; the parent forwards a first Ctrl-C to them and keeps collecting
what they return (an interrupted scenario comes back as a result too), then closes and joins the
pool so that workers exit on their own and clean up after themselves; a second Ctrl-C stops the
wait and kills them (they take SIGTERM as Ctrl-C, so the pool's own terminate kills instead).
SIGTERM and SIGHUP count as Ctrl-C throughout (``interrupts``). On Ray, Ctrl-C stops the wait and
cancels the tasks not yet returned. Other jobs (replays) simply stop at Ctrl-C.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any, Literal, TypeVar

from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.toolsandbox.live import interrupts

Engine = Literal["local", "ray"]
ENGINES: tuple[str, ...] = ("local", "ray")

J = TypeVar("J")
R = TypeVar("R")


def add_engine_flags(p: argparse.ArgumentParser) -> None:
    """Where the jobs run: local processes, or Ray (``--engine``, ``--ray-address``)."""
    g = p.add_argument_group("engine")
    g.add_argument("--engine", choices=list(ENGINES), default="local",
                   help="local processes (default) or Ray tasks (pip install 'dynsteer-hook[ray]'; a local instance unless --ray-address)")
    g.add_argument("--ray-address", default=None, metavar="ADDRESS", help="the Ray cluster to join (default: RAY_ADDRESS, else a local instance)")


def _quiet_logs() -> None:
    """Worker processes log as the command line does (warnings and errors on stderr), not structlog's
    default of everything on stdout."""
    from dynsteer_hook.logs import configure_logging

    configure_logging(False)


def _call(worker: Callable[[Any], Any], job: Any) -> Any:
    _quiet_logs()
    return worker(job)


def _init_interruptible_worker(shared: Any, signals: tuple[int, ...]) -> None:
    _quiet_logs()
    interrupts.init_worker(shared, signals)


class _Worker(SpawnProcess):
    """A worker of a pool whose jobs handle Ctrl-C: it takes SIGTERM as Ctrl-C, so the pool's terminate, which ends
    workers with SIGTERM, kills it instead. The pool kills them only once it holds its task queue's lock (a worker
    killed while it held that lock, waiting for a task, would hang the terminate)."""

    def terminate(self) -> None:
        self.kill()


class _Spawning(SpawnContext):
    """The ``spawn`` context, with workers that the pool's terminate kills (``_Worker``)."""

    Process = _Worker


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise DynsteerError("--engine ray needs Ray: pip install 'dynsteer-hook[ray]' (or pip install ray)") from None
    return ray


def check_engine(engine: str, ray_address: str | None) -> None:
    """Fail before any job when the engine cannot run (one sentence)."""
    if engine not in ENGINES:
        raise DynsteerError(f"--engine {engine!r} is not one of {', '.join(ENGINES)}")
    if engine == "ray":
        _ray()
    elif ray_address:
        raise DynsteerError("--ray-address is for --engine ray; add --engine ray or drop the address")


@dataclass
class Closing:
    """When a run stops starting jobs (a run's budget): ``until`` is told each result in the parent, in the order they
    come back, and once it says true no further job is handed out; each job left becomes ``skipped(job)`` (the jobs
    running then finish). Jobs are then handed out one per free worker, only after the results before were told."""

    until: Callable[[Any], bool]
    skipped: Callable[[Any], Any]
    closed: bool = False

    def told(self, result: Any) -> None:
        """A result came back: close once ``until`` says so."""
        self.closed = self.closed or self.until(result)


def run_jobs(worker: Callable[[J], R], jobs: Sequence[J], *, processes: int = 1, engine: str = "local",
             ray_address: str | None = None, stopped: Callable[[J], R] | None = None,
             on_result: Callable[[R], None] | None = None, closing: Closing | None = None) -> Iterator[R]:
    """Results of ``worker(job)`` for every job, in job order.

    Args:
        worker: A module-level function (or a partial of one): worker processes import it.
        jobs: Picklable job descriptions.
        processes: Local worker processes (``local``), or CPUs of a Ray instance started here.
        engine: ``local`` or ``ray``.
        ray_address: A Ray cluster to join (``ray`` only; default ``RAY_ADDRESS`` or a local instance).
        stopped: For jobs that handle Ctrl-C themselves: the result of a job given up (see the module's text).
        on_result: Told each result as it comes back, in the order the jobs finish (a progress bar); results of jobs
            given up are told too.
        closing: When to stop handing out jobs, for jobs that handle Ctrl-C themselves or on Ray (fresh for each call).
    """
    check_engine(engine, ray_address)
    tell = on_result or _ignore
    if engine == "ray":
        yield from _run_ray(worker, jobs, processes, ray_address or os.environ.get("RAY_ADDRESS"), stopped, tell, closing)
        return
    if stopped is not None:
        yield from _run_interruptible(worker, jobs, processes, stopped, tell, closing)
        return
    if processes > 1 and len(jobs) > 1:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(min(processes, len(jobs)), initializer=_quiet_logs) as pool:
            yield from _told(pool.imap(worker, jobs), tell)
        return
    yield from _told((worker(job) for job in jobs), tell)


def _ignore(result: Any) -> None:
    pass


def _told(results: Iterator[R], tell: Callable[[R], None]) -> Iterator[R]:
    for r in results:
        tell(r)
        yield r


def _in_turn(worker: Callable[[J], R], jobs: Sequence[J], closing: Closing | None) -> Iterator[R]:
    """The jobs in this process, one after the other, until ``closing`` closes."""
    for job in jobs:
        if closing is not None and closing.closed:
            yield closing.skipped(job)
            continue
        r = worker(job)
        if closing is not None:
            closing.told(r)
        yield r


def _run_interruptible(worker: Callable[[J], R], jobs: Sequence[J], processes: int, stopped: Callable[[J], R],
                       tell: Callable[[R], None], closing: Closing | None = None) -> Iterator[R]:
    if processes <= 1 or len(jobs) <= 1:
        with interrupts.installed():
            yield from _told(_in_turn(worker, jobs, closing), tell)
        return
    ctx = _Spawning()
    # Workers, and the resource tracker the stop event starts, begin deaf to Ctrl-C (and SIGTERM, SIGHUP) until their
    # control is in place: a signal to the whole process group then reaches only processes ready for it.
    with interrupts.ignoring_interrupts() as signals:
        stop = ctx.Event()
        pool = ctx.Pool(min(processes, len(jobs)), initializer=_init_interruptible_worker, initargs=(stop, signals))
    came: dict[int, R] = {}
    with interrupts.ParentControl(stop).installed():
        try:
            # In completion order, so that a second Ctrl-C keeps every result that came back.
            handed = (_in_slices(pool.imap_unordered(partial(_numbered, worker), enumerate(jobs))) if closing is None
                      else _windowed(pool, worker, jobs, min(processes, len(jobs)), closing))
            for i, r in handed:
                came[i] = r
                tell(r)
            pool.close()  # workers then exit on their own, cleaning up after themselves (terminate would not)
            pool.join()
        except KeyboardInterrupt:  # a second Ctrl-C, while results come or workers exit: stop waiting, keep what came back
            pool.terminate()  # kills the workers (``_Worker``)
            pool.join()  # quick: the workers are gone, and the parent takes no third Ctrl-C
        except BaseException:
            pool.terminate()
            pool.join()
            raise
    for i, job in enumerate(jobs):
        if i in came:
            yield came[i]
        elif closing is not None and closing.closed:  # never handed out: the run had closed
            left = closing.skipped(job)
            tell(left)
            yield left
        else:
            given_up = stopped(job)
            tell(given_up)
            yield given_up


SIGNAL_SLICE = 0.25  # seconds the parent waits for a result at a time before it looks at its signals again


def _in_slices(results: Any) -> Iterator[Any]:
    """The results of a pool's ``imap_unordered``, waited for a quarter of a second at a time: a signal runs its Python
    handler in the main thread only when that thread runs, and the kernel may hand it to one of the pool's threads."""
    while True:
        try:
            yield results.next(SIGNAL_SLICE)
        except multiprocessing.TimeoutError:
            continue
        except StopIteration:
            return


def _windowed(pool: Any, worker: Callable[[J], R], jobs: Sequence[J], window: int, closing: Closing) -> Iterator[tuple[int, R]]:
    """(job number, result) in completion order, with at most ``window`` jobs out: the next job is handed out only once
    the result before it was told to ``closing``, so none starts after the run has closed."""
    done: queue.Queue[Any] = queue.Queue()
    handed = out = 0

    def hand_out() -> None:
        nonlocal handed, out
        pool.apply_async(_numbered, (worker, (handed, jobs[handed])), callback=done.put, error_callback=done.put)
        handed, out = handed + 1, out + 1

    while handed < window:
        hand_out()
    while out:
        try:
            item = done.get(timeout=SIGNAL_SLICE)  # a quarter of a second at a time: signals run in this thread
        except queue.Empty:
            continue
        out -= 1
        if isinstance(item, BaseException):
            raise item
        closing.told(item[1])
        yield item
        if not closing.closed and handed < len(jobs):
            hand_out()


def _numbered(worker: Callable[[J], R], item: tuple[int, J]) -> tuple[int, R]:
    return item[0], worker(item[1])


def _run_ray(worker: Callable[[J], R], jobs: Sequence[J], processes: int, address: str | None,
             stopped: Callable[[J], R] | None, tell: Callable[[R], None], closing: Closing | None = None) -> Iterator[R]:
    ray = _ray()
    started = False
    if not ray.is_initialized():
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if address:
            options["address"] = address
        else:
            options["num_cpus"] = max(1, processes)
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise DynsteerError(f"Ray could not start or reach {address or 'a local instance'} ({str(exc)[:160]}); check --ray-address") from None
        started = True
    try:
        task = ray.remote(_call)
        # With a closing rule at most ``processes`` tasks are out at a time, so that a closed run starts no more.
        window = len(jobs) if closing is None else max(1, processes)
        refs = {i: task.remote(worker, jobs[i]) for i in range(min(window, len(jobs)))}
        done = 0
        try:
            for i in range(len(jobs)):
                if i in refs:
                    result = ray.get(refs.pop(i))
                    if closing is not None:
                        closing.told(result)
                        if not closing.closed and i + window < len(jobs):
                            refs[i + window] = task.remote(worker, jobs[i + window])
                else:  # never handed out: the run had closed
                    assert closing is not None
                    result = closing.skipped(jobs[i])
                done += 1
                tell(result)
                yield result
        except KeyboardInterrupt:
            if stopped is None:
                raise
            for ref in refs.values():
                ray.cancel(ref, force=True)
            yield from _told((stopped(job) for job in jobs[done:]), tell)
    finally:
        if started:
            ray.shutdown()
