"""DynSTEER inside the OpenAI Agents SDK: tool guardrails and run hooks around one session per run.

``DynSteerAgents.steer(agent)`` returns a copy of the agent whose function tools carry two guardrails,
and ``hooks`` are the run hooks to pass to ``Runner.run`` (``DynSteerAgents.run`` does both):

* the run hooks feed each model turn when the model answers (``on_llm_end``): all of its function
  calls, before any runs, so **minefield interception** sees a fatal call first;
* the **tool input guardrail** runs before each call: once the run is halted (a fatal call in the
  turn) it trips, so the call never runs and the SDK raises ``ToolInputGuardrailTripwireTriggered``,
  whose ``output.output_info`` holds the stop record;
* the **tool output guardrail** feeds each result (an error when the tool failed) as soon as the tool
  returns, and trips when the result halts the run (a loop, a stall): the SDK raises
  ``ToolOutputGuardrailTripwireTriggered`` before the model is called again. It feeds the results,
  rather than the ``on_tool_end`` hook, because a hook cannot end the run; ``on_tool_end`` feeds the
  results of tools that carry no guardrail of this run.

The report is finished when the run ends, halted (before the guardrail trips) or not (``on_agent_end``),
and written to ``report_dir``; a run that crashes is finished by ``run`` (or ``finish(crash=...)``).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    ModelResponse,
    RunContextWrapper,
    RunHooks,
    Runner,
    RunResult,
    Tool,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
    ToolOutputGuardrailTripwireTriggered,
)
from agents.tool import resolve_function_tool_failure_error_function, set_function_tool_failure_error_function
from agents.tool_context import ToolContext

from dynsteer_hook.judges.base import Judge
from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.model.events import SystemMessage, ToolResult
from dynsteer_hook.model.records import Report, StopRecord
from dynsteer_hook.openai_agents._convert import call_event, text_of, tool_specs, turn_events, user_messages
from dynsteer_hook.runtime.stop_rules import RuleLike
from dynsteer_hook.session import Observer, RolloutStart, Session, agent_view, blueprint_file, check_tools, compile_agent_view

STOP_KEY = "dynsteer_stop"
"""The key of the stop record (a JSON object) in a tripped guardrail's ``output_info``."""


@dataclass(frozen=True, slots=True)
class SteeredRun:
    """How a run under DynSTEER ended.

    Attributes:
        result: The SDK's result, or None when DynSTEER halted the run.
        report: The finished report.
        stop: The stop record when the run was halted.
        tripwire: The SDK's tripwire exception that ended a halted run.
    """

    result: RunResult | None
    report: Report
    stop: StopRecord | None
    tripwire: ToolInputGuardrailTripwireTriggered | ToolOutputGuardrailTripwireTriggered | None = None


def _model_name(agent: Agent[Any]) -> str | None:
    model = agent.model
    if isinstance(model, str):
        return model
    return getattr(model, "model", None) or (type(model).__name__ if model is not None else None)


class _Hooks(RunHooks[Any]):
    """The run hooks: model turns in, the report out when the run ends."""

    def __init__(self, steer: DynSteerAgents) -> None:
        self._steer = steer

    async def on_llm_start(self, context: RunContextWrapper[Any], agent: Agent[Any], system_prompt: str | None,
                           input_items: list[Any]) -> None:
        self._steer._before_model(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse) -> None:
        self._steer._after_model(response)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object) -> None:
        if isinstance(context, ToolContext):
            self._steer._result(context.tool_call_id, result)

    async def on_agent_end(self, context: RunContextWrapper[Any], agent: Agent[Any], output: Any) -> None:
        self._steer.finish()


