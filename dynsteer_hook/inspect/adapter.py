"""DynSTEER inside Inspect AI: an approver, a reviewer and a scorer around one evaluator per sample.

* The **approver** runs before every tool call: it feeds the conversation so far (the assistant
  message with all its calls) and so runs minefield interception; a fatal call gets the
  ``terminate`` decision with the rule as the explanation, so the tool never runs, and a stop
  rule that fires on an action closed by this turn ends the sample the same way.
* The **reviewer** runs after every call that ran: it feeds the result, which closes actions and
  runs settlement, stage judging and the stop rules; a halt ends the sample mid-run
  (``terminate``: Inspect records a limit of type ``operator`` and still scores the sample).
* The **scorer** feeds what is left of the conversation and returns DynSTEER's score, with the
  report as metadata and the first error as the explanation.

The stop is recorded in the sample's store (``dynsteer_stop``), and the blueprint the sample was
evaluated against in its score's metadata (``dynsteer_blueprint``, beside the report), so that
``dynsteer replay`` can read the log back.
A sample's blueprint comes from its metadata (``dynsteer_blueprint``), from the blueprints given
(one for every sample, a mapping or a folder of ``<sample id>.json``, or a function of the
task state), or is compiled from the sample's public view by the candidate sources given.
"""

from __future__ import annotations

import itertools
import json
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.approval import Approval, ApprovalPolicy, Approver, approver
from inspect_ai.model import ChatMessage, ChatMessageTool
from inspect_ai.review import Review, Reviewer, ReviewPolicy, reviewer
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import TaskState
from inspect_ai.tool import ToolCall, ToolCallView, ToolResult
from inspect_ai.util import store

from dynsteer_hook.compile.compiler import DEFAULT_CANDIDATES, CandidateSource
from dynsteer_hook.files.names import NameBook, is_entry_name
from dynsteer_hook.inspect.monitor import SampleMonitor
from dynsteer_hook.inspect.views import compile_view, sample_view
from dynsteer_hook.judges.base import Judge
from dynsteer_hook.model.blueprint import Blueprint, parse_blueprint
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.errors import BlueprintError
from dynsteer_hook.model.records import Report, StopRecord

BLUEPRINT_KEY = "dynsteer_blueprint"
STOP_KEY = "dynsteer_stop"

BlueprintSource = Blueprint | Mapping[str, Blueprint] | str | Path | Callable[[TaskState], Blueprint | None] | None
"""One blueprint for every sample, one per sample id, a folder of ``<sample id>.json``, or a function of the state."""

_INSTANCES: dict[str, DynSteer] = {}
"""Every DynSteer made in this process, by key: Inspect's registry records the key, the policies look the instance up."""
_NUMBERS = itertools.count(1)


def stop_explanation(stop: StopRecord) -> str:
    """One sentence for Inspect's transcript: why DynSTEER ended the sample."""
    return f"DynSTEER halted the sample ({stop.reason} at k={stop.k}, t={stop.t}): {stop.detail}"[:2000]


def _first_error(report: Report) -> str | None:
    e = report.first_error
    if e is None:
        return None
    return f"first error at k={e.k}, t={e.t} ({e.dimension}{', stage ' + e.stage if e.stage else ''}): {e.detail}"


