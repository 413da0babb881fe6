"""Inspect figure (issue 20): an Inspect task of 20 mockllm samples with DynSTEER against the same task without, in one run.

    python scripts/bench_inspect.py            # 20 samples, 7 pairs
    python scripts/bench_inspect.py --samples 20 --pairs 11

The task is the offline example (``dynsteer_hook.inspect.example``): each sample looks Alice up,
emails her and says so (three model turns, two tool calls), every sample the clean script, so
both variants do the same work. Without DynSTEER the task has its own scorer only; with it,
the approver, the reviewer and DynSTEER's scorer too. A third variant has Inspect's approval and review
policies with hooks that approve and continue and do nothing else: the share of the cost that is Inspect's
own hook machinery (its approval and review events). The variants run in turn (A B, B A, ...)
after one warm-up each, and the ratio is taken pair by pair, so a machine whose speed drifts
skews both sides alike. Printed: the median wall and CPU seconds of each variant (CPU: this
process's, all threads; it moves less than wall time when other work shares the machine), the
median ratio with/without of each with its spread, and the cost per sample. The bound is a ratio
of at most 1.05.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20, help="samples per task (default 20)")
    parser.add_argument("--pairs", type=int, default=7, help="timed pairs of runs (default 7)")
    args = parser.parse_args(argv)
    home = tempfile.mkdtemp(prefix="bench-inspect-")
    os.environ["XDG_DATA_HOME"] = home  # Inspect's data folder, away from the user's
    from inspect_ai import eval as inspect_eval
    from inspect_ai.approval import Approval, ApprovalPolicy, approver
    from inspect_ai.review import Review, ReviewPolicy, reviewer

    from dynsteer_hook.inspect import DynSteer
    from dynsteer_hook.inspect import example as ex

    @approver(name="bench_null")
    def null_approver() -> Any:
        async def approve(*_: Any) -> Approval:
            return Approval(decision="approve")
        return approve

    @reviewer(name="bench_null")
    def null_reviewer() -> Any:
        async def review(*_: Any) -> Review:
            return Review(decision="continue")
        return review

    def hooks_only() -> tuple[float, float]:
        task = ex.address_book(None, ("clean",), copies=args.samples)
        task.approval = [ApprovalPolicy(null_approver(), "*")]
        task.review = [ReviewPolicy(null_reviewer(), "*")]
        start, cpu = time.perf_counter(), time.process_time()
        inspect_eval(task, model=ex.scripted_model(), display="none", log_level="error", log_dir=home + "/logs")
        return time.perf_counter() - start, time.process_time() - cpu

    def once(with_dynsteer: bool) -> tuple[float, float]:
        steer = DynSteer(ex.blueprint()) if with_dynsteer else None
        task = ex.address_book(steer, ("clean",), copies=args.samples)
        start, cpu = time.perf_counter(), time.process_time()
        [log] = inspect_eval(task, model=ex.scripted_model(), display="none", log_level="error", log_dir=home + "/logs")
        seconds = time.perf_counter() - start, time.process_time() - cpu
        assert log.status == "success" and log.samples is not None and len(log.samples) == args.samples, log.status
        if with_dynsteer:
            assert all(s.scores is not None and s.scores["dynsteer"].answer == "completed" for s in log.samples)
        return seconds

    once(False), once(True), hooks_only()  # warm-up: imports, registries, the first log written
    plain: list[tuple[float, float]] = []
    steered: list[tuple[float, float]] = []
    hooks: list[tuple[float, float]] = []
    for i in range(args.pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        for flag in order:
            (steered if flag else plain).append(once(flag))
        hooks.append(hooks_only())
    n = args.samples
    print(f"Inspect task of {n} mockllm samples (clean script: 3 model turns, 2 tool calls each), {args.pairs} pairs, "
          f"Python {sys.version.split()[0]}")
    print(f"{'':30}{'median wall s':>14}{'median CPU s':>14}{'CPU ms/sample':>15}")
    for label, runs in (("without DynSTEER", plain), ("with DynSTEER (adapter)", steered), ("approve/continue hooks only", hooks)):
        wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        print(f"{label:30}{wall:>14.3f}{cpu:>14.3f}{1000 * cpu / n:>15.2f}")
    for i, what in ((0, "wall"), (1, "CPU")):
        ratios = [s[i] / p[i] for s, p in zip(steered, plain, strict=True)]
        hook = [h[i] / p[i] for h, p in zip(hooks, plain, strict=True)]
        r = statistics.median(ratios)
        added = statistics.median(s[i] - p[i] for s, p in zip(steered, plain, strict=True))
        print(f"{what} ratio with/without: median {r:.3f} (pairs {min(ratios):.3f}-{max(ratios):.3f}), added {1000 * added / n:+.2f} ms "
              f"per sample; hooks doing nothing/without {statistics.median(hook):.3f}; bound 1.05: {'met' if r <= 1.05 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
