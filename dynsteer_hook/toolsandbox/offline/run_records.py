"""A run's or a replay's folder read back as one record per scenario, for ``dynsteer diff``.

A folder written by ``dynsteer run`` or ``dynsteer rerun`` holds ``result_summary.json``, whose entries carry a
``dynsteer`` block; one written by ``dynsteer replay`` (or one run's folder inside a replay) holds
``replay_summary.json``. Either is read with the project's JSON reader and each entry checked on its own
(pydantic, reading only the fields a diff shows): one damaged entry is that entry's skip with its reason, never the
folder's failure. A folder that is neither, a summary that cannot be read, a run played without dynsteer, or a
scenario listed twice is one sentence (``DynsteerError``). Nothing is written; scenario pages are only looked for,
by the folder names the run recorded, so that a diff links to pages that are there.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, StrictBool, ValidationError

from dynsteer_hook.files.inputs import read_input_text
from dynsteer_hook.files.names import is_entry_name
from dynsteer_hook.model.errors import DynsteerError, validation_problem
from dynsteer_hook.model.json_text import JsonTextError, finite_number, has_nonfinite, loads
from dynsteer_hook.report.static_page import error_words

__all__ = ["REPLAY_SUMMARY", "RESULT_SUMMARY", "RunRecords", "ScenarioRecord", "SkippedEntry", "read_run"]

RESULT_SUMMARY = "result_summary.json"
"""The summary of ``dynsteer run`` and ``dynsteer rerun`` (ToolSandbox's, each entry with a ``dynsteer`` block)."""
REPLAY_SUMMARY = "replay_summary.json"
"""The summary of ``dynsteer replay`` (as ``offline.replay`` names it; that module imports ToolSandbox)."""
REPORT_HTML = "dynsteer_report.html"
"""A scenario's page in its report folder (as ``report.scenario_page`` names it)."""
MAX_SUMMARY_BYTES = 512 * 2**20
"""Largest summary read (a 1,032-scenario run's is a few megabytes)."""
FIX = "pass a folder written by dynsteer run, rerun or replay"

Kind = Literal["run", "replay"]


@dataclass(frozen=True, slots=True)
class ScenarioRecord:
    """One scenario of a run or a replay, as a diff shows it (free text is the run's own, shown only as text).

    Attributes:
        name: The scenario's name, which pairs it with the other run's.
        categories: ToolSandbox's categories of the scenario.
        outcome: completed, incomplete, halted, crashed (or what the file says).
        score: The dynsteer score; a crash without a score counts 0 as in every file; None when unscored.
        halted: A halt (live) or a virtual stop (replay).
        similarity: ToolSandbox's similarity, None when unknown.
        stop: The stop reason, '' when none.
        clock: Where it stopped (``k=.., t=..``), '' when none.
        cause: Why it stopped, '' when none.
        first_error: The first error in words, '' when none.
        crash: Why it crashed, '' when it did not.
        page: The scenario's page as path parts below its side's ``root``, None when the run wrote none.
    """

    name: str
    categories: tuple[str, ...]
    outcome: str
    score: float | None
    halted: bool
    similarity: float | None
    stop: str
    clock: str
    cause: str
    first_error: str
    crash: str
    page: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class SkippedEntry:
    """An entry of a summary that could not be read, and why (a clause naming the field)."""

    entry: int
    name: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class RunRecords:
    """What one side of a diff holds.

    Attributes:
        path: The folder as given.
        root: The folder the records' pages are found below: ``path``, or its parent for one run's folder in a replay.
        kind: ``run`` (result_summary.json) or ``replay`` (replay_summary.json).
        summary: The summary file read.
        records: One record per scenario, in the file's order.
        skipped: Entries that could not be read.
        not_finished: Scenarios a Ctrl-C kept from finishing (a run's ``interrupted`` block), not in ``records``.
    """

    path: Path
    root: Path
    kind: Kind
    summary: Path
    records: tuple[ScenarioRecord, ...]
    skipped: tuple[SkippedEntry, ...]
    not_finished: int = 0


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = finite_number(value)
    if number is None:
        raise ValueError(f"{_shown(value)} is not a number")
    return number


def _score(value: Any) -> float:
    number = finite_number(value)
    if number is None:
        raise ValueError(f"{_shown(value)} is not a number")
    return number


Number = Annotated[float | None, BeforeValidator(_number)]
Score = Annotated[float, BeforeValidator(_score)]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Stop(_Entry):
    reason: str
    k: int
    t: int
    cause: str | None = None
    detail: str | None = None


class _FirstError(_Entry):
    k: int
    t: int
    stage: str | None = None
    dimension: str | None = None
    cause: str | None = None
    detail: str | None = None


class _Block(_Entry):
    outcome: str
    score: Score
    halted: StrictBool = False
    stop: _Stop | None = None
    first_error: _FirstError | None = None
    crash: str | None = None
    report_written: StrictBool = True


class _RunEntry(_Entry):
    name: str
    categories: list[str] = []
    similarity: Number = None
    exception_type: str | None = None
    traceback: str | None = None
    dynsteer: _Block | None = None


class _ReplayEntry(_Entry):
    scenario: str
    folder: str | None = None
    categories: list[str] = []
    outcome: str
    score: Score
    halted: StrictBool = False
    native_similarity: Number = None
    stop: _Stop | None = None
    first_error: _FirstError | None = None


def _shown(value: Any) -> str:
    """A value of a hostile file as a short, one-line text for a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _error_words(fe: _FirstError | None) -> str:
    return "" if fe is None else error_words(fe.model_dump())


def _stop_fields(stop: _Stop | None) -> tuple[str, str, str]:
    if stop is None:
        return "", "", ""
    return stop.reason, f"k={stop.k}, t={stop.t}", stop.cause or stop.detail or ""


def _crash_line(entry: _RunEntry) -> str:
    if entry.dynsteer is not None and entry.dynsteer.crash:
        return entry.dynsteer.crash
    if not entry.exception_type:
        return ""
    last = (entry.traceback or "").strip().splitlines()[-1:]
    return last[0] if last else entry.exception_type


def _page(root: Path, parts: tuple[str, ...]) -> tuple[str, ...] | None:
    """``parts`` when they name a regular file below ``root`` (links followed), else None."""
    try:
        return parts if stat.S_ISREG(os.stat(root.joinpath(*parts)).st_mode) else None
    except (OSError, ValueError):  # missing, or a name no file system takes
        return None


def _run_record(entry: _RunEntry, folder: Path) -> ScenarioRecord:
    block = entry.dynsteer
    crash = _crash_line(entry)
    score: float | None
    if block is not None:
        outcome, score = block.outcome, block.score
    else:
        outcome, score = ("crashed", 0.0) if entry.exception_type else ("played", None)
    # The run wrote the scenario's reports under trajectories/<its name>: a name that is no entry of that folder has none.
    page = _page(folder, ("trajectories", entry.name, REPORT_HTML)) if is_entry_name(entry.name) and block is not None else None
    return ScenarioRecord(entry.name, tuple(entry.categories), outcome, score, bool(block and block.halted), entry.similarity,
                          *_stop_fields(block.stop if block else None), _error_words(block.first_error if block else None), crash, page)


def _replay_record(entry: _ReplayEntry, root: Path) -> ScenarioRecord:
    page = None
    if entry.folder is not None:
        parts = PurePosixPath(entry.folder).parts
        if parts and not entry.folder.startswith("/") and all(is_entry_name(p) for p in parts):
            page = _page(root, (*parts, REPORT_HTML))
    return ScenarioRecord(entry.scenario, tuple(entry.categories), entry.outcome, entry.score, entry.halted, entry.native_similarity,
                          *_stop_fields(entry.stop), _error_words(entry.first_error), "", page)


def _replay_root(folder: Path, entries: list[Any]) -> Path:
    """The folder a replay summary's ``folder`` paths start from: the replay's own, or its parent for the summary of one
    run inside a replay (whose paths start with that run's folder name)."""
    for e in entries:
        if isinstance(e, Mapping) and isinstance(e.get("folder"), str):
            first = PurePosixPath(e["folder"]).parts[:1]
            if first == (folder.name,) and not (folder / folder.name).is_dir():
                return folder.parent
            return folder
    return folder


def _summary_of(folder: Path, label: str) -> tuple[Kind, Path]:
    if not folder.exists():
        raise DynsteerError(f"{label} {folder} does not exist; {FIX}")
    if not folder.is_dir():
        raise DynsteerError(f"{label} {folder} is not a folder; {FIX}")
    run, replay = folder / RESULT_SUMMARY, folder / REPLAY_SUMMARY
    if run.exists() and replay.exists():
        raise DynsteerError(f"{label} {folder} holds both {RESULT_SUMMARY} and {REPLAY_SUMMARY}, so it is no one run or replay; "
                            f"{FIX}")
    if run.exists() or replay.exists():
        return ("run", run) if run.exists() else ("replay", replay)
    try:
        below = sorted(p for p in folder.iterdir() if (p / RESULT_SUMMARY).is_file() or (p / REPLAY_SUMMARY).is_file())
    except OSError:
        below = []
    hint = f" (it holds {len(below)} below it: pass one of them, e.g. {below[0]})" if below else ""
    raise DynsteerError(f"{label} {folder} holds neither {RESULT_SUMMARY} (a run) nor {REPLAY_SUMMARY} (a replay){hint}; {FIX}")


def _load(summary: Path, label: str) -> Any:
    try:
        size = summary.stat().st_size
    except OSError:
        size = 0
    if size > MAX_SUMMARY_BYTES:
        raise DynsteerError(f"{label} summary {summary} is larger than {MAX_SUMMARY_BYTES // 2**20} MiB; {FIX}")
    text = read_input_text(summary, f"{label} summary", FIX, DynsteerError)
    if not text.strip():
        raise DynsteerError(f"{label} summary {summary} is empty; {FIX}")
    try:
        # A number beyond a float is read as infinity here, so that only the entry holding one is skipped.
        return loads(text, finite=False)
    except JsonTextError as exc:
        raise DynsteerError(f"{label} summary {summary} {exc} (truncated, damaged or hostile); {FIX}") from None


def read_run(folder: Path, label: str) -> RunRecords:
    """Read one side of a diff: a run's or a replay's folder.

    Args:
        folder: The folder given on the command line.
        label: How messages name it (``RUN_A``).

    Raises:
        DynsteerError: One sentence: not a run or replay folder, an unreadable summary, a run without dynsteer's
            results, a scenario listed twice.
    """
    kind, summary = _summary_of(folder, label)
    data = _load(summary, label)
    key = "per_scenario_results" if kind == "run" else "per_scenario"
    entries = data.get(key) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise DynsteerError(f"{label} summary {summary} has no list {key}; {FIX}")
    model: type[_RunEntry] | type[_ReplayEntry] = _RunEntry if kind == "run" else _ReplayEntry
    root = _replay_root(folder, entries) if kind == "replay" else folder
    records: list[ScenarioRecord] = []
    skipped: list[SkippedEntry] = []
    seen: set[str] = set()
    for i, raw in enumerate(entries):
        name = raw.get("name" if kind == "run" else "scenario") if isinstance(raw, dict) else None
        shown = name[:200] if isinstance(name, str) else None
        if not isinstance(raw, dict):
            skipped.append(SkippedEntry(i, None, f"is {_shown(raw)}, not an object"))
            continue
        if has_nonfinite(raw):
            skipped.append(SkippedEntry(i, shown, "holds a number beyond the range of a float (such as 1e400)"))
            continue
        try:
            entry = model.model_validate(raw)
        except ValidationError as exc:
            skipped.append(SkippedEntry(i, shown, validation_problem(exc)))
            continue
        record = _run_record(entry, folder) if isinstance(entry, _RunEntry) else _replay_record(entry, root)
        if record.name in seen:
            again = (f"from more than one recorded run; pass the folder of one run's replay ({folder}/<run>)" if kind == "replay"
                     else "twice")
            raise DynsteerError(f"{label} summary {summary} lists scenario {_shown(record.name)} {again}; a diff pairs one result "
                                f"per scenario")
        seen.add(record.name)
        records.append(record)
    if kind == "run" and entries and not any(isinstance(e, dict) and isinstance(e.get("dynsteer"), dict) for e in entries):
        raise DynsteerError(f"{label} {folder} was run without dynsteer (--evaluator native: no scenario has a dynsteer score); "
                            f"replay it with dynsteer replay and diff the replay")
    interrupted = data.get("interrupted")
    not_finished = 0
    if kind == "run" and isinstance(interrupted, dict):
        not_finished = sum(len(v) for k, v in interrupted.items() if k in ("in_flight", "not_started") and isinstance(v, list))
    return RunRecords(folder, root, kind, summary, tuple(records), tuple(skipped), not_finished)
