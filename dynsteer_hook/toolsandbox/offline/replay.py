"""``dynsteer replay``: the evaluator over recorded ToolSandbox runs, with virtual stops.

Each recorded scenario is read back as events (``recording``), evaluated by the same
evaluator with the same blueprints, configuration and judges as a live run, and reported in
the same files. A halt in replay is a *virtual stop*, mapped onto the recording's execution
batches (one batch per agent turn): with ``b_stop`` the batch in which the stop fired and
``b_full`` the batches recorded, stop progress is p = b_stop / b_full and saved progress
q = 1 - p (paper §4). The seconds and tokens a stop would have saved are given where the
recording has them (``dynsteer run`` records them per agent turn).

Inspect ``.eval`` logs are replayed the same way, sample by sample (``dynsteer_hook.inspect.replay``).

Scenarios that cannot be replayed (missing or truncated files, another ToolSandbox revision,
no blueprint) are skipped with their reason in the summary; the rest go on.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from dynsteer_hook.files.blueprints import load_blueprint
from dynsteer_hook.files.events import EventLog
from dynsteer_hook.files.names import NameBook, is_entry_name
from dynsteer_hook.files.outputs import check_apart, check_below, check_output_dir, create_dir, json_text, open_log, write_json_atomic
from dynsteer_hook.files.outputs import reason as os_reason
from dynsteer_hook.llm.judges import JudgeSettings, judge_cache_stats
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.errors import BlueprintError, DynsteerError, Halt, OutputError
from dynsteer_hook.model.records import IncompleteLog, NativeSimilarity, with_files
from dynsteer_hook.report.run_page import INDEX_HTML, replay_rows, run_folder, write_run_page
from dynsteer_hook.report.run_summary import ErrorBrief, StopBrief, clip
from dynsteer_hook.report.writer import AUDIT_LOG, write_run_report
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.toolsandbox.live.engines import check_engine, run_jobs
from dynsteer_hook.toolsandbox.live.hook import EventSeen, RolloutEnd, RolloutHook, RolloutStart, finish_observed, judge_event
from dynsteer_hook.toolsandbox.live.progress import RunProgress
from dynsteer_hook.toolsandbox.live.results import native_similarity
from dynsteer_hook.toolsandbox.offline.recording import (
    RESULT_SUMMARY,
    BatchCost,
    Recording,
    RecordingError,
    _read_json,
    _shown,
    agent_batches,
    load_recording,
    recorded_events,
    summary_entry_problem,
)

REPLAY_SUMMARY = "replay_summary.json"
EVENTS_FILE = "dynsteer_events.jsonl"


@dataclass(frozen=True, slots=True)
class VirtualStop:
    """Where a replayed halt falls on the recorded trajectory, and what stopping there saves."""

    batch: int
    batches: int
    saved_batches: int
    stop_progress: float
    saved_progress: float
    seconds_saved: float | None
    tokens_saved: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "b_stop": self.batch, "b_full": self.batches, "saved_batches": self.saved_batches,
            "stop_progress": round(self.stop_progress, 6), "saved_progress": round(self.saved_progress, 6),
            "seconds_saved": None if self.seconds_saved is None else round(self.seconds_saved, 4),
            "tokens_saved": self.tokens_saved,
        }


def virtual_stop(batch: int, batches: int, costs: Mapping[int, BatchCost]) -> VirtualStop:
    """Map a stop in agent turn ``batch`` onto a recording of ``batches`` turns (p = b_stop / b_full)."""
    b_full = max(batches, 1)
    b_stop = min(max(batch, 1), b_full)
    later = [costs.get(b) for b in range(b_stop + 1, b_full + 1)]
    seconds = [c.seconds for c in later if c is not None]
    tokens = [c.tokens for c in later if c is not None]
    complete = bool(costs) and all(c is not None for c in later)
    return VirtualStop(
        batch=b_stop,
        batches=b_full,
        saved_batches=b_full - b_stop,
        stop_progress=b_stop / b_full,
        saved_progress=1 - b_stop / b_full,
        seconds_saved=sum(s for s in seconds if s is not None) if complete and None not in seconds else None,
        tokens_saved=sum(t for t in tokens if t is not None) if complete and None not in tokens else None,
    )


@dataclass(frozen=True)
class ReplayOptions:
    """Everything a worker needs to replay one recorded scenario (picklable)."""

    blueprint_dir: Path
    config: EvaluatorConfig = field(default_factory=EvaluatorConfig)
    judges: JudgeSettings = field(default_factory=JudgeSettings)
    write_events: bool = False
    observers: tuple[RolloutHook, ...] = ()  # told the replayed rollout as a live run tells them (picklable)


@dataclass(frozen=True)
class Job:
    """One recorded scenario to replay, and where its reports go: ``out/trajectories/<folder>``.

    Attributes:
        run: The recorded run folder.
        scenario: The scenario's name as recorded (any text: it is kept in the files' contents).
        out: The run's folder in the replay's output.
        summary: The scenario's entry in the run's ``result_summary.json``.
        folder: The scenario's report folder under ``out/trajectories`` (its safe name, ``files.names``).
    """

    run: Path
    scenario: str
    out: Path
    summary: Mapping[str, Any] | None = None
    folder: str = ""

    @property
    def report_dir(self) -> Path:
        """Where the scenario's reports go."""
        return self.out / "trajectories" / (self.folder or self.scenario)


