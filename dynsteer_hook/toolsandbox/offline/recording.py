"""Recorded ToolSandbox runs read back as the event stream the live middleware fed.

A recorded run is a ToolSandbox output folder (``result_summary.json`` and, per scenario,
``trajectories/<name>/execution_context.json`` and ``conversation.json``), made by
ToolSandbox's own CLI with any agent or by ``dynsteer run``. The SANDBOX table of the
execution context holds every message row in order, and each world-state table holds its
snapshots by message index; from them the replay rebuilds exactly the event stream the live
middleware feeds (the same row mapping, the same tool-call gate, the same state changes), so
the same evaluator reaches the same decisions: a run ``dynsteer run`` halted live halts again
at the same ``k`` and ``t``. Each event carries its execution batch (agent turn), onto which
``replay`` maps a halt.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.model.events import Event
from dynsteer_hook.model.json_text import JsonTextError, finite_number, has_nonfinite, loads
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.calls import GatedCall, inspect_code, offered_tools
from dynsteer_hook.toolsandbox.live.adapter import STATE_NAMESPACES, RowMapper, simulator_only, state_changes

from tool_sandbox.common.execution_context import DatabaseNamespace, ExecutionContext, RoleType

EXECUTION_CONTEXT = "execution_context.json"
CONVERSATION = "conversation.json"
RESULT_SUMMARY = "result_summary.json"
EVENTS_FILE = "dynsteer_events.jsonl"
_MAX_FILE_BYTES = 512 * 1024 * 1024


class RecordingError(DynsteerError):
    """A recorded scenario cannot be replayed; the message says why (one sentence)."""


@dataclass(frozen=True, slots=True)
class BatchedEvent:
    """An event of a recording and the execution batch (agent turn) it belongs to (0: before the first)."""

    event: Event
    batch: int


@dataclass(frozen=True, slots=True)
class BatchCost:
    """What one agent turn of a recording cost, where the recording says."""

    seconds: float | None = None
    tokens: int | None = None


@dataclass(frozen=True)
class Recording:
    """One recorded scenario, read and checked.

    Attributes:
        run: The run folder.
        scenario: The scenario name.
        context: ToolSandbox's execution context as recorded (every row, every snapshot).
        summary: The scenario's entry in the run's ``result_summary.json`` (``None`` if absent).
        costs: Per agent turn (1-based), the seconds and tokens it took, where recorded.
    """

    run: Path
    scenario: str
    context: ExecutionContext
    summary: Mapping[str, Any] | None = None
    costs: Mapping[int, BatchCost] = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        """The scenario's trajectory folder."""
        return self.run / "trajectories" / self.scenario


def _read_json(path: Path, what: str, *, finite: bool = True) -> Any:
    """A recorded JSON file, or a ``RecordingError`` naming it (``finite``: see ``json_text.loads``)."""
    if not path.is_file():
        raise RecordingError(f"{what} {path} is missing")
    if path.stat().st_size > _MAX_FILE_BYTES:
        raise RecordingError(f"{what} {path} is larger than {_MAX_FILE_BYTES // 2**20} MiB")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordingError(f"{what} {path} cannot be read ({exc.strerror or exc})") from None
    try:
        return loads(raw, finite=finite)
    except JsonTextError as exc:
        raise RecordingError(f"{what} {path} {exc} (truncated, damaged or hostile)") from None


_SIMILARITIES = ("similarity", "milestone_similarity", "minefield_similarity")


def summary_entry_problem(entry: Mapping[str, Any]) -> str | None:
    """What makes a scenario's entry of ``result_summary.json`` unusable (a clause: "has categories 5, not a list of
    names"), or None. Only the fields replay reads are checked; a number beyond a float anywhere is a problem, since no
    file may be written with it."""
    categories = entry.get("categories", [])
    if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
        return f"has categories {_shown(categories)}, not a list of category names"
    for key in _SIMILARITIES:
        value = entry.get(key)
        if value is not None and finite_number(value) is None:
            shown = "beyond the range of a float (such as 1e400)" if isinstance(value, float | int) and not isinstance(value, bool) else _shown(value)
            return f"has {key} {shown}, not a number (or null)"
    if not isinstance(entry.get("dynsteer"), dict | None):
        return f"has dynsteer {_shown(entry.get('dynsteer'))}, not an object (or null)"
    if has_nonfinite(entry):
        return "holds a number beyond the range of a float (such as 1e400)"
    return None


def _shown(value: Any) -> str:
    """A value of a hostile file as a short, one-line text for a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _context(data: Any, path: Path) -> ExecutionContext:
    """ToolSandbox's context from its recorded dictionary, or a skip naming what does not fit."""
    if not isinstance(data, dict) or not isinstance(data.get("_dbs"), dict):
        raise RecordingError(f"{path} has no '_dbs' tables: not a ToolSandbox execution context")
    namespaces = {str(ns.name) for ns in DatabaseNamespace}
    unknown = sorted(set(data["_dbs"]) - namespaces)
    if unknown or str(DatabaseNamespace.SANDBOX.name) not in data["_dbs"]:
        raise RecordingError(f"{path} has tables {unknown or 'without SANDBOX'} this ToolSandbox revision does not know")
    try:
        context = ExecutionContext.from_dict({**data, "interactive_console": None})
    except (KeyError, TypeError, ValueError, pl.exceptions.PolarsError) as exc:
        raise RecordingError(f"{path} does not fit this ToolSandbox revision ({type(exc).__name__}: {str(exc)[:120]})") from None
    known = set(context.name_to_tool)
    listed = set(context.tool_allow_list or ()) | set(context.tool_deny_list or ())
    if listed - known:
        raise RecordingError(f"{path} names tools this ToolSandbox revision does not have: {sorted(listed - known)[:5]}")
    return context


