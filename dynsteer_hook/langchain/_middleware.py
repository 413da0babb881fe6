"""DynSTEER inside a LangChain agent: ``create_agent(model, tools, middleware=[DynSteerMiddleware(...)])``.

The middleware feeds a ``Session`` every model turn, tool call and tool result of the agent's run:

* ``wrap_model_call`` feeds the user's messages the model is about to see, calls the model, and
  feeds its turn (all of its tool calls before any runs). A fatal call halts here: the model's
  message stays in the conversation, each of its calls is answered with a refusal ``ToolMessage``,
  and the run jumps to its end, so the tool node never runs any of them. When a halt came from a
  tool result, the next model call is not made: the run jumps to its end.
* ``wrap_tool_call`` feeds each result (an error when the tool failed) and refuses any call still
  reaching the tools after a halt.
* ``after_agent`` finishes the session: the report (``middleware.report``), its files in
  ``report_dir``, the observers told. The stop record is in the run's state (``dynsteer_stop``).

A model or a tool that raises ends the run as a crash; the report is finished first, with the
reason. Tools run on threads in parallel, so the session is fed under a lock. One middleware
evaluates one run at a time: give concurrent runs a middleware each.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import AgentState
from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.types import Command

from dynsteer_hook.judges.base import Judge
from dynsteer_hook.langchain._convert import call_id, conversation_events, result_event, text_of, tool_specs, turn_events
from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.events import SystemMessage, ToolCall, ToolResult
from dynsteer_hook.model.records import Report, StopRecord
from dynsteer_hook.runtime.stop_rules import StopRule
from dynsteer_hook.session import Observer, RolloutStart, Session, agent_view, blueprint_file, check_tools, compile_agent_view

STOP_KEY = "dynsteer_stop"
"""The key of the stop record (a JSON object) in the run's state."""


class DynSteerState(AgentState, total=False):  # type: ignore[call-arg]  # AgentState is Any to mypy (see pyproject.toml)
    """The agent's state, with the stop record once DynSTEER halted the run."""

    dynsteer_stop: dict[str, Any]


def refusal(call: dict[str, Any], stop: StopRecord, cid: str) -> ToolMessage:
    """The answer to a call that will never run: the fatal call itself, or a sibling of the halted turn."""
    name = str(call.get("name") or "?")
    if stop.reason == "fatal_minefield" and stop.tool == name:
        text = f"DynSTEER refused this call before it ran ({stop.reason}): {stop.detail}"
    else:
        text = f"DynSTEER did not run this call: the run was halted ({stop.reason}: {stop.detail})"
    return ToolMessage(content=text[:2000], tool_call_id=cid, name=name, status="error")


def _ai_message(response: ModelResponse) -> AIMessage | None:
    for message in reversed(response.result):
        if isinstance(message, AIMessage):
            return message
    return None


def _tokens(message: AIMessage) -> int | None:
    usage = message.usage_metadata
    return int(usage["total_tokens"]) if usage and "total_tokens" in usage else None


def _model_name(model: Any) -> str | None:
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _tool_message(result: ToolMessage | Command[Any], cid: str) -> ToolMessage | None:
    if isinstance(result, ToolMessage):
        return result
    update = result.update if isinstance(result.update, Mapping) else {}
    for message in update.get("messages") or ():
        if isinstance(message, ToolMessage) and message.tool_call_id == cid:
            return message
    return None