class DynSteer:
    """DynSTEER for an Inspect task: ``Task(..., approval=ds.approval(), review=ds.review(), scorer=ds.scorer())``.

    Args:
        blueprints: Where each sample's blueprint comes from (see ``BlueprintSource``); a sample's
            metadata ``dynsteer_blueprint`` comes first.
        compile_sources: Candidate sources that compile a blueprint from the sample's public view when
            none is given (e.g. ``[llm_source(LLMClient(...))]``); views seen before reuse their blueprint.
        candidates: Candidates per source when compiling.
        config: Thresholds and rates.
        judges: Judges per tier (Tier 1 rules without them); with LLM judges the evaluator runs in a
            worker thread, off Inspect's event loop.
        report_dir: When set, each sample's report files go to ``<report_dir>/<sample id>_<epoch>/`` (the safe form of
            that name, ``files.names``: an id such as ``../../x`` or ``/etc`` is a name, never a path).
    """

    def __init__(self, blueprints: BlueprintSource = None, *, compile_sources: Sequence[CandidateSource] = (),
                 candidates: int = DEFAULT_CANDIDATES, config: EvaluatorConfig | None = None,
                 judges: Mapping[int, Judge] | None = None, report_dir: str | Path | None = None) -> None:
        self._blueprints = blueprints
        self._sources = tuple(compile_sources)
        self._candidates = candidates
        self.config = config or EvaluatorConfig()
        self._judges = dict(judges or {})
        self._report_dir = Path(report_dir) if report_dir is not None else None
        self._report_names = NameBook()
        self._monitors: dict[str, SampleMonitor] = {}
        self._compiled: dict[str, Blueprint] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self.last_blueprint: dict[str, Blueprint] = {}
        """The blueprint of each sample ``finish`` reported on, until its scorer takes it."""
        self.key = f"dynsteer-{next(_NUMBERS)}"
        _INSTANCES[self.key] = self

    # -- what a Task takes ------------------------------------------------------------

    def approval(self) -> list[ApprovalPolicy]:
        """The approval policy: DynSTEER's approver on every tool."""
        return [ApprovalPolicy(dynsteer_approver(self.key), "*")]

    def review(self) -> list[ReviewPolicy]:
        """The review policy: DynSTEER's reviewer on every tool."""
        return [ReviewPolicy(dynsteer_reviewer(self.key), "*")]

    def scorer(self) -> Scorer:
        """The scorer returning DynSTEER's score."""
        return dynsteer_scorer(self.key)

    # -- per sample -------------------------------------------------------------------

    async def monitor(self, state: TaskState) -> SampleMonitor:
        """The sample's monitor, made (and its blueprint found or compiled) on first use."""
        found = self._monitors.get(state.uuid)
        if found is not None:
            return found
        bp = await self._blueprint(state)
        found = self._monitors.get(state.uuid)  # made by another hook of the sample while this one compiled
        if found is not None:
            return found
        monitor = SampleMonitor(bp, self.config, judges=self._judges)
        self._monitors[state.uuid] = monitor
        # A sample that errors is never scored, so ``finish`` never drops its monitor: the state's end does.
        weakref.finalize(state, self._monitors.pop, state.uuid, None)
        return monitor

    def _given(self, state: TaskState) -> Blueprint | None:
        sample = str(state.sample_id)
        meta = (state.metadata or {}).get(BLUEPRINT_KEY)
        if meta is not None:
            text = meta if isinstance(meta, str) else json.dumps(meta)
            return parse_blueprint(text, source=f"the metadata {BLUEPRINT_KEY!r} of sample {sample}")
        src = self._blueprints
        if src is None:
            return None
        if isinstance(src, Blueprint):
            return src
        if isinstance(src, Mapping):
            return src.get(sample)
        if isinstance(src, (str, Path)):
            from dynsteer_hook.files.blueprints import load_blueprint

            if not is_entry_name(f"{sample}.json"):  # an id such as ../x names no file of the folder
                return None
            path = Path(src) / f"{sample}.json"
            return load_blueprint(path) if path.is_file() else None
        return src(state)

    async def _blueprint(self, state: TaskState) -> Blueprint:
        bp = self._given(state)
        if bp is not None:
            return bp
        if not self._sources:
            raise BlueprintError(f"sample {state.sample_id} has no blueprint: give DynSteer blueprints, put one in the sample's "
                                 f"metadata {BLUEPRINT_KEY!r}, or give compile_sources to compile one")
        view = sample_view(str(state.sample_id), state.messages, state.tools)
        digest = view.model_copy(update={"task": ""}).digest()  # the sample's name aside, samples of one view compile it once
        async with self._locks.setdefault(digest, anyio.Lock()):
            if digest not in self._compiled:
                self._compiled[digest] = await anyio.to_thread.run_sync(compile_view, view, self._sources, self._candidates)
        return self._compiled[digest]

    async def _run(self, fn: Callable[..., StopRecord | None], *args: Any) -> StopRecord | None:
        stop = await anyio.to_thread.run_sync(fn, *args) if self._judges else fn(*args)
        if stop is not None and store().get(STOP_KEY) is None:
            store().set(STOP_KEY, stop.model_dump(mode="json"))
        return stop

    async def before_call(self, state: TaskState, call: ToolCall, history: list[ChatMessage]) -> StopRecord | None:
        monitor = await self.monitor(state)
        return await self._run(monitor.before_call, history, call)

    async def after_call(self, state: TaskState, call: ToolCall, result: ChatMessageTool) -> StopRecord | None:
        monitor = await self.monitor(state)
        content = result.text if isinstance(result.content, str) else result.content
        return await self._run(monitor.after_call, str(call.id), content, result.error)

    async def finish(self, state: TaskState) -> Report:
        """The sample's report (its monitor is dropped)."""
        monitor = await self.monitor(state)
        report = monitor.finish(state.messages)
        self._monitors.pop(state.uuid, None)
        self.last_blueprint[state.uuid] = monitor.blueprint
        if self._report_dir is not None:
            from dynsteer_hook.report.writer import write_run_report

            folder = self._report_dir / self._report_names.claim(f"{state.sample_id}_{state.epoch}")
            await anyio.to_thread.run_sync(write_run_report, report, folder, monitor.blueprint)
        return report


