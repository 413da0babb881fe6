"""Resume figures (issue 32): the time to reach a run's summaries after an interruption half-way, against the run never stopped.

    python scripts/bench_resume.py               # 20 scenarios, -p 1, median of 3 rounds
    python scripts/bench_resume.py -n 60 -p 2 -r 5

The sweep is scripted (no model, no network): the shipped agents' moves on their five scenarios (completions, halts, first
errors) and, up to ``-n``, further scenarios whose scripted user says the first message and whose scripted agent answers
nothing. Four ``dynsteer run`` processes, timed wall to wall:

* ``full``: the sweep played without a stop;
* ``cut``: the same sweep sent SIGINT (to its process group, as a terminal's Ctrl-C) once half of its scenarios wrote their
  records;
* ``resume``: ``--resume`` of the cut run's folder, which plays what the cut left;
* ``start-up``: ``--resume`` of the finished folder, which plays nothing (what any resume costs before its first rollout).

It prints them side by side with ``resume / full`` (near 0.5 plus the start-up's share) and checks that the resumed run's
summaries (scores, outcomes, halts, first errors, similarities) equal the full run's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dynsteer_hook.data import shipped_scripts
from dynsteer_hook.files.blueprints import shipped_blueprint_dir

MOVES = {"cellular_off": "clean_solver", "send_message_with_contact_content_cellular_off": "looping_agent",
         "send_message_with_contact_content_cellular_off_multiple_user_turn": "clean_solver",
         "send_message_with_contact_content_cellular_off_insufficient_information": "minefield_agent",
         "send_message_with_contact_content_cellular_off_3_distraction_tools_tool_name_scrambled": "looping_agent"}
RESULT_FILE = "dynsteer_result.json"


def sweep(folder: Path, scenarios: int) -> tuple[Path, list[str]]:
    """The script of the sweep and its scenario names."""
    scripts = shipped_scripts()
    script: dict[str, Any] = {name: json.loads(scripts[source].read_text(encoding="utf-8"))[name] for name, source in MOVES.items()}
    others = sorted(p.stem for p in shipped_blueprint_dir().glob("*.json") if p.stem not in MOVES and p.stem != "schema")
    for name in others[: max(0, scenarios - len(script))]:
        script[name] = {"agent": [], "user": []}
    path = folder / "sweep.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    return path, list(script)


def command(script: Path, names: list[str], processes: int, *more: str) -> list[str]:
    return [sys.executable, "-m", "dynsteer_hook.cli", "run", "--agent", "Scripted", "--user", "Scripted", "--script", str(script),
            "-p", str(processes), "-s", *names, *more]


def timed(argv: list[str], stop_after: int | None = None, watch: Path | None = None) -> tuple[float, int]:
    """Wall seconds and exit status of ``argv``; with ``stop_after``, SIGINT to its group once that many records are in ``watch``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    if stop_after is not None and watch is not None:
        while proc.poll() is None and len(list(watch.glob(f"*/trajectories/*/{RESULT_FILE}"))) < stop_after:
            time.sleep(0.01)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
    status = proc.wait()
    return time.perf_counter() - start, status


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if not k.endswith("seconds") and k != "git_sha"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def summaries(run: Path) -> Any:
    """Both summaries of a run, without seconds, each scenario's entry in name order."""
    dyn = json.loads((run / "dynsteer_summary.json").read_text(encoding="utf-8"))
    res = json.loads((run / "result_summary.json").read_text(encoding="utf-8"))
    dyn["per_scenario"].sort(key=lambda r: r["name"])
    res["per_scenario_results"].sort(key=lambda r: r["name"])
    return _timeless([dyn, res])


def only_dir(base: Path) -> Path:
    (run,) = [p for p in base.iterdir() if p.is_dir()]
    return run


def one_round(folder: Path, script: Path, names: list[str], processes: int) -> tuple[dict[str, float], int, bool]:
    """Seconds of the four runs in ``folder``, the records the cut left, and whether the resumed summaries equal the full run's."""
    seconds: dict[str, float] = {}
    seconds["full"], status = timed(command(script, names, processes, "-o", str(folder / "full")))
    assert status == 0, f"the full run exited {status}"
    full = only_dir(folder / "full")
    seconds["cut"], _ = timed(command(script, names, processes, "-o", str(folder / "cut")), len(names) // 2, folder / "cut")
    cut = only_dir(folder / "cut")
    kept = len(list(cut.glob(f"trajectories/*/{RESULT_FILE}")))
    seconds["resume"], status = timed(command(script, names, processes, "--resume", str(cut)))
    assert status == 0, f"the resume exited {status}"
    seconds["start-up"], _ = timed(command(script, names, processes, "--resume", str(full)))
    return seconds, kept, summaries(cut) == summaries(full)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--scenarios", type=int, default=20, help="scenarios in the sweep (at least 5; default 20)")
    parser.add_argument("-p", "--parallel", type=int, default=1, help="worker processes of each run (default 1)")
    parser.add_argument("-r", "--rounds", type=int, default=3, help="rounds of the four runs; medians are printed (default 3)")
    args = parser.parse_args()
    rounds: list[dict[str, float]] = []
    kept: list[int] = []
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        script, names = sweep(Path(tmp), args.scenarios)
        for r in range(args.rounds):
            folder = Path(tmp) / f"round{r}"
            folder.mkdir()
            seconds, left, equal = one_round(folder, script, names, args.parallel)
            rounds.append(seconds)
            kept.append(left)
            same = same and equal
    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    print(f"sweep: {len(names)} scripted scenarios, -p {args.parallel}, median of {args.rounds} round(s); cut by SIGINT after "
          f"{len(names) // 2} records ({', '.join(map(str, kept))} on disk when it stopped)")
    print(f"{'run':<30}{'wall s':>10}{'/ full':>10}")
    for label, key in (("full (never stopped)", "full"), ("cut (until SIGINT)", "cut"), ("resume of the cut", "resume"),
                       ("start-up (resume, 0 to play)", "start-up")):
        print(f"{label:<30}{median[key]:>10.2f}{median[key] / median['full']:>10.2f}")
    played = (median["resume"] - median["start-up"]) / max(median["full"] - median["start-up"], 1e-9)
    print(f"resume / full {median['resume'] / median['full']:.2f}; without the start-up on either side {played:.2f}; "
          f"summaries identical to the full run's: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