def _is_run(path: Path) -> bool:
    return (path / "trajectories").is_dir() or (path / RESULT_SUMMARY).is_file()


def _is_inspect_log(path: Path) -> bool:
    return (path.suffix == ".eval" and path.is_file()) or (path.is_dir() and not _is_run(path) and any(path.glob("*.eval")))


def find_runs(paths: Iterable[Path]) -> list[Path]:
    """Run folders named directly, or found one level below a named folder (ToolSandbox's output base).

    Raises:
        DynsteerError: A path does not exist or holds no recorded run (one sentence).
    """
    runs: list[Path] = []
    for path in paths:
        if not path.is_dir():
            raise DynsteerError(f"{path} is not a folder; pass ToolSandbox output folders (each with trajectories/ and result_summary.json)")
        found = [path] if _is_run(path) else sorted(p for p in path.iterdir() if p.is_dir() and _is_run(p))
        if not found:
            raise DynsteerError(f"{path} holds no recorded run (no trajectories/ or result_summary.json in it or one level below)")
        runs += [r for r in found if r not in runs]
    return runs


def jobs_of(run: Path, out: Path) -> tuple[list[Job], list[dict[str, Any]]]:
    """The scenarios of a run folder to replay into ``out`` (the run's folder in the replay's output), and the ones
    skipped with their reason. A scenario's reports go to the safe form of its name (``files.names``); a name that is no
    entry of ``trajectories/`` (``../x``, a path) is never read."""
    summaries, skipped = _summary_entries(run)
    names = set(summaries)
    if (run / "trajectories").is_dir():
        names |= {p.name for p in (run / "trajectories").iterdir() if p.is_dir()}
    jobs: list[Job] = []
    book = NameBook()
    for name in sorted(names):
        s = summaries.get(name)
        problem = None if s is None else summary_entry_problem(s)
        if problem is not None:  # one bad record is that scenario's skip, never the run's failure
            skipped.append({"run": str(run), "scenario": name[:200], "reason": f"its entry in {run / RESULT_SUMMARY} {problem}; fix or "
                            "remove that entry and replay again"})
            continue
        if not is_entry_name(name):  # a summary's name is text, not a path: ../x would read outside the recording
            skipped.append({"run": str(run), "scenario": name[:200], "reason": "its name is no folder of trajectories/ (it is empty, "
                            "'.', '..' or holds a '/' or '\\'), so there is no recording of it to read"})
            continue
        if s is not None and s.get("exception_type") and not (run / "trajectories" / name).is_dir():
            skipped.append({"run": str(run), "scenario": name, "reason": f"the recorded rollout crashed ({s.get('exception_type')}) and left no trajectory"})
            continue
        jobs.append(Job(run, name, out, s, book.claim(name)))
    return jobs, skipped


