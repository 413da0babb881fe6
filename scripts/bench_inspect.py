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
skews both sides alike. Printed: the median wall seconds of each variant, the median ratio
with/without and its spread, and the cost per sample. The bound is a ratio of at most 1.05.
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

    def hooks_only() -> float:
        task = ex.address_book(None, ("clean",), copies=args.samples)
        task.approval = [ApprovalPolicy(null_approver(), "*")]
        task.review = [ReviewPolicy(null_reviewer(), "*")]
        start = time.perf_counter()
        inspect_eval(task, model=ex.scripted_model(), display="none", log_level="error", log_dir=home + "/logs")
        return time.perf_counter() - start

    def once(with_dynsteer: bool) -> float:
        steer = DynSteer(ex.blueprint()) if with_dynsteer else None
        task = ex.address_book(steer, ("clean",), copies=args.samples)
        start = time.perf_counter()
        [log] = inspect_eval(task, model=ex.scripted_model(), display="none", log_level="error", log_dir=home + "/logs")
        seconds = time.perf_counter() - start
        assert log.status == "success" and log.samples is not None and len(log.samples) == args.samples, log.status
        if with_dynsteer:
            assert all(s.scores is not None and s.scores["dynsteer"].answer == "completed" for s in log.samples)
        return seconds

    once(False), once(True), hooks_only()  # warm-up: imports, registries, the first log written
    plain: list[float] = []
    steered: list[float] = []
    hooks: list[float] = []
    for i in range(args.pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        for flag in order:
            (steered if flag else plain).append(once(flag))
        hooks.append(hooks_only())
    ratios = [s / p for s, p in zip(steered, plain, strict=True)]
    p, s, r = statistics.median(plain), statistics.median(steered), statistics.median(ratios)
    print(f"Inspect task of {args.samples} mockllm samples (clean script: 3 model turns, 2 tool calls each), {args.pairs} pairs, "
          f"Python {sys.version.split()[0]}")
    print(f"{'':28}{'median wall s':>14}{'per sample ms':>15}")
    print(f"{'without DynSTEER':28}{p:>14.3f}{1000 * p / args.samples:>15.2f}")
    print(f"{'with DynSTEER (adapter)':28}{s:>14.3f}{1000 * s / args.samples:>15.2f}")
    h = statistics.median(hooks)
    print(f"{'approve/continue hooks only':28}{h:>14.3f}{1000 * h / args.samples:>15.2f}   (Inspect's approval and review "
          f"machinery with hooks that do nothing: {h / p:.3f} of without)")
    print(f"ratio with/without: median {r:.3f} (pairs {min(ratios):.3f}-{max(ratios):.3f}); "
          f"added {1000 * (s - p) / args.samples:+.2f} ms per sample; bound 1.05: {'met' if r <= 1.05 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
