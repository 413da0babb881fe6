"""Recorded conversations read as transcripts to play again: what the agent and the user did, in order.

``dynsteer rerun`` re-executes a recording in its scenario with dynsteer live, so a transcript keeps
what the roles did and what the world answered, nothing else: the agent's turns (a batch of tool
calls with the results the recording saw, or a message to the user), the user's messages and the
user's end of the conversation. Two kinds of recording are read:

* a trajectory record (``{"scenario_id", "summary": {"score", "started_at"}, "trajectory": {"steps":
  [...]}}``), as the DynSTEER reference implementation stores ToolSandbox rollouts: steps with
  ``actor``, ``recipient``, ``event_type``, ``tool_call {name, arguments}`` and ``tool_result {success,
  content, exception}``; consecutive agent calls before their results were one parallel batch;
* ToolSandbox's own run folder (``result_summary.json`` and ``trajectories/<scenario>/conversation.json``,
  OpenAI-style messages), made by its CLI or by ``dynsteer run``. It holds no clock: the rollout is
  timed by the folder's name (ToolSandbox names it after the time the run started) unless told.

Everything in a recording is hostile input: each problem is one ``TranscriptError`` sentence naming
the file and what is wrong, and the other recordings of a rerun go on.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dynsteer_hook.files.inputs import load_json_input
from dynsteer_hook.model.errors import DynsteerError

__all__ = ["Move", "RecordedCall", "RecordedResult", "Transcript", "TranscriptError", "find_transcripts", "read_transcript"]

MAX_MOVES = 10_000
"""Moves a transcript may hold; a longer recording is refused (ToolSandbox stops a rollout at 30 to 100 messages)."""
RESULT_SUMMARY = "result_summary.json"
CONVERSATION = "conversation.json"
_FOLDER_TIME = re.compile(r"(\d{2})_(\d{2})_(\d{4})_(\d{2})_(\d{2})_(\d{2})$")


class TranscriptError(DynsteerError):
    """A recording cannot be played again; the message says which file and why (one sentence)."""


class RecordedResult(BaseModel):
    """What the world answered a recorded call: its printed value, or the exception it raised."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    content: str = Field(description="The result as the agent saw it (ToolSandbox prints the value's repr).")
    exception: str | None = None


class RecordedCall(BaseModel):
    """One tool call of an agent turn, with the answer the recording saw."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    result: RecordedResult | None = None
    step: str = Field(description="Where the call is in the recording, as the recording names it.")


class Move(BaseModel):
    """One thing a role did: the agent's calls or message, the user's message or end of the conversation."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["calls", "agent_says", "user_says", "user_ends"]
    calls: tuple[RecordedCall, ...] = ()
    text: str | None = None
    step: str = ""

    @property
    def agent(self) -> bool:
        """Whether the agent made this move."""
        return self.kind in ("calls", "agent_says")


class Transcript(BaseModel):
    """A recorded rollout ready to play again in its scenario.

    Attributes:
        source: The recording (file or trajectory folder).
        scenario: The ToolSandbox scenario it was played in.
        started_at: When the rollout started (aware, UTC), if known: the clock is set to it before the scenario is built.
        similarity: ToolSandbox's similarity of the rollout as recorded, if the recording says.
        moves: What the roles did, in order, from the agent's first action on.
        latencies: Seconds each move took in the recording, where it says (the clock moves on by them while playing).
        user_ends: Whether the recording holds the user's end of the conversation (ToolSandbox's conversation.json
            does not: its user ends when the recording runs out).
        rows: The conversation rows the recording made (its message limit must let as many through).
        built_at: When the recorded scenario was built, where known (``None``: when the rollout started).
        built_from: How ``built_at`` is known: ``"recording"`` (starting rows its results show) or the source of
            the recording of the same run it was taken from.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str
    scenario: str
    started_at: dt.datetime | None = None
    similarity: float | None = None
    moves: tuple[Move, ...]
    latencies: tuple[float | None, ...] = ()
    user_ends: bool = True
    rows: int = 0
    built_at: dt.datetime | None = None
    built_from: str | None = None

    def results(self) -> Iterator[str]:
        """The recorded answer of every call, in order."""
        for move in self.moves:
            for call in move.calls:
                if call.result is not None:
                    yield call.result.content


def _fail(path: Path, what: str) -> TranscriptError:
    return TranscriptError(f"recording {path} {what}; it is skipped (check that it is a whole trajectory record or "
                           "ToolSandbox run folder)")


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _when(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)).astimezone(dt.timezone.utc)


def _printed(result: Mapping[str, Any], step: Mapping[str, Any]) -> RecordedResult:
    """The printed answer of a recorded result step: the step's ``content`` (what the agent saw) or the exception."""
    exception = result.get("exception")
    text = step.get("content")
    if not isinstance(text, str):
        text = repr(result.get("content"))
    return RecordedResult(content=text, exception=str(exception) if exception not in (None, "") else None)


def _latency(step: Mapping[str, Any]) -> float | None:
    cost = step.get("cost")
    ms = _finite(cost.get("latency_ms")) if isinstance(cost, Mapping) else None
    return ms / 1000.0 if ms is not None and ms >= 0 else None


def _record_moves(path: Path, steps: list[Any]) -> tuple[list[Move], list[float | None]]:
    """The moves of a trajectory record's steps (see the module's docstring)."""
    moves: list[Move] = []
    latencies: list[float | None] = []
    batch: list[dict[str, Any]] = []  # the open batch's calls: name, arguments, id, step, result
    batch_seconds = 0.0

    def close() -> None:
        nonlocal batch, batch_seconds
        if batch:
            calls = tuple(RecordedCall(name=c["name"], arguments=c["arguments"], result=c.get("result"), step=c["step"]) for c in batch)
            moves.append(Move(kind="calls", calls=calls, step=batch[0]["step"]))
            latencies.append(batch_seconds)
        batch, batch_seconds = [], 0.0

    for i, step in enumerate(steps):
        if not isinstance(step, Mapping):
            raise _fail(path, f"has a step that is not an object (step {i})")
        actor, recipient = step.get("actor"), step.get("recipient")
        label = str(step.get("step_id") or f"step {i}")[:64]
        seconds = _latency(step) or 0.0
        if actor == "agent" and recipient == "environment":
            call = step.get("tool_call")
            if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                raise _fail(path, f"has an agent call without a tool name at {label}")
            if batch and any(c.get("result") is not None for c in batch):
                close()  # a call after answered calls starts the next turn
            arguments = call.get("arguments")
            batch.append({"name": call["name"], "arguments": arguments if isinstance(arguments, (dict, str)) else {},
                          "id": step.get("openai_tool_call_id"), "step": label})
            batch_seconds += seconds
        elif actor == "environment" and recipient == "agent":
            raw_result = step.get("tool_result")
            result: Mapping[str, Any] = raw_result if isinstance(raw_result, Mapping) else {}
            wanted = step.get("openai_tool_call_id")
            open_calls = [c for c in batch if c.get("result") is None]
            target = next((c for c in open_calls if wanted is not None and c["id"] == wanted), open_calls[0] if open_calls else None)
            if target is None:
                raise _fail(path, f"has a tool result with no call before it at {label}")
            target["result"] = _printed(result, step)
            batch_seconds += seconds
        elif actor == "agent" and recipient == "user":
            close()
            moves.append(Move(kind="agent_says", text=str(step.get("content") or ""), step=label))
            latencies.append(seconds)
        elif actor == "user" and recipient == "agent":
            close()
            moves.append(Move(kind="user_says", text=str(step.get("content") or ""), step=label))
            latencies.append(seconds)
        elif actor == "user" and recipient == "environment":
            close()
            content = str(step.get("content") or "")
            if "end_conversation(" not in content:
                raise _fail(path, f"has a user tool call other than end_conversation at {label}, which a rerun cannot play")
            moves.append(Move(kind="user_ends", step=label))
            latencies.append(seconds)
        elif actor == "environment" and recipient == "user":
            continue  # the answer to the user's end of the conversation
        else:
            raise _fail(path, f"has a step from {actor!r} to {recipient!r} at {label}, which a rerun cannot play")
        if len(moves) > MAX_MOVES:
            raise _fail(path, f"holds more than {MAX_MOVES} moves")
    close()
    return moves, latencies


def _from_record(path: Path, data: Any) -> Transcript:
    if not isinstance(data, Mapping):
        raise _fail(path, "is not a JSON object")
    scenario = data.get("scenario_id")
    trajectory = data.get("trajectory")
    steps = trajectory.get("steps") if isinstance(trajectory, Mapping) else None
    if not isinstance(scenario, str) or not scenario:
        raise _fail(path, "has no scenario_id")
    if not isinstance(steps, list):
        raise _fail(path, "has no trajectory.steps list")
    raw_summary = data.get("summary")
    summary: Mapping[str, Any] = raw_summary if isinstance(raw_summary, Mapping) else {}
    moves, latencies = _record_moves(path, steps)
    return Transcript(source=str(path), scenario=scenario, started_at=_when(summary.get("started_at")),
                      similarity=_finite(summary.get("score")), moves=tuple(moves), latencies=tuple(latencies), rows=len(steps))


def _folder_time(run: Path) -> dt.datetime | None:
    """When ToolSandbox started a run, from its folder's name (``..._MM_DD_YYYY_HH_MM_SS``, the machine's local time)."""
    found = _FOLDER_TIME.search(run.name)
    if not found:
        return None
    month, day, year, hour, minute, second = (int(x) for x in found.groups())
    try:
        return dt.datetime(year, month, day, hour, minute, second).astimezone(dt.timezone.utc)
    except ValueError:
        return None


def _arguments(raw: Any) -> dict[str, Any] | str:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw  # played as sent: the gate refuses it as the scenario did
        return value if isinstance(value, dict) else raw
    return {}


def _conversation_moves(path: Path, messages: list[Any]) -> list[Move]:
    """The moves of ToolSandbox's ``conversation.json`` (OpenAI-style messages), from the first assistant message on."""
    moves: list[Move] = []
    started = False
    pending: dict[str, dict[str, Any]] = {}
    order: list[dict[str, Any]] = []

    def close() -> None:
        nonlocal order
        if order:
            calls = tuple(RecordedCall(name=c["name"], arguments=c["arguments"], result=c.get("result"), step=c["step"]) for c in order)
            moves.append(Move(kind="calls", calls=calls, step=order[0]["step"]))
        order = []
        pending.clear()

    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise _fail(path, f"has a message that is not an object (message {i})")
        role = message.get("role")
        label = f"message {i}"
        if role == "assistant":
            started = True
            tool_calls = message.get("tool_calls")
            if tool_calls:
                close()
                if not isinstance(tool_calls, list):
                    raise _fail(path, f"has tool_calls that are not a list at {label}")
                for j, call in enumerate(tool_calls):
                    function = call.get("function") if isinstance(call, Mapping) else None
                    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                        raise _fail(path, f"has a tool call without a name at {label}")
                    entry = {"name": function["name"], "arguments": _arguments(function.get("arguments")), "step": f"{label}, call {j}"}
                    order.append(entry)
                    pending[str(call.get("id"))] = entry
            else:
                close()
                moves.append(Move(kind="agent_says", text=str(message.get("content") or ""), step=label))
        elif role == "tool" and started:
            entry = pending.pop(str(message.get("tool_call_id")), {})
            if not entry:
                raise _fail(path, f"has a tool result with no call before it at {label}")
            entry["result"] = RecordedResult(content=str(message.get("content") or ""))
        elif role == "user" and started:
            close()
            moves.append(Move(kind="user_says", text=str(message.get("content") or ""), step=label))
        if len(moves) > MAX_MOVES:
            raise _fail(path, f"holds more than {MAX_MOVES} moves")
    close()
    return moves


def _from_run(run: Path, scenario: str, summary: Mapping[str, Any] | None, started_at: dt.datetime | None) -> Transcript:
    path = run / "trajectories" / scenario / CONVERSATION
    _, data = load_json_input(path, "recording", "pass a ToolSandbox run folder whose scenarios have conversation.json", TranscriptError)
    if not isinstance(data, list):
        raise _fail(path, "is not a list of messages")
    similarity = _finite(summary.get("similarity")) if summary else None
    moves = _conversation_moves(path, data)
    return Transcript(source=str(path.parent), scenario=scenario, started_at=started_at or _folder_time(run),
                      similarity=similarity, moves=tuple(moves), user_ends=False, rows=len(data) + 2)


def read_transcript(path: Path) -> Transcript:
    """One trajectory record file.

    Raises:
        TranscriptError: Missing, unreadable, not JSON, or not a trajectory record (one sentence).
    """
    _, data = load_json_input(path, "recording", "pass trajectory record files or ToolSandbox run folders", TranscriptError,
                              surrogates=True)
    return _from_record(path, data)


def _run_entries(run: Path) -> Iterator[tuple[str, Mapping[str, Any] | None]]:
    """The scenarios of a ToolSandbox run folder: from its summary where it has one, else its trajectory folders."""
    seen: set[str] = set()
    summary = run / RESULT_SUMMARY
    if summary.is_file():
        try:
            _, data = load_json_input(summary, "run summary", "pass a ToolSandbox run folder", TranscriptError)
        except TranscriptError:
            data = None
        entries = data.get("per_scenario_results") if isinstance(data, Mapping) else None
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str) and entry["name"] not in seen:
                seen.add(entry["name"])
                yield entry["name"], entry
    trajectories = run / "trajectories"
    if trajectories.is_dir():
        for folder in sorted(trajectories.iterdir()):
            if folder.name not in seen and (folder / CONVERSATION).is_file():
                seen.add(folder.name)
                yield folder.name, None


def find_transcripts(sources: Iterable[Path], started_at: dt.datetime | None = None) -> Iterator[Transcript | TranscriptError]:
    """Every recording under ``sources``, in order: record files, folders of record files, ToolSandbox run folders.

    A recording that cannot be read is yielded as its ``TranscriptError`` (the others go on); a source that does not
    exist raises it.
    """
    for source in sources:
        if source.is_dir() and ((source / RESULT_SUMMARY).is_file() or (source / "trajectories").is_dir()):
            for scenario, entry in _run_entries(source):
                try:
                    yield _from_run(source, scenario, entry, started_at)
                except TranscriptError as exc:
                    yield exc
        elif source.is_dir():
            files = sorted(p for p in source.iterdir() if p.suffix == ".json" and p.is_file())
            if not files:
                raise TranscriptError(f"{source} holds no trajectory records (*.json) and is not a ToolSandbox run folder; "
                                      "pass record files or run folders")
            for path in files:
                try:
                    yield read_transcript(path)
                except TranscriptError as exc:
                    yield exc
        elif source.exists():
            try:
                yield read_transcript(source)
            except TranscriptError as exc:
                yield exc
        else:
            raise TranscriptError(f"recording {source} does not exist; pass trajectory record files or ToolSandbox run folders")
