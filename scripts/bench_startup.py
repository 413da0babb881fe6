"""Start-up figures of the commands (issue 17): each command against ``python -c pass``, in one run.

    python scripts/bench_startup.py            # 10 runs each, paired with python -c pass
    python scripts/bench_startup.py -n 20

The commands: ``dynsteer --help`` and ``dynsteer validate`` (bound 0.5 s), and ``dynsteer evaluate``
of a 20-event file with Tier 1 only (bound 1 s). The blueprint is a shipped one (cellular_off);
the events are written here. Each command runs in turn with ``python -c pass`` (A B A B ...), so
the ratio is taken pair by pair and survives a machine whose speed drifts. farm-bench times the
pairs when it is installed (its whole-process wall and CPU seconds); otherwise this script does,
with wall seconds only. The medians are printed, with the ratio to ``python -c pass``.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dynsteer_hook.files.blueprints import shipped_blueprint_dir
from dynsteer_hook.files.events import EventLog
from dynsteer_hook.model.events import AgentMessage, ToolCall, ToolResult, UserMessage

BLUEPRINT = "cellular_off"


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """A shipped blueprint and 20 events of a run against it (a user request, nine calls and results, a reply)."""
    bp = folder / "bp.json"
    shutil.copy(shipped_blueprint_dir() / f"{BLUEPRINT}.json", bp)
    events = folder / "events.jsonl"
    log = EventLog(events)
    log.write(UserMessage("Turn off cellular service"))
    for i in range(9):
        log.write(ToolCall(f"c{i}", "set_cellular_service_status", {"on": False}))
        log.write(ToolResult(f"c{i}", None, None))
    log.write(AgentMessage("Cellular service is off."))
    log.close()
    return bp, events


def farm_bench(command: list[str], baseline: list[str], runs: int) -> dict[str, float]:
    """Median wall and CPU seconds of ``command`` and ``baseline``, and their paired wall ratio, from farm-bench."""
    done = subprocess.run(["farm-bench", "-n", str(runs), "--timeout", "600", "--vs", shlex.join(baseline), "--", *command],
                          capture_output=True, text=True, check=True)
    figures: dict[str, float] = {}
    for key, label in (("wall", "A wall s"), ("cpu", "A cpu s"), ("base_wall", "B wall s"), ("base_cpu", "B cpu s"), ("ratio", "A/B wall")):
        m = re.search(rf"^{re.escape(label)}\s+\S+\s+(\S+)", done.stdout, flags=re.M)
        if m is None:
            raise SystemExit(f"farm-bench printed no '{label}' line:\n{done.stdout}")
        figures[key] = float(m.group(1))
    return figures


def own_timing(command: list[str], baseline: list[str], runs: int) -> dict[str, float]:
    """Median wall seconds of ``command`` and ``baseline`` run in turn, and the median of the paired ratios."""
    def wall(cmd: list[str]) -> float:
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start

    wall(command), wall(baseline)  # warm-up: the file cache, the bytecode
    pairs = [(wall(command), wall(baseline)) for _ in range(runs)]
    return {"wall": statistics.median(a for a, _ in pairs), "base_wall": statistics.median(b for _, b in pairs),
            "ratio": statistics.median(a / b for a, b in pairs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-n", "--runs", type=int, default=10, help="runs of each command (and as many of python -c pass)")
    args = parser.parse_args()
    python = sys.executable
    baseline = [python, "-c", "pass"]
    timer = farm_bench if shutil.which("farm-bench") else own_timing
    with tempfile.TemporaryDirectory() as tmp:
        bp, events = write_inputs(Path(tmp))
        dynsteer = [python, "-m", "dynsteer_hook.cli"]
        cases = [
            ("dynsteer --help", [*dynsteer, "--help"], 0.5),
            ("dynsteer validate", [*dynsteer, "validate", str(bp)], 0.5),
            ("dynsteer evaluate, 20 events, Tier 1", [*dynsteer, "evaluate", "--blueprint", str(bp), "--events", str(events),
                                                      "--report", str(Path(tmp) / "report")], 1.0),
        ]
        print(f"timed by {'farm-bench' if timer is farm_bench else 'this script'}, {args.runs} runs each, medians; "
              f"baseline: {shlex.join(baseline)}")
        print(f"{'command':40} {'wall s':>8} {'cpu s':>8} {'pass wall s':>12} {'ratio':>7} {'bound s':>8}")
        for label, command, bound in cases:
            f = timer(command, baseline, args.runs)
            cpu = f"{f['cpu']:.3f}" if "cpu" in f else "-"
            verdict = "ok" if f["wall"] <= bound else "OVER"
            print(f"{label:40} {f['wall']:8.3f} {cpu:>8} {f['base_wall']:12.3f} {f['ratio']:7.2f} {bound:8.1f} {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
