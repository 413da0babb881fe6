"""Regenerate blueprints/toolsandbox/<scenario>.json for every ToolSandbox scenario.

Run it from the repository root (this checkout's package and ToolSandbox must be
importable, e.g. after ``pip install -e .``, or with ``PYTHONPATH=.``)::

    python scripts/build_blueprints.py               # compile what changed
    python scripts/build_blueprints.py --force       # recompile everything
    python scripts/build_blueprints.py -s NAME ...   # only these scenarios
    python scripts/build_blueprints.py -v            # one timing line per scenario

Each blueprint is compiled from the scenario's public view by the deterministic generator
(no LLM, no API key) through strict-majority consensus, and written as canonical JSON
(``Blueprint.to_json``). Its provenance records the generator, the model ("none"), the
candidate count and the public-view hash. A stored blueprint is skipped, unless
``--force``, when its public-view hash, generator and candidate count all match what would
be compiled now. Timings: compile time per scenario (public-view extraction reported
separately), median, p99, max and totals.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from dynsteer_hook.compile.compiler import compile_generator_only
from dynsteer_hook.compile.generator.candidates import GENERATOR
from dynsteer_hook.files.blueprints import load_blueprint, save_blueprint
from dynsteer_hook.model.errors import BlueprintError, DynsteerError
from dynsteer_hook.toolsandbox.live.runner import load_scenarios
from dynsteer_hook.toolsandbox.scenario_view import public_view

ROOT = Path(__file__).resolve().parents[1]


def _up_to_date(path: Path, digest: str, candidates: int) -> bool:
    try:
        stored = load_blueprint(path)
    except BlueprintError:
        return False
    prov = stored.provenance
    return prov is not None and prov.public_view_hash == digest and prov.generators == (GENERATOR,) and prov.candidates == candidates


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-o", "--out", type=Path, default=ROOT / "blueprints" / "toolsandbox", help="output directory (default: blueprints/toolsandbox of this checkout)")
    parser.add_argument("-s", "--scenarios", nargs="*", help="only these scenarios (default: all)")
    parser.add_argument("-n", "--candidates", type=int, default=5, help="deterministic candidates per scenario")
    parser.add_argument("--force", action="store_true", help="recompile even when the stored blueprint is up to date")
    parser.add_argument("-v", "--verbose", action="store_true", help="print one timing line per scenario")
    args = parser.parse_args(argv)
    if args.candidates < 1:
        print(f"build_blueprints: -n/--candidates {args.candidates} must be at least 1", file=sys.stderr)
        return 2

    package = Path(sys.modules["dynsteer_hook"].__file__ or "").resolve().parents[1]
    if package != ROOT:
        print(f"build_blueprints: note: compiling with the dynsteer_hook installed from {package}, not this checkout {ROOT} "
              "(run with PYTHONPATH=. or pip install -e . to use this checkout)", file=sys.stderr)
    start = time.perf_counter()
    try:
        scenarios = load_scenarios(args.scenarios or None)
    except DynsteerError as exc:
        print(f"build_blueprints: {exc}", file=sys.stderr)
        return 2
    load_s = time.perf_counter() - start
    compile_ms: list[float] = []
    view_ms: list[float] = []
    written = skipped = 0
    for name, scenario in scenarios.items():
        t0 = time.perf_counter()
        view = public_view(name, scenario)
        t1 = time.perf_counter()
        view_ms.append((t1 - t0) * 1000)
        path = args.out / f"{name}.json"
        if not args.force and _up_to_date(path, view.digest(), args.candidates):
            skipped += 1
            continue
        t2 = time.perf_counter()
        bp = compile_generator_only(view, args.candidates)
        ms = (time.perf_counter() - t2) * 1000
        compile_ms.append(ms)
        save_blueprint(bp, path)
        written += 1
        if args.verbose:
            print(f"{ms:8.2f} ms  {name}: {len(bp.milestones)} milestones, {len(bp.edges)} edges, {len(bp.minefields)} minefields")

    total = time.perf_counter() - start
    print(f"scenarios: {len(scenarios)} (loaded in {load_s:.1f} s); written {written}, up to date {skipped}; output {args.out}")
    if compile_ms:
        print(f"compile time per scenario (no LLM): median {statistics.median(compile_ms):.2f} ms, p99 {_percentile(compile_ms, 0.99):.2f} ms, "
              f"max {max(compile_ms):.2f} ms, total {sum(compile_ms) / 1000:.2f} s")
    print(f"public-view extraction per scenario: median {statistics.median(view_ms):.2f} ms, total {sum(view_ms) / 1000:.2f} s; wall time {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
