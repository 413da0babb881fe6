"""Scale benchmark: time and peak memory of ``dynsteer evaluate`` against blueprint size and trace length.

Run it from the repository root (the package must be importable, e.g. after
``pip install -e .``)::

    python scripts/bench_scale.py                    # every case, a table
    python scripts/bench_scale.py --json             # one JSON object on stdout
    python scripts/bench_scale.py --only chain       # cases whose name contains "chain"
    python scripts/bench_scale.py --code DIR         # measure another copy of the package (e.g. an older revision)

The package measured is this checkout's (put first on ``PYTHONPATH``), or the one in DIR.

It prints, never asserts. Each case is measured in its own subprocess, which runs the
command users run (``dynsteer evaluate``: read the blueprint, validate it, stream the events
through the evaluator with the audit log on disk, write the JSON and Markdown reports) and
reports its CPU time (user + system, steadier than wall time on a shared machine), its wall
time, and its peak resident memory (``ru_maxrss``) beside the growth over the resident
memory the same process had after its imports. The input files are generated beforehand
by this process and are not counted.

Cases, in families of two sizes a factor 10 apart (the growth ratio is the larger size's
figure over the smaller's; linear growth is a ratio near 10):

* ``chain-N/short``: a chain of N milestones, a 12-event trace that settles the first five;
* ``chain-N/full``, ``wide-N/full``, ``diamond-N/full``: a chain, N parallel branches
  (no edges), and a chain of diamonds, each with a trace that settles every milestone;
* ``events-E``: a 20-milestone chain with a fatal minefield on sends to numbers the agent
  was never shown, and a trace of E events (user messages, lookups whose results carry
  phone numbers, sends to those numbers, agent messages) that settles a milestone every
  E/20 events. Stop thresholds are lifted so the whole trace is evaluated.

Every blueprint uses a catalog of 20 tools; milestone i calls ``tool_{i % 20}`` with
``x == "v{i}"``, so many milestones share a tool, as compiled blueprints do.

Each row also shows the figures of the previous evaluator (commit af6d73d, measured with
this script on the same 2-core machine, ``--code`` pointing at a copy of that revision), whose
ancestor sets, window scans and grounding scans grew quadratically.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
N_TOOLS = 20
EVENT_MILESTONES = 20
LIFTED = ["--n-stag", "1000000000", "--low-score-patience", "1000000000", "--structural-patience", "1000000000"]
DEFAULT_TIMEOUT = 900.0

# Previous evaluator (af6d73d): case -> (CPU seconds, peak RSS MB); None: not finished within 2400 s.
PREVIOUS: dict[str, tuple[float, float] | None] = {
    "chain-1000/short": (0.07, 77), "chain-10000/short": (6.35, 2368),
    "chain-1000/full": (0.40, 91), "chain-10000/full": (30.26, 2496),
    "wide-1000/full": (0.70, 69), "wide-10000/full": (61.29, 220),
    "diamond-1000/full": (0.44, 91), "diamond-10000/full": (29.08, 2497),
    "events-100000/long": (26.13, 216), "events-1000000/long": None,
}

# (family, trace, sizes)
CASES: list[tuple[str, str, tuple[int, int]]] = [
    ("chain", "short", (1_000, 10_000)),
    ("chain", "full", (1_000, 10_000)),
    ("wide", "full", (1_000, 10_000)),
    ("diamond", "full", (1_000, 10_000)),
    ("events", "long", (100_000, 1_000_000)),
]

# ---- inputs --------------------------------------------------------------------------


def _catalog() -> list[dict[str, Any]]:
    tools = [
        {
            "name": f"tool_{i}",
            "description": f"operation {i}",
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
        }
        for i in range(N_TOOLS)
    ]
    tools.append({
        "name": "search_contacts",
        "description": "find contacts by name",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    })
    tools.append({
        "name": "send_message",
        "description": "send a text message",
        "parameters": {
            "type": "object",
            "properties": {"phone_number": {"type": "string"}, "content": {"type": "string"}},
            "required": ["phone_number", "content"],
        },
    })
    return tools


def _milestone(i: int) -> dict[str, Any]:
    return {"id": f"m{i}", "tool": f"tool_{i % N_TOOLS}", "args": [{"arg": "x", "op": "eq", "value": f"v{i}"}],
            "description": f"step {i}"}


def family_edges(family: str, n: int) -> list[tuple[int, int]]:
    """Edges of a graph family over milestones 0..n-1 (their indices are a topological order)."""
    if family == "chain" or family == "events":
        return [(i, i + 1) for i in range(n - 1)]
    if family == "wide":
        return []
    if family == "diamond":  # top -> (left, right) -> bottom, the bottom being the next top
        edges = []
        for top in range(0, n - 3, 3):
            edges += [(top, top + 1), (top, top + 2), (top + 1, top + 3), (top + 2, top + 3)]
        return edges
    raise ValueError(family)


def blueprint_record(family: str, n: int) -> dict[str, Any]:
    """The blueprint of a case, as its JSON record."""
    bp: dict[str, Any] = {
        "task": f"{family}-{n}",
        "milestones": [_milestone(i) for i in range(n)],
        "edges": [{"source": f"m{u}", "target": f"m{v}"} for u, v in family_edges(family, n)],
        "catalog": _catalog(),
    }
    if family == "events":
        bp["minefields"] = [{
            "id": "send_to_stranger", "tool": "send_message", "fatal": True,
            "args": [{"arg": "phone_number", "op": "grounded", "value": False}],
            "reason": "a message to a number the agent was never shown",
        }]
    return bp


def _call(call_id: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "tool_call", "call_id": call_id, "tool": tool, "arguments": args}


def _result(call_id: str, result: Any) -> dict[str, Any]:
    return {"kind": "tool_result", "call_id": call_id, "result": result}


def settle_trace(n: int, short: bool) -> Iterator[dict[str, Any]]:
    """A user request, one settling call per milestone in index order (five when short), a reply."""
    yield {"kind": "user_message", "content": "please do every step"}
    for i in range(5 if short else n):
        yield _call(f"c{i}", f"tool_{i % N_TOOLS}", {"x": f"v{i}"})
        yield _result(f"c{i}", {"ok": True, "step": i})
    yield {"kind": "agent_message", "content": "all done"}


def long_trace(n_events: int) -> Iterator[dict[str, Any]]:
    """About ``n_events`` events of realistic noise, settling the 20 milestones evenly along the way."""
    every = max(1, n_events // EVENT_MILESTONES)
    k = settled = block = 0
    while k < n_events:
        block += 1
        phone = f"+1 (415) {block % 1000:03d}-{block % 10000:04d}"
        name = f"Person {block}"
        yield {"kind": "user_message", "content": f"Text {name} about the meeting number {block}, please."}
        yield _call(f"s{block}", "search_contacts", {"name": name})
        yield _result(f"s{block}", [{"name": name, "phone_number": phone, "contact_id": f"id-{block:08d}-aa"}])
        yield _call(f"t{block}", "send_message", {"phone_number": phone.replace(" ", ""), "content": f"meeting {block}"})
        yield _result(f"t{block}", {"message_id": f"msg-{block}"})
        yield {"kind": "agent_message", "content": f"I sent the message to {name}."}
        k += 6
        if k >= every * (settled + 1) and settled < EVENT_MILESTONES:
            yield _call(f"c{settled}", f"tool_{settled % N_TOOLS}", {"x": f"v{settled}"})
            yield _result(f"c{settled}", {"ok": True})
            settled += 1
            k += 2


def write_case(family: str, size: int, trace: str, folder: Path) -> tuple[Path, Path, list[str]]:
    """Write a case's blueprint and events into ``folder``; return their paths and extra CLI flags."""
    n = EVENT_MILESTONES if family == "events" else size
    bp_path, ev_path = folder / "blueprint.json", folder / "events.jsonl"
    bp_path.write_text(json.dumps(blueprint_record(family, n)), encoding="utf-8")
    events = long_trace(size) if family == "events" else settle_trace(n, short=trace == "short")
    with ev_path.open("w", encoding="utf-8") as f:
        for record in events:
            f.write(json.dumps(record) + "\n")
    return bp_path, ev_path, LIFTED if family == "events" else []


