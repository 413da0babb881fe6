"""``dynsteer rerun``: recorded rollouts re-executed in their scenarios, on their clock, with dynsteer live."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

from dynsteer_hook.model.errors import DynsteerError


def add_rerun_parser(sub: Any, *, flags: bool = True) -> None:
    """Declare ``rerun``, with its flags unless ``flags`` is false."""
    p = sub.add_parser(
        "rerun",
        help="re-execute recorded trajectories in their ToolSandbox scenarios with dynsteer live (halts cut them)",
        description="Each recording (a trajectory record file, a folder of them, or a ToolSandbox run folder with "
        "conversation.json per scenario) is played again as scripted agent and user in its scenario, with this process's "
        "clock set to the recording's start from scenario building on, so ToolSandbox's similarity of the re-execution is "
        "the recorded one. dynsteer judges it live: a halt cuts the rollout there. Writes a run folder as dynsteer run does "
        "(reports, index.html, result_summary.json, dynsteer_summary.json) with the recorded similarity beside the "
        "re-executed one, and names the first step of every recording that did not reproduce.",
    )
    if not flags:
        return
    from dynsteer_hook.flags import add_config_flags, add_judge_flags, add_otel_flags
    from dynsteer_hook.report.gates import add_gate_flags
    from dynsteer_hook.toolsandbox.live.engines import add_engine_flags

    # "*", not "+": a missing source gets the one-sentence error of this command, not argparse's usage dump.
    p.add_argument("sources", nargs="*", type=Path, metavar="RECORDING",
                   help="trajectory record files (.json), folders of them, or ToolSandbox run folders")
    p.add_argument("-o", "--output_dir", type=Path, default=Path("data"), help="output base directory (default data/)")
    p.add_argument("-p", "--parallel", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--evaluator", choices=["native", "dynsteer"], default="dynsteer",
                   help="dynsteer (live, default) or native (ToolSandbox's evaluation alone: checks that recordings reproduce)")
    p.add_argument("--blueprints", type=Path, default=None, help="directory of blueprints named <scenario>.json (default: the shipped ones)")
    p.add_argument("--timezone", default="UTC", metavar="ZONE",
                   help="the recording machine's time zone, an IANA name (default UTC); ToolSandbox reads local time")
    p.add_argument("--started-at", default=None, metavar="ISO_TIME",
                   help="when the recordings started, for run folders whose name holds no time (e.g. 2026-08-05T04:48:20Z)")
    p.add_argument("--no-events", action="store_true", help="do not write dynsteer_events.jsonl per rollout")
    p.add_argument("--similarity-budget", type=float, default=None, metavar="SECONDS",
                   help="seconds ToolSandbox's own similarity of one re-executed rollout may take; past it the similarity is "
                        "unknown, with the reason, and the recording undecided (default 300, env DYNSTEER_RUN_SIMILARITY_BUDGET)")
    p.add_argument("--allow-stale-blueprints", action="store_true",
                   help="play blueprints compiled from another version of the scenario's public view (reported as stale)")
    add_engine_flags(p)
    add_config_flags(p)
    add_judge_flags(p)
    add_otel_flags(p)
    add_gate_flags(p)
    p.set_defaults(func=cmd_rerun)


def _zone(name: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise DynsteerError(f"--timezone {name!r} is not a time zone this machine knows; give an IANA name such as UTC or "
                            "Europe/Paris") from None
    return name


def _start(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise DynsteerError(f"--started-at {text!r} is not an ISO time; give one such as 2026-08-05T04:48:20Z") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def _line(result: dict[str, Any]) -> str:
    """The verdict line of a run plus what the re-execution shows of its recording."""
    from dynsteer_hook.toolsandbox.commands.run import _verdict

    rec = result.get("recording") or {}
    recorded = rec.get("recorded_similarity")
    tail = "" if recorded is None else f"; recorded similarity {recorded:.3f}"
    if rec.get("reproduced") is False:
        div = rec.get("divergence") or {}
        tail += f"; NOT REPRODUCED at {div.get('step', '?')}: {div.get('reason', '')}"
    return f"{result['name']}: {_verdict(result)}{tail}"


def cmd_rerun(args: argparse.Namespace) -> int:
    """Run ``dynsteer rerun``."""
    from dynsteer_hook.files.outputs import check_output_dir, claim_new_dir
    from dynsteer_hook.flags import config_from_args, judges_from_args, otel_observers, otel_shutdown
    from dynsteer_hook.report.run_page import run_rows
    from dynsteer_hook.report.run_summary import interruption
    from dynsteer_hook.toolsandbox.commands.gating import gated_status, gates_of, row_measures, verdicts
    from dynsteer_hook.toolsandbox.commands.run import EXIT_INTERRUPTED, _crash_status
    from dynsteer_hook.toolsandbox.live.engines import check_engine
    from dynsteer_hook.toolsandbox.live.playing import RunOptions
    from dynsteer_hook.toolsandbox.live.preflight import check_blueprint_dir
    from dynsteer_hook.toolsandbox.live.progress import RunProgress
    from dynsteer_hook.toolsandbox.live.runner import timestamp
    from dynsteer_hook.toolsandbox.offline.rerun import label_transcripts, rerun_recordings
    from dynsteer_hook.toolsandbox.offline.transcripts import TranscriptError, find_transcripts

    if not args.sources:
        raise DynsteerError("rerun needs recordings: give trajectory record files, folders of them, or ToolSandbox run folders")
    if args.parallel < 1:
        raise DynsteerError(f"-p/--parallel {args.parallel} must be at least 1")
    check_engine(args.engine, args.ray_address)
    if args.otel is not None and args.evaluator != "dynsteer":
        raise DynsteerError("--otel exports what dynsteer judged: drop --evaluator native, or drop --otel")
    gates = gates_of(args, args.evaluator)
    zone, start = _zone(args.timezone), _start(args.started_at)
    settings, config = judges_from_args(args, config_from_args(args))
    settings.build()
    check_output_dir(args.output_dir, "-o/--output_dir")
    if args.evaluator == "dynsteer":
        check_blueprint_dir(args.blueprints)
    transcripts: list[Any] = []
    skipped: list[Any] = []
    for found in find_transcripts(args.sources, start):
        (skipped if isinstance(found, TranscriptError) else transcripts).append(found)
    for problem in skipped:
        print(f"skipped: {problem}", file=sys.stderr)
    if not transcripts:
        raise DynsteerError(f"none of the {len(skipped)} recording(s) can be played again (each reason above); nothing was run")
    from dynsteer_hook.toolsandbox.commands.run import _similarity

    options = RunOptions(agent="Scripted", user="Scripted", evaluator=args.evaluator, blueprint_dir=args.blueprints,
                         similarity=_similarity(args),
                         config=config, judges=settings, write_events=not args.no_events, allow_stale=args.allow_stale_blueprints,
                         observers=otel_observers(args, source="rerun", theta_pass=config.theta_pass,
                                                  inputs=(args.blueprints, *args.sources)))
    out = claim_new_dir(args.output_dir / f"rerun_{timestamp()}", "-o/--output_dir")
    print(f"Re-executing {len(transcripts)} recording(s); storing outputs to '{out}'.")
    jobs = label_transcripts(transcripts)
    try:
        with RunProgress(len(jobs), label="dynsteer rerun") as progress:
            results = rerun_recordings(jobs, options, out, args.parallel, timezone=zone, engine=args.engine,
                                       ray_address=args.ray_address, progress=progress.finished)
    finally:
        otel_shutdown(options.observers)
    for r in sorted(results, key=lambda r: r["name"]):
        print(_line(r))
    checks = [r["recording"] for r in results if r.get("recording")]
    same = sum(1 for c in checks if c.get("reproduced") is True)
    differ = sum(1 for c in checks if c.get("reproduced") is False)
    print(f"re-executed {len(results)} recording(s): {same} reproduced the recorded similarity, {differ} did not, "
          f"{len(checks) - same - differ} cut by a halt or without a recorded similarity (answers equal up to the cut); "
          f"{len(skipped)} skipped; run page {out / 'index.html'}")
    sys.stdout.flush()
    if interruption(results) is not None:
        print(f"dynsteer: interrupted; the summaries of the finished rollouts are in {out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    judged = verdicts(gates, row_measures(run_rows(results)))
    return gated_status(judged, _crash_status(results, out / "result_summary.json"))
