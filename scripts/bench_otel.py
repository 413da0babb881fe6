"""OpenTelemetry export figures (issue 20), side by side in one run: the export's cost per raw event, and a live run with
``--otel`` against the same run without.

1. Cost per raw event: the lifecycle payloads of real scripted rollouts (each scenario's "explorer" agent, built from
   its public view as in ``bench_live.py``, and the shipped scripts that settle every stage) are recorded once, then
   handed to the OpenTelemetry observer again and again, exporting to the SDK's in-memory exporter through the batch
   processor ``--otel`` uses; beside it, ``SimpleSpanProcessor``, which exports every span and evaluation event as it
   ends. Wall time and the process's CPU time (all threads) are printed: on a loaded machine the wall time also holds
   the waits for a CPU. Goal: <= 20 us per raw event.
2. Live wall time: the same rollouts played with dynsteer live, with and without the observer exporting OTLP over
   HTTP to a collector in another process on 127.0.0.1 (it decodes nothing and answers 200), alternating the order per
   scenario, ``--repeat`` times; the end-of-run flush is charged to the ``--otel`` side. Goal: <= 3% wall time.

    python scripts/bench_otel.py                      # 60 scenarios, 3 repeats
    python scripts/bench_otel.py --scenarios 20 --repeat 1 --json

On a shared, loaded machine the figures are noisy: the ratios are taken side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")  # ToolSandbox's progress bar per scenario (read when tqdm is imported)

from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dynsteer_hook.logs import configure_logging
from dynsteer_hook.otel import export
from dynsteer_hook.otel.export import Telemetry
from dynsteer_hook.otel.observer import OtelObserver
from dynsteer_hook.otel.settings import OtelSettings
from dynsteer_hook.toolsandbox.live.hook import EventSeen, RolloutHook
from dynsteer_hook.toolsandbox.live.runner import RunOptions, blueprint_path, default_blueprint_dir, load_scenarios, run_scenario
from dynsteer_hook.toolsandbox.scenario_view import public_view

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_live import explorer

GOAL_PER_EVENT_US = 20.0
SHIPPED = Path(__file__).resolve().parents[1] / "dynsteer_hook" / "data" / "scripts"
SETTLING = ("clean_solver", "alternative_path")  # shipped scripts whose rollouts settle (and judge) every stage
GOAL_WALL = 0.03
COLLECTOR = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class Recorder(RolloutHook):
    """Keeps every lifecycle call of a rollout, to hand to another observer later."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def on_rollout_start(self, start: Any) -> None:
        self.calls.append(("on_rollout_start", start))

    def on_event(self, seen: EventSeen) -> None:
        self.calls.append(("on_event", seen))

    def on_action_closed(self, closed: Any) -> None:
        self.calls.append(("on_action_closed", closed))

    def on_halt(self, halted: Any) -> None:
        self.calls.append(("on_halt", halted))

    def on_rollout_end(self, end: Any) -> None:
        self.calls.append(("on_rollout_end", end))


def _script_names(script: str) -> list[str]:
    return [k for k in json.loads((SHIPPED / f"{script}.json").read_text()) if not k.startswith("_")]


def per_event_cost(recorded: list[list[tuple[str, Any]]], rounds: int, *, batch: bool) -> tuple[float, float, int]:
    """Microseconds per raw event of the observer exporting to memory, over ``rounds`` passes of the recorded rollouts:
    wall time, and the process's CPU time (every thread; on a loaded machine the wall time also holds the waits for a CPU)."""
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    telemetry = Telemetry.build(OtelSettings(), spans, logs, batch=batch)
    observer = OtelObserver(OtelSettings(), telemetry=telemetry)
    events = sum(1 for calls in recorded for name, _ in calls if name == "on_event") * rounds
    bound = [[(getattr(observer, name), payload) for name, payload in calls] for calls in recorded]
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        for calls in bound:
            for method, payload in calls:
                method(payload)
        # A real exporter lets go of what it sent: keeping every round's spans would make the garbage collector's passes,
        # and so this figure, grow with the rounds (about 2x at 20 rounds of 60 scenarios).
        telemetry.flush()
        spans.clear()
        logs.clear()
    telemetry.shutdown()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall / events * 1e6, cpu / events * 1e6, events


def _collector() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", COLLECTOR], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, f"http://127.0.0.1:{proc.stdout.readline().strip()}"


def _timed(name: str, scenario: Any, options: RunOptions, out: Path) -> float:
    start = time.perf_counter()
    run_scenario((name, scenario), options=options, output_directory=out)
    return time.perf_counter() - start