def _summary_entries(run: Path) -> tuple[dict[str, Mapping[str, Any]], list[dict[str, Any]]]:
    """The scenario entries of a run's ``result_summary.json`` by name, and what in it could not be read (an entry that is
    no object or has no name, a file that is no JSON: reported, the rest read). Numbers beyond a float are read as
    infinity here so that ``summary_entry_problem`` can refuse the one entry holding one, not the whole file."""
    entries: dict[str, Mapping[str, Any]] = {}
    if not (run / RESULT_SUMMARY).is_file():
        return entries, []
    where = run / RESULT_SUMMARY
    try:
        data = _read_json(where, "result summary", finite=False)
    except RecordingError as exc:
        return entries, [{"run": str(run), "scenario": None, "reason": str(exc)}]
    listed = data.get("per_scenario_results", []) if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return entries, [{"run": str(run), "scenario": None, "reason": f"{where} has no list per_scenario_results; the scenarios "
                          "are replayed without their recorded categories and similarity"}]
    skipped: list[dict[str, Any]] = []
    for i, r in enumerate(listed):
        if isinstance(r, dict) and isinstance(r.get("name"), str):
            entries[r["name"]] = r
        else:
            skipped.append({"run": str(run), "scenario": None, "reason": f"entry {i} of per_scenario_results in {where} is "
                            f"{_shown(r)}, not an object with a name; fix or remove that entry"})
    return entries, skipped


def _blueprint(options: ReplayOptions, name: str) -> Any:
    if not is_entry_name(f"{name}.json"):
        raise RecordingError(f"scenario {name[:200]!r} has no blueprint: its name names no file of {options.blueprint_dir}")
    path = options.blueprint_dir / f"{name}.json"
    if not path.is_file():
        raise RecordingError(f"no blueprint {path}; compile it (dynsteer compile) or pass --blueprints DIR")
    try:
        bp = load_blueprint(path)
    except BlueprintError as exc:
        raise RecordingError(str(exc)) from None
    if bp.task and bp.task != name:
        raise RecordingError(f"blueprint {path} is for scenario {bp.task!r}, not {name!r}")
    return bp


def replay_one(job: Job, *, options: ReplayOptions) -> dict[str, Any]:
    """Replay one recorded scenario and write its reports; never raises for a bad recording (it is skipped)."""
    start = time.perf_counter()
    try:
        recording = load_recording(job.run, job.scenario, job.summary)
        bp = _blueprint(options, job.scenario)
    except RecordingError as exc:
        return {"run": str(job.run), "scenario": job.scenario, "skipped": str(exc)}
    out = job.report_dir
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return {"run": str(job.run), "scenario": job.scenario, "skipped": f"its report folder {out} cannot be created ({os_reason(exc)})"}
    batches = agent_batches(recording.context)
    stop_batch: int | None = None
    with open_log(out / AUDIT_LOG) as sink:
        judges = options.judges.build()
        evaluator = Evaluator(bp, options.config, sink=sink, judges=judges)
        log = EventLog(open_log(out / EVENTS_FILE)) if options.write_events else None
        observers = options.observers
        for hook in observers:
            hook.on_rollout_start(RolloutStart(job.scenario, *_roles(job.run), f"{job.scenario}.json", False, 0))
        try:
            for k, item in enumerate(recorded_events(recording.context), start=1):
                if log is not None:
                    log.write(item.event)
                seen = EventSeen(job.scenario, k, item.batch, item.event)
                try:
                    judge_event(evaluator, seen, observers)
                except Halt:
                    stop_batch = item.batch
                    break
        finally:
            if log is not None:
                log.close()
        report = finish_observed(evaluator, job.scenario, observers)
    report = report.model_copy(update={"native": _native(recording)})
    gaps = [IncompleteLog(file=name, from_record=f.records, reason=f.error) for name, f in
            ((AUDIT_LOG, sink), (EVENTS_FILE, log.sink if log is not None else None)) if f is not None and f.error]
    report = with_files(report, incomplete_logs=tuple(gaps))
    for hook in observers:
        hook.on_rollout_end(RolloutEnd(job.scenario, time.perf_counter() - start, report=report))
    try:
        write_run_report(report, out, bp)
        report_error = None
    except OSError as exc:
        report_error = f"{out}: {os_reason(exc)}"
    vstop = virtual_stop(stop_batch, batches, recording.costs) if stop_batch is not None else None
    result = _result(recording, report, vstop, batches, time.perf_counter() - start)
    result["folder"] = out.relative_to(job.out.parent).as_posix()
    result["incomplete_logs"] = [g.model_dump() for g in report.incomplete_logs]
    result["report_error"] = report_error
    cache = judge_cache_stats(judges)
    if cache is not None:
        result["judge_cache"] = cache
    return result


def _native(recording: Recording) -> NativeSimilarity | None:
    """ToolSandbox's similarity of the recorded rollout: of a cut trajectory when the recorded run was halted live."""
    recorded = recording.summary or {}
    native = native_similarity(recorded)
    live = recorded.get("dynsteer")
    halted = isinstance(live, dict) and bool(live.get("halted"))
    return None if native is None else native.model_copy(update={"cut": halted})


