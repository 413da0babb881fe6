"""Where scenario jobs run: this process, a pool of local ``spawn`` processes, or a Ray cluster.

Every engine yields the results in job order, so a run, a replay or a comparison writes the
same files whichever engine ran it. Ray is optional (``pip install dynsteer-hook[ray]``): with
``--engine ray`` jobs become Ray tasks on the cluster at ``--ray-address`` (or ``RAY_ADDRESS``),
and without an address Ray starts a local instance on this machine.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, TypeVar

from dynsteer_hook.errors import DynsteerError

Engine = Literal["local", "ray"]
ENGINES: tuple[str, ...] = ("local", "ray")

J = TypeVar("J")
R = TypeVar("R")


def _quiet_logs() -> None:
    """Worker processes log as the command line does (warnings and errors on stderr), not structlog's
    default of everything on stdout."""
    from dynsteer_hook.logs import configure_logging

    configure_logging(False)


def _call(worker: Callable[[Any], Any], job: Any) -> Any:
    _quiet_logs()
    return worker(job)


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


def run_jobs(worker: Callable[[J], R], jobs: Sequence[J], *, processes: int = 1, engine: str = "local",
             ray_address: str | None = None) -> Iterator[R]:
    """Results of ``worker(job)`` for every job, in job order.

    Args:
        worker: A module-level function (or a partial of one): worker processes import it.
        jobs: Picklable job descriptions.
        processes: Local worker processes (``local``), or CPUs of a Ray instance started here.
        engine: ``local`` or ``ray``.
        ray_address: A Ray cluster to join (``ray`` only; default ``RAY_ADDRESS`` or a local instance).
    """
    check_engine(engine, ray_address)
    if engine == "ray":
        yield from _run_ray(worker, jobs, processes, ray_address or os.environ.get("RAY_ADDRESS"))
        return
    if processes > 1 and len(jobs) > 1:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(min(processes, len(jobs)), initializer=_quiet_logs) as pool:
            yield from pool.imap(worker, jobs)
        return
    for job in jobs:
        yield worker(job)


def _run_ray(worker: Callable[[J], R], jobs: Sequence[J], processes: int, address: str | None) -> Iterator[R]:
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
        refs = [task.remote(worker, job) for job in jobs]
        for ref in refs:
            yield ray.get(ref)
    finally:
        if started:
            ray.shutdown()