class DynSteerAgents:
    """DynSTEER for OpenAI Agents SDK runs: ``await DynSteerAgents("bp.json").run(agent, "...")``.

    Args:
        blueprint: The task's blueprint, or the path of a blueprint file (``dynsteer compile --view`` writes
            them); None compiles one from the agent's tools and first user message at the first model call
            (the deterministic generator; see ``dynsteer_hook.session.agent_view``).
        tools: The agent's tools, to check the blueprint against them now rather than at the first model call.
        task: The task's name in the report (default: the blueprint's).
        config: Thresholds and rates.
        judges: Judges per tier (Tier 1 rules are added when missing).
        stop_rules: Closed-action stop criteria, checked in order.
        observers: Told every lifecycle point of each run (``RolloutHook`` subclasses), each isolated.
        report_dir: Where each run's report files go (the last run's overwrite the one before).
        databases: For a compiled blueprint: the tables the tools work on (table -> column -> type).

    Raises:
        BlueprintError: The blueprint file is missing or invalid, or the blueprint does not know the tools given.
    """

    def __init__(self, blueprint: Blueprint | str | Path | None = None, *, tools: Sequence[Tool] | None = None, task: str | None = None,
                 config: EvaluatorConfig | None = None, judges: Mapping[int, Judge] | None = None,
                 stop_rules: Sequence[RuleLike] | None = None, observers: Sequence[Observer] = (),
                 report_dir: str | Path | None = None, databases: Mapping[str, Mapping[str, str]] | None = None) -> None:
        if isinstance(blueprint, (str, Path)):
            self._source = f"blueprint file {blueprint}"
            self._blueprint: Blueprint | None = blueprint_file(blueprint)
        else:
            self._source = "the blueprint given" if blueprint is not None else "the blueprint compiled from the agent's tools"
            self._blueprint = blueprint
            if blueprint is not None:
                Session(blueprint)  # validated now, not at the first model call
        if self._blueprint is not None and tools is not None:
            check_tools(self._blueprint, {s.name for s in tool_specs(tools)}, source=self._source)
        self._task = task
        self._settings: dict[str, Any] = {"config": config, "judges": judges, "stop_rules": stop_rules}
        self._observers = tuple(observers)
        self._report_dir = report_dir
        self._databases = databases
        self._compiled: dict[str, Blueprint] = {}
        self._lock = threading.Lock()
        self._offered: frozenset[str] | None = None
        self._items = 0  # input items read
        self._calls: set[str] = set()
        self._results: set[str] = set()
        self._failures: dict[str, str] = {}
        self._model_began = 0.0
        self._context: RunContextWrapper[Any] | None = None
        self.session: Session | None = None
        """The current (or last) run's session."""
        self.report: Report | None = None
        """The last finished run's report."""
        self.hooks = _Hooks(self)
        """The run hooks to pass to ``Runner.run`` (``hooks=steer.hooks``)."""
        self.input_guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(self._check_call, name="dynsteer_interception")
        """Trips before a call once the run is halted: the call never runs."""
        self.output_guardrail: ToolOutputGuardrail[Any] = ToolOutputGuardrail(self._check_result, name="dynsteer_stop_rules")
        """Feeds each result; trips when it halts the run."""

    @property
    def stop(self) -> StopRecord | None:
        """The stop record of the current (or last) run, when it was halted."""
        return self.session.stop if self.session is not None else None

    # -- agents ---------------------------------------------------------------------

    def steer(self, agent: Agent[Any]) -> Agent[Any]:
        """A copy of ``agent`` whose function tools carry this run's guardrails (the agent itself is left as it was).

        Each tool is copied with the guardrails added after its own, and with its failure formatter wrapped so that
        a failed call reaches the evaluator as an error (the model still reads what the formatter says).
        """
        return agent.clone(tools=[self._steer_tool(t) if isinstance(t, FunctionTool) else t for t in agent.tools])

    def _steer_tool(self, tool: FunctionTool) -> FunctionTool:
        steered = copy.copy(tool)
        steered.tool_input_guardrails = [*(tool.tool_input_guardrails or []), self.input_guardrail]
        steered.tool_output_guardrails = [*(tool.tool_output_guardrails or []), self.output_guardrail]
        formatter = resolve_function_tool_failure_error_function(tool)
        if formatter is not None:
            def noting(context: RunContextWrapper[Any], error: Exception) -> Any:
                if isinstance(context, ToolContext):
                    with self._lock:
                        self._failures[context.tool_call_id] = f"{type(error).__name__}: {text_of(str(error))[:2000]}"
                return formatter(context, error)

            set_function_tool_failure_error_function(steered, noting)
        return steered

    async def run(self, agent: Agent[Any], input: str | list[Any], **runner: Any) -> SteeredRun:
        """Run ``agent`` under DynSTEER with ``Runner.run`` (further keywords go to it) and return how it ended.

        A halt is a result, not an error: the SDK's tripwire is caught and returned in ``SteeredRun``. Any other
        exception ends the run as a crash, with its report, and is raised again.

        Raises:
            DynsteerError: ``hooks`` was passed (this run's hooks are the session's; attach yours to the agent).
        """
        if "hooks" in runner:
            raise DynsteerError("run() passes its own run hooks to Runner.run; give yours to the agent (Agent(hooks=...)) instead")
        try:
            result = await Runner.run(self.steer(agent), input, hooks=self.hooks, **runner)
        except (ToolInputGuardrailTripwireTriggered, ToolOutputGuardrailTripwireTriggered) as trip:
            if trip.guardrail not in (self.input_guardrail, self.output_guardrail):
                self.finish(crash=f"{type(trip).__name__}: {trip}")
                raise
            report = self.finish()
            assert report is not None
            return SteeredRun(None, report, report.stop, trip)
        except BaseException as exc:
            self.finish(crash=f"{type(exc).__name__}: {text_of(str(exc))[:2000]}", interrupted=isinstance(exc, KeyboardInterrupt))
            raise
        report = self.finish()
        assert report is not None
        return SteeredRun(result, report, report.stop)

    def run_sync(self, agent: Agent[Any], input: str | list[Any], **runner: Any) -> SteeredRun:
        """``run`` from code that is not async."""
        import asyncio

        return asyncio.run(self.run(agent, input, **runner))

    def finish(self, *, crash: str | None = None, interrupted: bool = False) -> Report | None:
        """Finish the current run's report (the hooks and ``run`` do; by hand for a run that ended elsewhere)."""
        with self._lock:
            if self.session is not None and not self.session.finished:
                self.report = self.session.finish(crash=crash, interrupted=interrupted)
        return self.report

    # -- model turns -----------------------------------------------------------------

    def _open(self, agent: Agent[Any], system: str | None, first: str) -> Session:
        specs = tool_specs(agent.tools)
        self._offered = frozenset(s.name for s in specs)
        if self._blueprint is not None:
            blueprint = self._blueprint
            check_tools(blueprint, self._offered, source=self._source)
        else:
            view = agent_view(self._task or "openai_agent", specs, first, system=system, databases=self._databases)
            blueprint = self._compiled.get(view.digest()) or compile_agent_view(view)
            self._compiled[view.digest()] = blueprint
        start = RolloutStart(scenario=self._task or blueprint.task or "openai_agent", agent=f"openai-agents:{agent.name}"[:200],
                             agent_model=_model_name(agent), blueprint=self._source)
        self.session = Session(blueprint, observers=self._observers, report_dir=self._report_dir, start=start, **self._settings)
        self._calls.clear()
        self._results.clear()
        self._failures.clear()
        if system:
            self.session.feed(SystemMessage(system))
        return self.session

    def _before_model(self, context: RunContextWrapper[Any], agent: Agent[Any], system: str | None, items: str | list[Any]) -> None:
        with self._lock:
            # The input grows by the run's own items from call to call: only the items past those read are new.
            first = self.session is None or self.session.finished or context is not self._context
            start = 0 if first or isinstance(items, str) or len(items) < self._items else self._items
            users = user_messages(items if isinstance(items, str) else items[start:])
            self._items = 0 if isinstance(items, str) else len(items)
            session = self.session
            if session is not None and not session.finished and context is not self._context:
                self.report = session.finish(crash="the run ended where DynSTEER could not see it (its report was finished when the "
                                                   "next run started); use run(), or call finish(crash=...) when Runner.run raises")
            if session is None or session.finished:  # a run starts with its first model call
                self._context = context
                session = self._open(agent, system, users[0].content if users else "")
            for message in users:
                session.feed(message)
            self._model_began = time.perf_counter()

    def _after_model(self, response: ModelResponse) -> None:
        with self._lock:
            session = self.session
            if session is None or session.finished:
                return
            events = turn_events(response.output, self._offered)
            self._calls.update(e.call_id for e in events if hasattr(e, "call_id"))
            tokens = response.usage.total_tokens if response.usage is not None else None
            session.feed_turn(events, seconds=time.perf_counter() - self._model_began, tokens=tokens or None)

    # -- calls and results -----------------------------------------------------------

    def _tripped(self, session: Session) -> ToolGuardrailFunctionOutput:
        """The guardrail's answer once the run is halted: the report is finished, then the SDK's tripwire ends the run."""
        stop = session.stop
        assert stop is not None
        if not session.finished:
            self.report = session.finish()
        return ToolGuardrailFunctionOutput.raise_exception(output_info={STOP_KEY: stop.model_dump(mode="json")})

    def _check_call(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        with self._lock:
            session = self.session
            if session is None:
                return ToolGuardrailFunctionOutput.allow()
            if session.stop is not None:
                self._results.add(context.tool_call_id)
                return self._tripped(session)
            if session.finished:
                return ToolGuardrailFunctionOutput.allow()
            if context.tool_call_id not in self._calls:  # a call no model turn showed (the hooks were not passed): fed before it runs
                self._calls.add(context.tool_call_id)
                if session.feed(call_event(context.tool_call_id, context.tool_name, context.tool_arguments, self._offered)).halted:
                    self._results.add(context.tool_call_id)
                    return self._tripped(session)
            return ToolGuardrailFunctionOutput.allow()

    def _check_result(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        with self._lock:
            session = self._feed_result(data.context.tool_call_id, data.output)
            if session is not None and session.stop is not None:
                return self._tripped(session)
            return ToolGuardrailFunctionOutput.allow()

    def _result(self, call_id: str, output: object) -> None:
        with self._lock:
            self._feed_result(call_id, output)

    def _feed_result(self, call_id: str, output: object) -> Session | None:
        session = self.session
        if session is None or session.finished or call_id in self._results:
            return session
        self._results.add(call_id)
        error = self._failures.pop(call_id, None)
        session.feed(ToolResult(call_id, None, error) if error is not None else ToolResult(call_id, text_of(output)))
        return session