# ---- measuring -------------------------------------------------------------------------


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kilobytes on Linux


def child(argv: list[str]) -> None:
    """Run one ``dynsteer evaluate`` in this process and print its figures as JSON."""
    from dynsteer_hook.cli import main

    base = _rss_mb()
    start, cpu = time.perf_counter(), _cpu_seconds()
    status = main(["evaluate", *argv])
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    report = json.loads((Path(argv[argv.index("--report") + 1]) / "dynsteer_report.json").read_text(encoding="utf-8"))
    print(json.dumps({
        "status": status, "cpu_seconds": cpu, "seconds": seconds, "peak_rss_mb": _rss_mb(), "base_rss_mb": base, "grown_mb": _rss_mb() - base,
        "outcome": report["outcome"], "k": report["k"], "t": report["t"], "settled": len(report["settled"]),
    }))


def measure(family: str, size: int, trace: str, code: str | None, timeout: float) -> dict[str, Any]:
    """Figures of one case, measured in a fresh subprocess."""
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        folder = Path(tmp)
        bp, events, flags = write_case(family, size, trace, folder)
        env = dict(os.environ)
        env["PYTHONPATH"] = (code or str(REPOSITORY)) + os.pathsep + env.get("PYTHONPATH", "")
        argv = [sys.executable, __file__, "--child", "--blueprint", str(bp), "--events", str(events),
                "--report", str(folder / "report"), *flags]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return {"error": f"not finished within {timeout:g} s"}
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:200]}
        return dict(json.loads(lines[-1]))


