"""What playing one scenario yields: ToolSandbox's per-scenario result with dynsteer's additions, typed.

A ``ScenarioResult`` holds exactly the keys of an entry of ToolSandbox's ``per_scenario_results``
(name, categories, traceback, exception type, similarities, turn count, mappings), plus the
``dynsteer`` block (``dynsteer_hook.report.run_summary``), the LiteLLM roles' spending, for a
scenario Ctrl-C stopped, how it was stopped, and, for a rollout whose ToolSandbox similarity was
not computed (``toolsandbox.similarity``), why: its similarities are then null, never 0. ``record()`` is the entry as ``result_summary.json``
holds it: the keys that were set, in ToolSandbox's order, so the files read the same as ToolSandbox's own.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from dynsteer_hook.files.outputs import json_text
from dynsteer_hook.model.json_text import finite_number
from dynsteer_hook.model.records import NativeSimilarity
from dynsteer_hook.report.run_summary import DynsteerBlock, Stopping


class Reexecution(BaseModel):
    """How a re-executed recording (``dynsteer rerun``) compares with the recording.

    ``reproduced`` is true when every call was answered as recorded and ToolSandbox's similarity equals the
    recorded one, false at the first divergence (named with the recording's step) or a different similarity,
    and ``None`` when it cannot be told (a halt cut the rollout before the recording's end with every answer
    equal so far; or the recording has no similarity).
    """

    model_config = ConfigDict(extra="forbid")

    source: str
    scenario: str
    started_at: str | None = None
    built_at: str | None = None  # when the recorded scenario was built, where known
    built_from: str | None = None  # "recording", or the recording of the same run that told it
    recorded_similarity: float | None = None
    reproduced: bool | None = None
    divergence: dict[str, str] | None = None
    moves: int = 0
    played: int = 0
    compared_calls: int = 0


class ScenarioResult(BaseModel):
    """One played (or stopped) scenario; fields that were never set stay out of its record."""

    model_config = ConfigDict(extra="forbid")

    name: str
    categories: list[str]
    traceback: str | None
    exception_type: str | None
    milestone_similarity: int | float | None = None  # as ToolSandbox computed it (0 stays an integer in the file)
    minefield_similarity: int | float | None = None
    similarity: int | float | None = None
    turn_count: int | None = None
    milestone_mapping: dict[Any, Any] | None = None
    minefield_mapping: dict[Any, Any] | None = None
    similarity_unknown: str | None = None  # why ToolSandbox's similarity was not computed (the similarities are then null)
    interrupted: Stopping | None = None
    not_started: str | None = None  # why the run did not start it, though nothing interrupted it (its budget was spent)
    dynsteer: DynsteerBlock | None = None
    agent_llm: dict[str, Any] | None = None
    user_llm: dict[str, Any] | None = None
    recording: Reexecution | None = None

    @classmethod
    def evaluated(cls, name: str, categories: list[Any], evaluation: Any) -> ScenarioResult:
        """A rollout ToolSandbox played to its end and evaluated (``evaluation`` is its ``EvaluationResult``)."""
        return cls(
            name=name, categories=[str(c) for c in categories], traceback=None, exception_type=None,
            milestone_similarity=evaluation.milestone_similarity, minefield_similarity=evaluation.minefield_similarity,
            similarity=evaluation.similarity, turn_count=evaluation.turn_count,
            milestone_mapping=evaluation.milestone_mapping, minefield_mapping=evaluation.minefield_mapping,
        )

    @classmethod
    def unevaluated(cls, name: str, categories: list[Any], reason: str, turn_count: int | None) -> ScenarioResult:
        """A rollout ToolSandbox played to its end but whose similarity it did not compute (``reason``): unknown, not 0."""
        return cls(
            name=name, categories=[str(c) for c in categories], traceback=None, exception_type=None,
            milestone_similarity=None, minefield_similarity=None, similarity=None, turn_count=turn_count, similarity_unknown=reason,
        )

    @classmethod
    def crashed(cls, name: str, categories: list[Any], exc: BaseException, max_messages: int) -> ScenarioResult:
        """A rollout that raised: similarity 0 and the traceback, as ToolSandbox records a crash."""
        return cls(
            name=name, categories=[str(c) for c in categories],
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), exception_type=type(exc).__name__,
            milestone_similarity=0, minefield_similarity=0, similarity=0, turn_count=max_messages,
            milestone_mapping={}, minefield_mapping={},
        )

    @classmethod
    def stopped(cls, name: str, categories: list[Any], how: Stopping) -> ScenarioResult:
        """A scenario Ctrl-C stopped while it played (``in_flight``) or kept from starting (``not_started``)."""
        return cls(name=name, categories=[str(c) for c in categories], traceback=None, exception_type=None, interrupted=how)

    @classmethod
    def left(cls, name: str, categories: list[Any], why: str) -> ScenarioResult:
        """A scenario the run did not start for ``why`` (``--run-max-cost`` spent): nothing was played or written for it."""
        return cls(name=name, categories=[str(c) for c in categories], traceback=None, exception_type=None, not_started=why)

    def crash_reason(self) -> str | None:
        """The crash in one line: the exception's last traceback line (None: no crash)."""
        if not self.exception_type:
            return None
        last = (self.traceback or "").strip().splitlines()[-1:]
        return last[0] if last else self.exception_type

    def native(self) -> NativeSimilarity | None:
        """ToolSandbox's similarity of the rollout (None: ToolSandbox did not evaluate it)."""
        return native_similarity(self.record())

    def record(self) -> dict[str, Any]:
        """The entry of ``per_scenario_results``: the fields that were set, in ToolSandbox's key order."""
        return self.model_dump(mode="python", exclude_unset=True, exclude_none=False)


def native_similarity(result: Mapping[str, Any]) -> NativeSimilarity | None:
    """ToolSandbox's similarity in a result record (None: not evaluated; ``unknown`` says why one was not computed)."""
    unknown = result.get("similarity_unknown")
    if isinstance(unknown, str) and unknown:
        return NativeSimilarity(similarity=None, unknown=unknown)
    if result.get("similarity") is None:
        return None

    def number(key: str) -> float | None:
        return finite_number(result.get(key))  # a recorded file's number: NaN, 1e400 or text is unknown

    return NativeSimilarity(similarity=number("similarity"), milestone_similarity=number("milestone_similarity"),
                            minefield_similarity=number("minefield_similarity"))


def crash_reason(result: dict[str, Any]) -> str | None:
    """The crash of a result record in one line (None: no crash)."""
    if not result.get("exception_type"):
        return None
    last = (result.get("traceback") or "").strip().splitlines()[-1:]
    return last[0] if last else str(result["exception_type"])


def dumps_result(result: dict[str, Any]) -> str:
    """JSON text of one result record."""
    return json_text(result, ensure_ascii=False)