_RUN_FOLDER = re.compile(r"agent_(?P<agent>.+)_user_(?P<user>.+)_\d{2}_\d{2}_\d{4}_\d{2}_\d{2}_\d{2}")


def _roles(run: Path) -> tuple[str, None, str]:
    """The agent and user a run folder's name says (ToolSandbox's agent_<model>_user_<model>_<timestamp>), else empty."""
    found = _RUN_FOLDER.fullmatch(run.name)
    return (found["agent"], None, found["user"]) if found else ("", None, "")


def _result(recording: Recording, report: Any, vstop: VirtualStop | None, batches: int, seconds: float) -> dict[str, Any]:
    recorded = recording.summary or {}
    live = recorded.get("dynsteer") if isinstance(recorded.get("dynsteer"), dict) else None
    stop = report.stop
    return {
        "run": str(recording.run),
        "scenario": recording.scenario,
        "categories": [str(c) for c in recorded.get("categories") or []],
        "outcome": report.outcome,
        "score": report.score,
        "native_similarity": recorded.get("similarity"),  # checked by summary_entry_problem: a finite number or null
        "native_milestone_similarity": recorded.get("milestone_similarity"),
        "native_minefield_similarity": recorded.get("minefield_similarity"),
        "halted": report.halted,
        "stop": None if stop is None else StopBrief(reason=stop.reason, k=stop.k, t=stop.t, anchor=stop.anchor, dimension=stop.dimension,
                                                    cause=clip(stop.detail), minefield=stop.minefield, tool=stop.tool).model_dump(),
        "virtual_stop": None if vstop is None else vstop.to_dict(),
        "batches": batches,
        "t": report.t,
        "first_error": None if report.first_error is None else ErrorBrief.of(report.first_error).model_dump(),
        "recorded_live_stop": None if live is None else live.get("stop"),
        "judge_usage": report.judge_usage.model_dump(),
        "seconds": round(seconds, 4),
    }


def summarize(results: list[dict[str, Any]], skipped: list[dict[str, Any]]) -> dict[str, Any]:
    """Replay summary: outcomes, virtual stops by reason with mean stop and saved progress (paper Table 3)."""
    done = [r for r in results if "skipped" not in r]
    skipped = skipped + [{"run": r["run"], "scenario": r["scenario"], "reason": r["skipped"]} for r in results if "skipped" in r]
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for r in done:
        if r["virtual_stop"] is not None:
            by_reason.setdefault(r["stop"]["reason"], []).append(r)
    table3 = {
        reason: {
            "halted_runs": len(rs),
            "unique_tasks": len({r["scenario"] for r in rs}),
            "mean_stop_progress": round(sum(r["virtual_stop"]["stop_progress"] for r in rs) / len(rs), 6),
            "mean_saved_progress": round(sum(r["virtual_stop"]["saved_progress"] for r in rs) / len(rs), 6),
            "saved_batches": sum(r["virtual_stop"]["saved_batches"] for r in rs),
        }
        for reason, rs in sorted(by_reason.items())
    }
    halted = [r for r in done if r["virtual_stop"] is not None]
    cached = [r["judge_cache"] for r in done if "judge_cache" in r]
    cache = {k: sum(c[k] for c in cached) for k in ("hits", "misses", "corrupt", "unwritable")} if cached else None
    return {
        "replayed": len(done),
        "skipped": len(skipped),
        "outcomes": dict(sorted(Counter(r["outcome"] for r in done).items())),
        "halted": len(halted),
        "stop_rate": round(len(halted) / len(done), 6) if done else None,
        "mean_score": round(sum(r["score"] for r in done) / len(done), 6) if done else None,
        "mean_saved_progress_on_halted": round(sum(r["virtual_stop"]["saved_progress"] for r in halted) / len(halted), 6) if halted else None,
        "stops_by_reason": table3,
        "judge_cache": cache,
        "skipped_scenarios": skipped,
        "per_scenario": sorted(done, key=lambda r: (r["run"], r["scenario"])),
    }


def _progress(items: Iterator[dict[str, Any]], total: int, enabled: bool, label: str) -> Iterator[dict[str, Any]]:
    """The results as they come, told to the same progress line as ``dynsteer run`` (a virtual stop counts as halted)."""
    if not enabled:
        yield from items
        return
    with RunProgress(total, label=label) as bar:
        for r in items:
            bar.finished({"name": r["scenario"], "dynsteer": {"outcome": "skipped" if "skipped" in r else r["outcome"],
                                                              "halted": bool(r.get("halted"))}})
            yield r