def _steer(key: str) -> DynSteer:
    found = _INSTANCES.get(key)
    if found is None:
        raise RuntimeError(f"no DynSteer {key!r} in this process; build the task with DynSteer(...).approval() and keep the DynSteer")
    return found


def _state() -> TaskState:
    from inspect_ai.solver._task_state import sample_state

    state = sample_state()
    if state is None:
        raise RuntimeError("DynSTEER's approver, reviewer and scorer run inside an Inspect sample only")
    return state


@approver(name="dynsteer")
def dynsteer_approver(steer: str) -> Approver:
    """Minefield interception before every tool call (``terminate`` on a fatal call or a halt)."""

    async def approve(message: str, call: ToolCall, view: ToolCallView, history: list[ChatMessage]) -> Approval:
        stop = await _steer(steer).before_call(_state(), call, history)
        if stop is None:
            return Approval(decision="approve")
        return Approval(decision="terminate", explanation=stop_explanation(stop), metadata={STOP_KEY: stop.model_dump(mode="json")})

    return approve


@reviewer(name="dynsteer")
def dynsteer_reviewer(steer: str) -> Reviewer:
    """Settlement, stage judging and the stop rules after every call that ran (``terminate`` on a halt)."""

    async def review(message: str, call: ToolCall, result: ChatMessageTool, output: ToolResult,
                     view: ToolCallView, history: list[ChatMessage]) -> Review:
        stop = await _steer(steer).after_call(_state(), call, result)
        if stop is None:
            return Review(decision="continue")
        return Review(decision="terminate", explanation=stop_explanation(stop), metadata={STOP_KEY: stop.model_dump(mode="json")})

    return review


@scorer(metrics=[mean()], name="dynsteer")
def dynsteer_scorer(steer: str) -> Scorer:
    """DynSTEER's score of the sample, the report as metadata and the first error as the explanation."""

    async def score(state: TaskState, target: Target) -> Score:
        ds = _steer(steer)
        report = await ds.finish(state)
        blueprint = ds.last_blueprint.pop(state.uuid)
        return Score(value=report.score, answer=report.outcome, explanation=_first_error(report),
                     metadata={"dynsteer": report.model_dump(mode="json"), BLUEPRINT_KEY: json.loads(blueprint.model_dump_json(exclude_none=True))})

    return score
