"""Recorded rollouts re-executed in their scenarios with dynsteer live: ``dynsteer rerun``.

Each recording (``offline.transcripts``) is one job: in its worker the clock goes back to the
recording's start (``recorded_clock``), the scenario is built on that clock, and the recording's agent
and user (``roles.recorded``) play it again through the same live loop as ``dynsteer run``, so a halt
cuts the rollout where dynsteer would have cut the live one, and the run gets the same reports, run page
and summaries. Each result carries a ``recording`` block (``results.Reexecution``): ToolSandbox's
similarity as recorded beside the re-executed one, whether the recording reproduced, and the first step
where it did not.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from dynsteer_hook.files.names import NameBook
from dynsteer_hook.files.outputs import create_dir, reason, write_json_atomic
from dynsteer_hook.model.errors import OutputError
from dynsteer_hook.report.run_page import run_rows, write_run_page
from dynsteer_hook.report.run_summary import IN_FLIGHT, dynsteer_summary
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.live.engines import run_jobs
from dynsteer_hook.toolsandbox.live.playing import RunOptions, play_scenario
from dynsteer_hook.toolsandbox.live.results import Reexecution, ScenarioResult
from dynsteer_hook.toolsandbox.live.summaries import result_summary
from dynsteer_hook.toolsandbox.offline.transcripts import Transcript
from dynsteer_hook.toolsandbox.recorded_clock import at_recorded_time, recorded_build_time, scenario_at, starting_row_offsets
from dynsteer_hook.toolsandbox.roles.recorded import Playback, RecordedAgent, RecordedUser
from dynsteer_hook.toolsandbox.scenarios import load_scenarios

from tool_sandbox.common.execution_context import RoleType
from tool_sandbox.roles.execution_environment import ExecutionEnvironment

__all__ = ["SIMILARITY_TOLERANCE", "RerunJob", "label_transcripts", "reexecution_summary", "rerun_one", "rerun_recordings", "with_build_times"]

SIMILARITY_TOLERANCE = 1e-6
"""How far the re-executed similarity may be from the recorded one and still be the same."""
SUMMARY_FILE = "dynsteer_summary.json"
RESULT_SUMMARY = "result_summary.json"

MAX_RUN_SPAN = 24 * 3600.0
"""Seconds between two recordings' starts beyond which one's build time is not taken for the other's."""

RerunJob = tuple[str, Transcript]
"""A rollout's name in the run (its folder under ``trajectories/``) and its recording."""


def label_transcripts(transcripts: Sequence[Transcript]) -> list[RerunJob]:
    """Each recording's name in the run: its scenario's name when no other recording plays that scenario, else the
    scenario's name and the recording's file name; made safe and unique (``files.names``)."""
    counts: dict[str, int] = {}
    for t in transcripts:
        counts[t.scenario] = counts.get(t.scenario, 0) + 1
    book = NameBook()
    jobs = []
    for t in transcripts:
        wanted = t.scenario if counts[t.scenario] == 1 else f"{t.scenario}__{Path(t.source).stem}"
        jobs.append((book.claim(wanted), t))
    return jobs


def _check(transcript: Transcript, playback: Playback | None, result: ScenarioResult) -> Reexecution:
    """The ``recording`` block of a re-executed result."""
    check = Reexecution(source=transcript.source, scenario=transcript.scenario,
                        started_at=transcript.started_at.isoformat() if transcript.started_at else None,
                        built_at=transcript.built_at.isoformat() if transcript.built_at else None, built_from=transcript.built_from,
                        recorded_similarity=transcript.similarity)
    if playback is None:
        return check
    outcome = playback.outcome()
    check.moves, check.played, check.compared_calls = outcome["moves"], outcome["played"], outcome["compared_calls"]
    check.divergence = outcome.get("divergence")
    halted = bool(result.dynsteer and result.dynsteer.halted)
    if check.divergence is None and not halted and result.interrupted is None and result.exception_type is None:
        left = playback.peek()
        if left is not None:
            check.divergence = {"step": left.step, "reason": "the conversation ended before the recording did"}
    if result.interrupted is not None or result.exception_type is not None:
        check.reproduced = False if check.divergence else None
    elif check.divergence is not None:
        check.reproduced = False
    elif halted:
        check.reproduced = None  # every answer equal up to the halt: the rest was never played
    elif transcript.similarity is None or result.similarity is None:
        check.reproduced = None
    elif math.isclose(float(result.similarity), transcript.similarity, abs_tol=SIMILARITY_TOLERANCE):
        check.reproduced = True
    else:
        check.reproduced = False
        check.divergence = {"step": "end", "reason": f"ToolSandbox's similarity is {float(result.similarity):.4f}, the recording's "
                                                     f"{transcript.similarity:.4f}, with every call answered as recorded"}
    return check