def _eval_logs(paths: list[Path]) -> list[Path]:
    """The ``.eval`` files named or lying in the folders named (none without paths: the ``inspect`` extra is then not imported)."""
    if not paths:
        return []
    from dynsteer_hook.inspect.replay import find_logs

    return find_logs(paths)


def replay_runs(paths: Iterable[Path], options: ReplayOptions, out: Path, processes: int = 1, progress: bool = False, *,
                engine: str = "local", ray_address: str | None = None, label: str = "dynsteer replay") -> dict[str, Any]:
    """Replay every recorded scenario under ``paths`` into ``out`` and write the summaries.

    Args:
        paths: Run folders, or folders holding them one level below; Inspect ``.eval`` logs, or folders holding them
            (``dynsteer_hook.inspect.replay``: needs the ``inspect`` extra).
        options: Blueprints, configuration and judges.
        out: Where the reports and summaries go.
        processes: Worker processes (local engine) or CPUs (a local Ray instance).
        progress: Show the progress line on stderr (``live.progress``: a bar on a terminal, a line per scenario elsewhere).
        engine: ``local`` or ``ray`` (see ``live.engines``).
        ray_address: The Ray cluster to join.
        label: What the progress line is of.

    Raises:
        DynsteerError: A path is not a folder or holds no recorded run, or the engine cannot start.
    """
    check_engine(engine, ray_address)
    paths = list(paths)
    logs = [p for p in paths if _is_inspect_log(p)]  # Inspect .eval logs (or folders of them), replayed in this process
    runs = find_runs([p for p in paths if p not in logs]) if len(logs) < len(paths) else []
    check_apart(out, [*runs, *logs], "-o/--out")
    check_output_dir(out, "-o/--out")
    eval_logs = _eval_logs(logs)
    book = NameBook(taken={INDEX_HTML, REPLAY_SUMMARY})  # one folder per recorded run or log, never one of the replay's own files
    folders = {source: book.claim(run_folder(source), key=str(source)) for source in [*runs, *eval_logs]}
    jobs: list[Job] = []
    skipped: list[dict[str, Any]] = []
    for run in runs:
        js, sk = jobs_of(run, out / folders[run])
        jobs += js
        skipped += sk
    # Every folder the replay will write in, and the logs it appends to there, before it writes anything (an Inspect
    # sample's own folder is checked when the sample is read).
    for job in jobs:
        check_below(out, job.report_dir, "-o/--out", (AUDIT_LOG, EVENTS_FILE))
    for log in eval_logs:
        check_below(out, out / folders[log] / "trajectories", "-o/--out")
    create_dir(out, "-o/--out")
    worker = partial(replay_one, options=options)
    results = list(_progress(run_jobs(worker, jobs, processes=processes, engine=engine, ray_address=ray_address), len(jobs), progress, label))
    sources: list[Path] = list(runs)
    if eval_logs:
        from dynsteer_hook.inspect.replay import replay_log

        judges = options.judges.build()
        for log in eval_logs:
            rs, sk = replay_log(log, out / folders[log], blueprint_dir=options.blueprint_dir, config=options.config, judges=judges)
            results += rs
            skipped += sk
            sources.append(log)
    summary = summarize(results, skipped)
    try:
        for run in sources:
            name = folders[run]
            mine = summarize([r for r in results if r["run"] == str(run)], [s for s in skipped if s["run"] == str(run)])
            write_json_atomic(out / name / REPLAY_SUMMARY, mine)
            write_run_page(out / name, f"dynsteer replay: {run_folder(run)}", replay_rows(mine["per_scenario"], out / name, out),
                           kind="replay", links=[("all runs of this replay", "../" + INDEX_HTML)])
        write_json_atomic(out / REPLAY_SUMMARY, summary)
        write_run_page(out, f"dynsteer replay: {out.name}", replay_rows(summary["per_scenario"], out, out), kind="replay")
    except OSError as exc:
        raise OutputError(f"the replay summaries cannot be written to {out} ({os_reason(exc)}); the reports written there are kept; "
                          "free some space and replay again") from None
    return summary


def dumps(summary: Mapping[str, Any]) -> str:
    """JSON text of a summary."""
    return json_text(summary, indent=2, ensure_ascii=False)