class DynSteerMiddleware(AgentMiddleware):
    """DynSTEER for a LangChain agent: ``create_agent(..., middleware=[DynSteerMiddleware("bp.json")])``.

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

    state_schema = DynSteerState

    def __init__(self, blueprint: Blueprint | str | Path | None = None, *, tools: Sequence[Any] | None = None, task: str | None = None,
                 config: EvaluatorConfig | None = None, judges: Mapping[int, Judge] | None = None,
                 stop_rules: Sequence[StopRule] | None = None, observers: Sequence[Observer] = (),
                 report_dir: str | Path | None = None, databases: Mapping[str, Mapping[str, str]] | None = None) -> None:
        super().__init__()
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
        self._fed: set[str] = set()
        self.session: Session | None = None
        """The current (or last) run's session."""
        self.report: Report | None = None
        """The last finished run's report."""

    @property
    def stop(self) -> StopRecord | None:
        """The stop record of the current (or last) run, when it was halted."""
        return self.session.stop if self.session is not None else None

    # -- the run's ends ------------------------------------------------------------

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """A new run: a fresh session at its first model call (a run left unfinished is finished first)."""
        with self._lock:
            if self.session is not None and not self.session.finished:
                self.report = self.session.finish(crash="the run ended outside the agent's model and tools (its report was finished "
                                                        "when the next run started)")
            self.session, self._offered = None, None
            self._fed.clear()
        return None

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """The run is over: finish its report (and write its files)."""
        with self._lock:
            if self.session is not None and not self.session.finished:
                self.report = self.session.finish()
        return None

    def finish(self, *, crash: str | None = None) -> Report | None:
        """Finish the current run's report by hand (a run that ended where the middleware could not see it)."""
        with self._lock:
            if self.session is not None and not self.session.finished:
                self.report = self.session.finish(crash=crash)
        return self.report

    def _crashed(self, exc: BaseException) -> None:
        self.finish(crash=f"{type(exc).__name__}: {text_of(str(exc))[:2000]}")

    # -- model turns -----------------------------------------------------------------

    def _open(self, request: ModelRequest) -> Session:
        if self.session is not None and not self.session.finished:
            return self.session
        specs = tool_specs(request.tools)
        self._offered = frozenset(s.name for s in specs)
        system = text_of(request.system_message.content) if request.system_message is not None else None
        if self._blueprint is not None:
            blueprint = self._blueprint
            check_tools(blueprint, self._offered, source=self._source)
        else:
            first = next((text_of(m.content) for m in request.messages if m.type == "human"), "")
            view = agent_view(self._task or "langchain_agent", specs, first, system=system, databases=self._databases)
            blueprint = self._compiled.get(view.digest()) or compile_agent_view(view)
            self._compiled[view.digest()] = blueprint
        start = RolloutStart(scenario=self._task or blueprint.task or "langchain_agent", agent="langchain",
                             agent_model=_model_name(request.model), blueprint=self._source)
        self.session = Session(blueprint, observers=self._observers, report_dir=self._report_dir, start=start, **self._settings)
        self._fed.clear()
        if system:
            self.session.feed(SystemMessage(system))
        return self.session

    def _before_model(self, request: ModelRequest) -> ExtendedModelResponse | None:
        """Feed what the model is about to see; the end of the run instead of a model call once halted."""
        with self._lock:
            session = self._open(request)
            for message in request.messages:
                key = f"msg:{message.id or id(message)}"
                if key not in self._fed:
                    self._fed.add(key)
                    for event in conversation_events(message):
                        session.feed(event)
            if session.stop is None:
                return None
            return ExtendedModelResponse(model_response=ModelResponse(result=[]),
                                         command=Command(update={"jump_to": "end", STOP_KEY: session.stop.model_dump(mode="json")}))

    def _after_model(self, response: ModelResponse, seconds: float) -> ModelResponse | ExtendedModelResponse:
        """Feed the model's turn; a halt answers its calls with refusals and ends the run."""
        message = _ai_message(response)
        if message is None:
            return response
        with self._lock:
            session = self.session
            if session is None or session.finished:
                return response
            calls = [dict(c) for c in message.tool_calls or []]
            self._fed.add(f"msg:{message.id or id(message)}")
            turn = session.turn + 1
            ids = [call_id(c, f"turn{turn}-{i}") for i, c in enumerate(calls)]
            self._fed.update(f"call:{cid}" for cid in ids)
            verdict = session.feed_turn(turn_events(message, self._offered, turn), seconds=seconds, tokens=_tokens(message))
            if verdict.stop is None:
                return response
            refusals: list[BaseMessage] = [refusal(c, verdict.stop, cid) for c, cid in zip(calls, ids, strict=True)]
            if refusals:
                session.note(f"the calls of the halted turn ({', '.join(sorted({str(c.get('name')) for c in calls}))[:300]}) were "
                             "answered with a refusal and never ran")
            self._fed.update(f"result:{cid}" for cid in ids)
            return ExtendedModelResponse(model_response=response, command=Command(
                update={"messages": refusals, "jump_to": "end", STOP_KEY: verdict.stop.model_dump(mode="json")}))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
                        ) -> ModelResponse | ExtendedModelResponse:
        """Feed the turn before and after the model call (see the module's docstring)."""
        ended = self._before_model(request)
        if ended is not None:
            return ended
        began = time.perf_counter()
        try:
            response = handler(request)
        except Exception as exc:
            self._crashed(exc)
            raise
        return self._after_model(response, time.perf_counter() - began)

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
                               ) -> ModelResponse | ExtendedModelResponse:
        """``wrap_model_call`` for runs started with ``ainvoke`` or ``astream``."""
        ended = self._before_model(request)
        if ended is not None:
            return ended
        began = time.perf_counter()
        try:
            response = await handler(request)
        except Exception as exc:
            self._crashed(exc)
            raise
        return self._after_model(response, time.perf_counter() - began)

    # -- tool calls ------------------------------------------------------------------

    def _before_tool(self, call: dict[str, Any]) -> tuple[str, ToolMessage | None]:
        """The call's id, and its refusal when it must not run (the run is halted)."""
        cid = call_id(call, f"tool-{id(call)}")
        with self._lock:
            session = self.session
            if session is None or session.finished:
                return cid, None
            if f"call:{cid}" not in self._fed:  # a call no model turn made (another middleware added it): fed before it runs
                self._fed.add(f"call:{cid}")
                args = call.get("args")
                name = str(call.get("name") or "?")
                rejected = None if self._offered is None or name in self._offered else f"{name[:200]!r} is not an offered tool"
                session.feed(ToolCall(cid, name, args if isinstance(args, dict) else None, rejected=rejected))
            if session.stop is None:
                return cid, None
            self._fed.add(f"result:{cid}")
            return cid, refusal(call, session.stop, cid)

    def _after_tool(self, cid: str, result: ToolMessage | Command[Any] | None, error: BaseException | None = None) -> None:
        with self._lock:
            session = self.session
            if session is None or session.finished or f"result:{cid}" in self._fed:
                return
            self._fed.add(f"result:{cid}")
            if error is not None:
                session.feed(ToolResult(cid, None, f"{type(error).__name__}: {text_of(str(error))[:2000]}"))
            else:
                session.feed(result_event(cid, _tool_message(result, cid) if result is not None else None))

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], ToolMessage | Command[Any]]) -> ToolMessage | Command[Any]:
        """Refuse the call once the run is halted; otherwise run it and feed its result."""
        cid, refused = self._before_tool(request.tool_call)
        if refused is not None:
            return refused
        try:
            result = handler(request)
        except Exception as exc:
            self._after_tool(cid, None, exc)
            self._crashed(exc)
            raise
        self._after_tool(cid, result)
        return result

    async def awrap_tool_call(self, request: Any,
                              handler: Callable[[Any], Awaitable[ToolMessage | Command[Any]]]) -> ToolMessage | Command[Any]:
        """``wrap_tool_call`` for runs started with ``ainvoke`` or ``astream``."""
        cid, refused = self._before_tool(request.tool_call)
        if refused is not None:
            return refused
        try:
            result = await handler(request)
        except Exception as exc:
            self._after_tool(cid, None, exc)
            self._crashed(exc)
            raise
        self._after_tool(cid, result)
        return result


def compiled_blueprint(tools: Sequence[Any], first_message: str, *, task: str = "langchain_agent", system: str | None = None,
                       databases: Mapping[str, Mapping[str, str]] | None = None) -> Blueprint:
    """The blueprint of an agent from its LangChain tools and first user message, by the deterministic generator.

    Raises:
        BlueprintError: Nothing could be compiled (no tools, or no valid candidate).
    """
    return compile_agent_view(agent_view(task, tool_specs(tools), first_message, system=system, databases=databases))


def task_view_json(tools: Sequence[Any], first_message: str, *, task: str = "langchain_agent", system: str | None = None,
                   databases: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """The public view of an agent as a TaskView file's text, for ``dynsteer compile --view`` (with a model, say)."""
    view = agent_view(task, tool_specs(tools), first_message, system=system, databases=databases)
    return view.model_dump_json(indent=2) + "\n"