def with_build_times(transcripts: Sequence[Transcript], preferred_tool_backend: str = "DEFAULT") -> list[Transcript]:
    """The recordings with when their scenarios were built, where it can be told.

    ToolSandbox builds every scenario of a run when the run starts, hours before its last rollout, and the
    scenario's starting rows (messages, reminders) carry times counted from then. A recording whose results show
    one of those rows tells its build time exactly; one that shows none takes the build time of the recording
    of the same run (the nearest start, built before it started) that tells it, and keeps its own start when no
    such recording was given.
    """
    offsets = starting_row_offsets(preferred_tool_backend)
    told: list[tuple[float, float, str]] = []  # (start, build, source)
    builds: list[float | None] = []
    for t in transcripts:
        build = recorded_build_time(t.results(), offsets) if t.started_at is not None else None
        builds.append(build)
        if build is not None and t.started_at is not None:
            told.append((t.started_at.timestamp(), build, t.source))
    out = []
    for t, build in zip(transcripts, builds, strict=True):
        if build is not None:
            out.append(t.model_copy(update={"built_at": dt.datetime.fromtimestamp(build, dt.timezone.utc), "built_from": "recording"}))
            continue
        start = t.started_at.timestamp() if t.started_at is not None else None
        near = None if start is None else min(((abs(s - start), b, src) for s, b, src in told if b <= start), default=None)
        if near is not None and near[0] <= MAX_RUN_SPAN:
            out.append(t.model_copy(update={"built_at": dt.datetime.fromtimestamp(near[1], dt.timezone.utc), "built_from": near[2]}))
        else:
            out.append(t)
    return out


def rerun_one(job: RerunJob, *, options: RunOptions, output_directory: Path, timezone: str = "UTC",
              preferred_tool_backend: str = "DEFAULT") -> dict[str, Any]:
    """Re-execute one recording on its clock with dynsteer live; its entry of ``per_scenario_results`` with a
    ``recording`` block. Whatever fails is this rollout's crash, never the worker's."""
    name, transcript = job
    playback: Playback | None = None
    categories: list[Any] = []
    try:
        variant = load_scenarios([transcript.scenario], preferred_tool_backend)[transcript.scenario]  # on the real clock
        with at_recorded_time(transcript.started_at, timezone) as clock:
            if clock is not None and transcript.built_at is not None:
                clock.to(min(transcript.built_at.timestamp(), clock.start))  # ToolSandbox built it before the rollout
            scenario = scenario_at(transcript.scenario, preferred_tool_backend, variant)
            scenario.max_messages = max(scenario.max_messages, transcript.rows)  # a recording made under a higher limit
            if clock is not None:
                clock.at(0.0)
            categories = scenario.categories
            playback = Playback(transcript, clock)
            agent = RecordedAgent(playback)
            roles = {RoleType.USER: RecordedUser(playback), RoleType.EXECUTION_ENVIRONMENT: ExecutionEnvironment(),
                     RoleType.AGENT: agent}
            result = play_scenario((name, scenario), options=options, output_directory=output_directory, roles=(roles, agent),
                                   scenario_name=transcript.scenario)
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # a scenario that cannot be built, a clock that cannot move: this rollout's crash
        result = ScenarioResult.crashed(name, categories, exc, 0)
    result.recording = _check(transcript, playback, result)
    return result.record()


def _given_up(job: RerunJob) -> dict[str, Any]:
    name, transcript = job
    result = ScenarioResult.stopped(name, [], IN_FLIGHT)
    result.recording = _check(transcript, None, result)
    return result.record()


def reexecution_summary(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How many recordings reproduced, did not (with each one's first divergence), or cannot tell."""
    checks = [(r["name"], r["recording"]) for r in results if isinstance(r.get("recording"), dict)]
    failed = [{"name": n, **(c.get("divergence") or {})} for n, c in checks if c.get("reproduced") is False]
    return {
        "recordings": len(checks),
        "reproduced": sum(1 for _, c in checks if c.get("reproduced") is True),
        "not_reproduced": len(failed),
        "undecided": sum(1 for _, c in checks if c.get("reproduced") is None),
        "divergences": sorted(failed, key=lambda f: f["name"]),
    }


def rerun_recordings(jobs: Sequence[RerunJob], options: RunOptions, output_directory: Path, processes: int, *,
                     timezone: str = "UTC", engine: str = "local", ray_address: str | None = None,
                     progress: Callable[[dict[str, Any]], None] | None = None, title: str | None = None) -> list[dict[str, Any]]:
    """Re-execute recordings (in worker processes when ``processes`` > 1) and write the run's summaries and page.

    Raises:
        OutputError: A summary cannot be written (one sentence; the rollouts' files stay).
    """
    items = list(jobs)
    if any(t.started_at is not None for _, t in items):
        items = list(zip([n for n, _ in items], with_build_times([t for _, t in items]), strict=True))
    random.shuffle(items)  # load balancing, as a run does
    worker = partial(rerun_one, options=options, output_directory=output_directory, timezone=timezone)
    create_dir(output_directory, "-o/--output_dir")
    results = list(run_jobs(worker, items, processes=processes, engine=engine, ray_address=ray_address, stopped=_given_up,
                            on_result=progress))
    try:
        write_json_atomic(output_directory / RESULT_SUMMARY, result_summary(results))
        summary = dynsteer_summary(results)
        summary["reexecution"] = reexecution_summary(results)
        write_json_atomic(output_directory / SUMMARY_FILE, summary)
        if options.write_reports:
            write_run_page(output_directory, title or f"dynsteer rerun: {output_directory.name}",
                           run_rows(sorted(results, key=lambda r: r["name"])))
    except OSError as exc:
        raise OutputError(f"the rerun's summaries cannot be written to {output_directory} ({reason(exc)}); the rollouts' files "
                          "written there are kept; free some space and run again") from None
    return results