def _costs(path: Path) -> dict[int, BatchCost]:
    """Per agent turn costs from a ``dynsteer run`` events file (``meta`` records with a ``batch``)."""
    out: dict[int, BatchCost] = {}
    if not path.is_file():
        return out
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                if '"batch_cost"' not in line:
                    continue
                try:
                    rec = loads(line)
                except JsonTextError:
                    continue
                info = rec.get("info", {}) if isinstance(rec, dict) else {}
                cost = info.get("batch_cost") if isinstance(info, dict) else None
                if isinstance(cost, dict) and isinstance(cost.get("batch"), int):
                    seconds, tokens = cost.get("seconds"), cost.get("tokens")
                    out[cost["batch"]] = BatchCost(
                        float(seconds) if isinstance(seconds, (int, float)) else None,
                        int(tokens) if isinstance(tokens, int) else None,
                    )
    except (OSError, UnicodeDecodeError):
        return {}
    return out


def load_recording(run: Path, scenario: str, summary: Mapping[str, Any] | None = None) -> Recording:
    """Read one recorded scenario of a run folder.

    Raises:
        RecordingError: A file is missing, truncated or from another ToolSandbox revision.
    """
    directory = run / "trajectories" / scenario
    if not directory.is_dir():
        raise RecordingError(f"{directory} is missing (the scenario crashed before ToolSandbox stored it?)")
    context = _context(_read_json(directory / EXECUTION_CONTEXT, "execution context"), directory / EXECUTION_CONTEXT)
    if not (directory / CONVERSATION).is_file() and not (summary or {}).get("similarity_unknown"):
        # ToolSandbox writes it once it has evaluated the rollout; without it, and without the reason the run gave for
        # not evaluating it (``similarity_unknown``), the rollout did not finish.
        raise RecordingError(f"{directory / CONVERSATION} is missing")
    return Recording(run, scenario, context, summary, _costs(directory / EVENTS_FILE))


def _world_at(world: Mapping[str, pl.DataFrame], index: int) -> dict[str, pl.DataFrame]:
    """Every world-state table as of message ``index`` (its snapshots up to that index)."""
    return {ns: frame.filter(pl.col("sandbox_message_index") <= index) for ns, frame in world.items()}


def recorded_events(context: ExecutionContext) -> Iterator[BatchedEvent]:
    """The events the live middleware would have fed, in order, each with its agent turn.

    Calls pass the same tool-call gate as live ones (a call the gate would have refused is a
    refused call here too); a result carries the database changes its tool calls made, read
    from the snapshots ToolSandbox keeps under the index of the first answering row.
    """
    tables = context._dbs
    sandbox = tables[DatabaseNamespace.SANDBOX].sort("sandbox_message_index", maintain_order=True)
    world = {str(ns): tables[ns] for ns in STATE_NAMESPACES}
    changed_at: set[int] = set()
    for frame in world.values():
        changed_at |= set(frame["sandbox_message_index"].unique().to_list())
    offered = {RoleType.AGENT: offered_tools(RoleType.AGENT, context), RoleType.USER: offered_tools(RoleType.USER, context)}
    mapper = RowMapper()
    batch, previous = 0, ""
    for row in sandbox.iter_rows(named=True):
        if row["sender"] is None or simulator_only(row):
            continue  # a null headguard row, or the user simulator's few-shot examples
        sender, recipient = str(row["sender"]), str(row["recipient"])
        index = int(row["sandbox_message_index"])
        if sender == RoleType.AGENT and previous != RoleType.AGENT:
            batch += 1
        first_answer = sender == RoleType.EXECUTION_ENVIRONMENT and previous != RoleType.EXECUTION_ENVIRONMENT
        previous = sender
        gated: GatedCall | None = None
        changes: tuple[Any, ...] = ()
        if recipient == RoleType.EXECUTION_ENVIRONMENT and sender in (RoleType.AGENT, RoleType.USER):
            gated = inspect_code(row.get("content") or "", row.get("openai_function_name"), row.get("openai_tool_call_id"),
                                 offered[RoleType(sender)], f"call_{index}")
        elif first_answer and index in changed_at:
            changes = state_changes(_world_at(world, index - 1), _world_at(world, index))
        event = mapper.map(row, changes, gated)
        if event is not None:
            yield BatchedEvent(event, batch)


def agent_batches(context: ExecutionContext) -> int:
    """How many agent turns (execution batches) the recording holds."""
    batches, previous = 0, ""
    for row in context._dbs[DatabaseNamespace.SANDBOX].sort("sandbox_message_index").iter_rows(named=True):
        if row["sender"] is None or simulator_only(row):
            continue
        sender = str(row["sender"])
        if sender == RoleType.AGENT and previous != RoleType.AGENT:
            batches += 1
        previous = sender
    return batches
