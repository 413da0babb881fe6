"""Inspect ``.eval`` logs replayed through the evaluator, with virtual stops and the same reports as ToolSandbox runs.

Each sample of a log is read back as the events the live adapter fed (``convert.SampleFeed``):
messages from the sample, tool calls from its assistant messages, their results from its
``ToolEvent``s (which also hold the result of a call whose message never reached the
conversation, as when a reviewer ended the sample). The blueprint is the file
``<blueprints>/<task>/<sample id>.json`` or ``<blueprints>/<sample id>.json`` when there is one,
else the blueprint the live run recorded beside the sample's DynSTEER score. A halt is a virtual stop on
the sample's agent turns (assistant messages): p = b_stop / b_full, q = 1 - p. Samples and logs
that cannot be replayed are skipped with their reason; the rest go on. Each sample is read on its
own, and only once ``archive.check_archive`` has found its member whole and of bounded size, so a
truncated or inflating sample is that sample's skip, never the log's.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from inspect_ai.event import ModelEvent, ToolEvent
from inspect_ai.log import EvalSample, read_eval_log, read_eval_log_sample
from inspect_ai.model import ChatMessageAssistant

from dynsteer_hook.files.blueprints import load_blueprint
from dynsteer_hook.files.names import NameBook, is_entry_name
from dynsteer_hook.files.outputs import JsonlSink, check_below
from dynsteer_hook.inspect.adapter import BLUEPRINT_KEY, STOP_KEY
from dynsteer_hook.inspect.archive import ArchiveError, check_archive
from dynsteer_hook.inspect.convert import SampleFeed, tool_event_results
from dynsteer_hook.judges.base import Judge
from dynsteer_hook.model.blueprint import Blueprint, parse_blueprint
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.errors import BlueprintError, DynsteerError, Halt, OutputError
from dynsteer_hook.model.json_text import finite_number
from dynsteer_hook.report.writer import AUDIT_LOG, write_run_report
from dynsteer_hook.runtime.evaluator import Evaluator

EVAL_SUFFIX = ".eval"
SAMPLES_DIR = "samples"
"""The folder of an ``.eval`` archive holding one member per sample and epoch: ``<id>_epoch_<epoch>.json`` (Inspect's layout)."""


def is_eval_path(path: Path) -> bool:
    """Whether ``path`` is an Inspect log, or a folder holding Inspect logs directly."""
    return (path.suffix == EVAL_SUFFIX and path.is_file()) or (path.is_dir() and any(path.glob(f"*{EVAL_SUFFIX}")))


def find_logs(paths: Iterable[Path]) -> list[Path]:
    """The ``.eval`` files named, or lying directly in the folders named.

    Raises:
        DynsteerError: A path is neither an ``.eval`` file nor a folder holding one (one sentence).
    """
    logs: list[Path] = []
    for path in paths:
        found = [path] if path.is_file() and path.suffix == EVAL_SUFFIX else sorted(path.glob(f"*{EVAL_SUFFIX}")) if path.is_dir() else []
        if not found:
            raise DynsteerError(f"{path} is not an Inspect log; pass .eval files or folders holding them")
        logs += [p for p in found if p not in logs]
    return logs


def _seconds(event: ModelEvent | ToolEvent) -> float | None:
    """What the event took by the log (None when it does not say, or says something no clock gives: NaN, negative)."""
    if event.working_time is not None:
        took = float(event.working_time)
    elif event.completed is not None:
        took = (event.completed - event.timestamp).total_seconds()
    else:
        return None
    return took if math.isfinite(took) and took >= 0 else None


def _tokens(event: ModelEvent) -> int | None:
    usage = event.output.usage
    return usage.total_tokens if usage is not None and isinstance(usage.total_tokens, int) and usage.total_tokens >= 0 else None


def turn_costs(sample: EvalSample) -> list[tuple[float | None, int | None]] | None:
    """Per agent turn (assistant message), the seconds its model call and its tool calls took and the model call's tokens;
    None when the log's model calls cannot be matched one to one with the turns (retried or failed calls, another solver)."""
    turns = [m for m in sample.messages if isinstance(m, ChatMessageAssistant)]
    models = [e for e in sample.events if isinstance(e, ModelEvent) and e.error is None and e.output is not None and e.output.choices]
    if len(models) != len(turns):
        return None
    turn_of_call = {c.id: i for i, m in enumerate(turns) for c in (m.tool_calls or [])}
    seconds = [_seconds(e) for e in models]
    tokens = [_tokens(e) for e in models]
    for e in sample.events:
        if isinstance(e, ToolEvent) and e.id in turn_of_call:
            i, took = turn_of_call[e.id], _seconds(e)
            current = seconds[i]
            seconds[i] = None if took is None or current is None else current + took
    return list(zip(seconds, tokens, strict=True))


def virtual_stop(batch: int, batches: int, costs: list[tuple[float | None, int | None]] | None = None) -> dict[str, Any]:
    """A stop in agent turn ``batch`` of ``batches`` (the keys of a ToolSandbox replay's virtual stop); with the turns'
    ``costs``, the seconds and tokens of the turns after the stop (None where any of them is unknown)."""
    b_full = max(batches, 1)
    b_stop = min(max(batch, 1), b_full)
    later = (costs or [])[b_stop:] if costs is not None and len(costs) == batches else None
    seconds = [c[0] for c in later] if later is not None else None
    tokens = [c[1] for c in later] if later is not None else None
    return {"b_stop": b_stop, "b_full": b_full, "saved_batches": b_full - b_stop, "stop_progress": round(b_stop / b_full, 6),
            "saved_progress": round(1 - b_stop / b_full, 6),
            "seconds_saved": None if seconds is None or None in seconds else round(sum(s for s in seconds if s is not None), 4),
            "tokens_saved": None if tokens is None or None in tokens else sum(t for t in tokens if t is not None)}


def sample_name(sample: EvalSample) -> str:
    """The name of a sample in the summaries, ``<id>_<epoch>`` (its reports' folder is the safe form, ``files.names``)."""
    return f"{sample.id}_{sample.epoch}"


def blueprint_files(blueprint_dir: Path, task: str, sample_id: object) -> list[Path]:
    """Where a sample's blueprint is looked for: ``<task>/<sample id>.json``, then ``<sample id>.json``; a task or id that
    is no plain entry name (``../x``, an absolute path) is never joined to the folder."""
    file = f"{sample_id}.json"
    if not is_entry_name(file):
        return []
    return ([blueprint_dir / task / file] if is_entry_name(task) else []) + [blueprint_dir / file]


def _blueprint(sample: EvalSample, task: str, blueprint_dir: Path | None) -> Blueprint:
    if blueprint_dir is not None:
        for path in blueprint_files(blueprint_dir, task, sample.id):
            if path.is_file():
                return load_blueprint(path)
    score = (sample.scores or {}).get("dynsteer")
    recorded = (score.metadata or {}).get(BLUEPRINT_KEY) if score is not None else None
    if recorded is None:
        raise BlueprintError(f"sample {sample.id} has no blueprint: none in {blueprint_dir or '--blueprints'} as "
                             f"<task>/<sample id>.json or <sample id>.json, and the log recorded none ({BLUEPRINT_KEY!r} in the metadata of its dynsteer score)")
    return parse_blueprint(json.dumps(recorded), source=f"the blueprint recorded in sample {sample.id}")


def _native(sample: EvalSample) -> float | None:
    for name, score in (sample.scores or {}).items():
        number = finite_number(score.value)  # a log's NaN or infinity is no score: unknown
        if name != "dynsteer" and number is not None:
            return number
    return None


def replay_sample(sample: EvalSample, *, log: Path, task: str, out: Path, blueprint_dir: Path | None,
                  config: EvaluatorConfig, judges: Mapping[int, Judge], names: NameBook | None = None) -> dict[str, Any]:
    """Replay one sample and write its reports under ``out/trajectories`` (in the folder ``names`` gives its name); a sample
    that cannot be replayed is returned as skipped."""
    start = time.perf_counter()
    name = sample_name(sample)
    try:
        bp = _blueprint(sample, task, blueprint_dir)
    except BlueprintError as exc:
        return {"run": str(log), "scenario": name, "skipped": str(exc)}
    folder = out / "trajectories" / (names or NameBook()).claim(name)
    try:
        check_below(out, folder, "-o/--out", (AUDIT_LOG,))  # a link planted there would take the sample's reports elsewhere
        folder.mkdir(parents=True, exist_ok=True)
    except (OutputError, OSError) as exc:
        return {"run": str(log), "scenario": name, "skipped": f"its report folder cannot be written: {exc}"}
    feed = SampleFeed({t.name for t in bp.catalog} or None, tool_event_results(sample.events))
    stop_batch: int | None = None
    with JsonlSink(folder / AUDIT_LOG) as sink:
        evaluator = Evaluator(bp, config, sink=sink, judges=judges)
        for event in feed.messages(sample.messages):
            try:
                evaluator.observe(event)
            except Halt:
                stop_batch = feed.turns
                break
        report = evaluator.finish()
    write_run_report(report, folder, bp)
    batches = sum(isinstance(m, ChatMessageAssistant) for m in sample.messages)
    stop = report.stop
    live = (sample.store or {}).get(STOP_KEY)
    return {
        "run": str(log), "scenario": name, "folder": f"{out.name}/trajectories/{folder.name}", "source": "inspect", "categories": [],
        "outcome": report.outcome, "score": report.score,
        "native_similarity": _native(sample), "halted": report.halted,
        "stop": None if stop is None else {"reason": stop.reason, "k": stop.k, "t": stop.t, "anchor": stop.anchor, "dimension": stop.dimension},
        "virtual_stop": None if stop_batch is None else virtual_stop(stop_batch, batches, turn_costs(sample)),
        "batches": batches,
        "first_error": None if report.first_error is None else {"k": report.first_error.k, "t": report.first_error.t},
        "recorded_live_stop": live if isinstance(live, dict) else None,
        "judge_usage": report.judge_usage.model_dump(),
        "seconds": round(time.perf_counter() - start, 4),
    }


def _skip(log: Path, scenario: str | None, reason: str) -> dict[str, Any]:
    return {"run": str(log), "scenario": scenario, "reason": reason}


def _read_sample(log: Path, sample_id: str | int, epoch: int) -> EvalSample | None:
    """One sample of the log (None when the log holds none of that id and epoch: the run ended before it).

    Raises:
        Exception: What Inspect raises for a sample it cannot read (a damaged member, JSON that is no sample).
    """
    try:
        return read_eval_log_sample(str(log), id=sample_id, epoch=epoch, resolve_attachments=True)
    except IndexError:
        return None


def replay_log(log: Path, out: Path, *, blueprint_dir: Path | None, config: EvaluatorConfig,
               judges: Mapping[int, Judge]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Replay every sample of one ``.eval`` log into ``out``: the results, and what was skipped with its reason (the log
    itself when it cannot be read at all; a sample whose member is damaged or too large, the other samples going on)."""
    try:
        problems = check_archive(log)
    except ArchiveError as exc:
        return [], [_skip(log, None, f"{log} could not be read as an Inspect log: it {exc}")]
    whole_log = [(m, why) for m, why in problems.items() if not m.startswith(f"{SAMPLES_DIR}/")]
    if whole_log:
        member, why = whole_log[0]
        return [], [_skip(log, None, f"{log} could not be read as an Inspect log: its member {member} {why}")]
    try:
        header = read_eval_log(str(log), header_only=True)
        ids = header.eval.dataset.sample_ids
        if ids is None:
            raise ValueError("the log lists no sample ids (Inspect rewrites a log with them when it reads it whole)")
        task, epochs = header.eval.task, header.eval.config.epochs or 1
    except (OSError, ValueError, KeyError, RuntimeError) as exc:  # not a log, a format of another version
        reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        return [], [_skip(log, None, f"{log} could not be read as an Inspect log ({reason})")]
    names = NameBook()
    results: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for sample_id in ids:
        for epoch in range(1, epochs + 1):
            name = f"{sample_id}_{epoch}"
            member = f"{SAMPLES_DIR}/{sample_id}_epoch_{epoch}.json"
            if member in problems:
                skipped.append(_skip(log, name, f"sample {name} of {log} cannot be read: its member {member} {problems[member]}"))
                continue
            try:
                sample = _read_sample(log, sample_id, epoch)
            except Exception as exc:  # whatever Inspect raises for one damaged sample is that sample's skip
                reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
                skipped.append(_skip(log, name, f"sample {name} of {log} cannot be read ({reason})"))
                continue
            if sample is not None:
                results.append(replay_sample(sample, log=log, task=task, out=out, blueprint_dir=blueprint_dir, config=config,
                                             judges=judges, names=names))
    return results, skipped