def live_wall(chosen: list[str], scenarios: dict[str, Any], script: Path, blueprints: Path, root: Path, repeat: int,
              url: str) -> dict[str, Any]:
    """Seconds of the rollouts without and with the observer (min over repeats per scenario, the flush charged)."""
    plain = RunOptions(agent="Scripted", user="Scripted", script=script, blueprint_dir=blueprints)
    observed = RunOptions(agent="Scripted", user="Scripted", script=script, blueprint_dir=blueprints,
                          observers=(OtelObserver(OtelSettings(endpoint=url)),))
    times: dict[str, dict[str, list[float]]] = {"plain": {n: [] for n in chosen}, "otel": {n: [] for n in chosen}}
    flush = 0.0
    for r in range(repeat):
        for i, n in enumerate(chosen):
            order = [("plain", plain), ("otel", observed)]
            if (i + r) % 2:
                order.reverse()
            for label, options in order:
                times[label][n].append(_timed(n, scenarios[n], options, root / f"{label}_{r}"))
        start = time.perf_counter()
        export.shutdown_all()  # what the command does at its end: charged to --otel
        flush = max(flush, time.perf_counter() - start)
    plain_s = sum(min(times["plain"][n]) for n in chosen)
    otel_s = sum(min(times["otel"][n]) for n in chosen) + flush
    per = statistics.median(min(times["otel"][n]) / min(times["plain"][n]) - 1 for n in chosen)
    return {"plain_seconds": round(plain_s, 4), "otel_seconds": round(otel_s, 4), "flush_seconds": round(flush, 4),
            "overhead": round(otel_s / plain_s - 1, 4), "median_per_scenario_overhead": round(per, 4)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=60, help="scenarios played (default 60, as in the issue)")
    parser.add_argument("--repeat", type=int, default=3, help="repeats of the live run (default 3)")
    parser.add_argument("--rounds", type=int, default=20, help="passes over the recorded rollouts for the per-event cost")
    parser.add_argument("--blueprints", type=Path, default=default_blueprint_dir())
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()
    configure_logging(False)

    scenarios = load_scenarios(None)
    names = sorted(n for n in scenarios if blueprint_path(args.blueprints, n).is_file())
    stride = max(1, len(names) // args.scenarios)
    chosen = names[::stride][: args.scenarios]
    collector, url = _collector()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            script = root / "explorer.json"
            script.write_text(json.dumps({n: explorer(list(public_view(n, scenarios[n]).tools)) for n in chosen}))
            recorded = []
            plays = [(script, n) for n in chosen] + [(SHIPPED / f"{f}.json", n) for f in SETTLING for n in _script_names(f)
                                                      if blueprint_path(args.blueprints, n).is_file()]
            for path, n in plays:
                rec = Recorder()
                run_scenario((n, scenarios[n]), options=RunOptions("Scripted", "Scripted", script=path, blueprint_dir=args.blueprints,
                                                                    observers=(rec,)), output_directory=root / "recorded")
                recorded.append(rec.calls)
            calls = sum(len(p.action.calls) for c in recorded for name, p in c if name == "on_action_closed")
            stages = sum(len(p.stages) for c in recorded for name, p in c if name == "on_action_closed")
            simple_wall, simple_cpu, events = per_event_cost(recorded, args.rounds, batch=False)
            batch_wall, batch_cpu, _ = per_event_cost(recorded, args.rounds, batch=True)
            live = live_wall(chosen, scenarios, script, args.blueprints, root, args.repeat, url)
    finally:
        collector.terminate()
        collector.wait()
    out = {"scenarios": len(chosen), "repeat": args.repeat, "raw_events": events, "calls": calls, "stages": stages,
           "per_event_us_simple_wall": round(simple_wall, 2), "per_event_us_simple_cpu": round(simple_cpu, 2),
           "per_event_us_batch_wall": round(batch_wall, 2), "per_event_us_batch_cpu": round(batch_cpu, 2),
           "per_event_goal_us": GOAL_PER_EVENT_US, **live, "wall_goal": GOAL_WALL}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"OpenTelemetry export over {len(chosen)} scenarios: {events // args.rounds} raw events ({calls} agent tool calls, {stages} "
          f"judged stages) handed to the observer {args.rounds} times; the live run x {args.repeat} repeats")
    print(f"  {'measure':<58}{'wall':>10}{'CPU':>10}{'goal':>10}")
    print(f"  {'export cost per raw event, us (in-memory, batched as --otel)':<58}{batch_wall:>10.2f}{batch_cpu:>10.2f}{GOAL_PER_EVENT_US:>10.1f}")
    print(f"  {'export cost per raw event, us (in-memory, each span exported)':<58}{simple_wall:>10.2f}{simple_cpu:>10.2f}{GOAL_PER_EVENT_US:>10.1f}")
    print(f"  {'measure':<58}{'measured':>10}{'':>10}{'goal':>10}")
    print(f"  {'live rollouts without --otel, s (min of repeats)':<58}{live['plain_seconds']:>10.3f}")
    print(f"  {'live rollouts with --otel to a local collector, s':<58}{live['otel_seconds']:>10.3f}")
    print(f"  {'wall time overhead of --otel (flush included)':<58}{live['overhead']:>+10.2%}{'':>10}{GOAL_WALL:>+10.0%}")
    print(f"  median per scenario {live['median_per_scenario_overhead']:+.2%}; end-of-run flush {live['flush_seconds']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