def _fmt(row: dict[str, Any], key: str, spec: str) -> str:
    return format(row[key], spec) if key in row else "-"


def _previous(name: str) -> str:
    if name not in PREVIOUS:
        return "-"
    figures = PREVIOUS[name]
    return "not finished within 2400 s" if figures is None else f"{figures[0]:.2f} s CPU, {figures[1]:.0f} MB"


def _ratio(small: dict[str, Any], large: dict[str, Any], key: str) -> str:
    if key not in small or key not in large or not small[key]:
        return "-"
    return f"{large[key] / small[key]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this text")
    parser.add_argument("--code", default=None, help="directory to put first on PYTHONPATH (another copy of the package)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds allowed per case")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.child:
        child(rest)
        return
    results: list[dict[str, Any]] = []
    for family, trace, sizes in CASES:
        rows = []
        for size in sizes:
            name = f"{family}-{size}/{trace}"
            if args.only not in name:
                continue
            row = {"case": name, "family": family, "trace": trace, "size": size, **measure(family, size, trace, args.code, args.timeout),
                   "previous": PREVIOUS.get(name)}
            rows.append(row)
            if not args.json:
                print(f"{name:<24} {_fmt(row, 'cpu_seconds', '8.2f')} s CPU {_fmt(row, 'seconds', '8.2f')} s wall "
                      f"{_fmt(row, 'peak_rss_mb', '7.0f')} MB peak "
                      f"({_fmt(row, 'grown_mb', '7.0f')} MB over base) k={row.get('k', '-')} t={row.get('t', '-')} "
                      f"{row.get('outcome', row.get('error', ''))}; previous evaluator: {_previous(name)}", flush=True)
        if len(rows) == 2:
            small, large = rows
            growth = {"case": f"{family}/{trace}", "time_ratio": _ratio(small, large, "cpu_seconds"),
                      "peak_ratio": _ratio(small, large, "peak_rss_mb"), "grown_ratio": _ratio(small, large, "grown_mb")}
            rows.append(growth)
            if not args.json:
                print(f"{'  growth x10':<24} CPU time x{growth['time_ratio']}, peak memory x{growth['peak_ratio']} (over base x{growth['grown_ratio']})", flush=True)
        results.extend(rows)
    if args.json:
        print(json.dumps({"python": platform.python_version(), "cpus": os.cpu_count(), "code": args.code, "cases": results}, indent=2))


if __name__ == "__main__":
    main()
