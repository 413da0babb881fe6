"""DynSTEER inside a LangChain agent: ``create_agent(model, tools, middleware=[DynSteerMiddleware(...)])``.

The middleware feeds a ``Session`` every model turn, tool call and tool result of the agent's run, all from
one hook, ``wrap_model_call``, around each model call:

* before the call, what the model is about to see and the session has not: the user's messages, and the
  results of the last turn's calls (an error when the tool message says so), which close actions and run
  the stop rules. When the run is halted, the model is not called: the run jumps to its end.
* after the call, the model's turn: all of its tool calls, before any runs. A fatal call halts here: the
  model's message stays in the conversation, each of its calls is answered with a refusal ``ToolMessage``,
  and the run jumps to its end, so the tool node never runs any of them.
* a turn without tool calls ends the run, and a halt too: the session is finished then (the report in
  ``middleware.report``, its files in ``report_dir``, the observers told), and the stop record goes into the
  run's state (``dynsteer_stop``). A model error finishes the report as a crash, with the reason.

One hook keeps what the middleware adds to LangChain's loop to a wrapper around each model call: nothing runs
around the tools and the graph gains no node. So a run that ends where the model cannot see it (a tool that
raises, the recursion limit, a tool that returns directly) is finished by ``with middleware: agent.invoke(...)``
(a crash, with the reason), by ``finish()``, or when the next run starts. One middleware evaluates one run at a
time: give concurrent runs a middleware each.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from langchain.agents import AgentState
from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.types import Command

from dynsteer_hook.judges.base import Judge
from dynsteer_hook.langchain._convert import call_id, conversation_events, result_event, text_of, tool_specs, turn_events
from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.events import SystemMessage
from dynsteer_hook.model.records import Report, StopRecord
from dynsteer_hook.runtime.stop_rules import RuleLike
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
                 stop_rules: Sequence[RuleLike] | None = None, observers: Sequence[Observer] = (),
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
        self._seen = 0  # messages of the conversation read
        self._history = 0  # messages there before the run's first model call
        self._last_ai: str | None = None  # the id of the last model turn fed
        self._calls: set[str] = set()
        self._results: set[str] = set()
        self.session: Session | None = None
        """The current (or last) run's session."""
        self.report: Report | None = None
        """The last finished run's report."""

    @property
    def stop(self) -> StopRecord | None:
        """The stop record of the current (or last) run, when it was halted."""
        return self.session.stop if self.session is not None else None

    # -- the run's ends ------------------------------------------------------------

    def finish(self, *, crash: str | None = None) -> Report | None:
        """Finish the current run's report by hand (a run that ended where the model could not see it)."""
        with self._lock:
            self._finish(crash=crash)
        return self.report

    def __enter__(self) -> DynSteerMiddleware:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        """Leaving ``with middleware:`` finishes a run the model did not see end: a crash when an exception left the block."""
        with self._lock:
            if exc is not None and isinstance(exc, Exception):
                self._finish(crash=f"{type(exc).__name__}: {text_of(str(exc))[:2000]}")
            else:
                self._finish()

    def _finish(self, *, crash: str | None = None) -> None:
        if self.session is not None and not self.session.finished:
            self.report = self.session.finish(crash=crash)

    def _continues(self, messages: Sequence[BaseMessage]) -> bool:
        """Whether the messages go on from the session's last turn: its message is there and no user spoke after it."""
        if self._last_ai is None:
            return True
        for message in reversed(messages):
            if message.id == self._last_ai:
                return True
            if message.type == "human":
                return False
        return False

    # -- model turns -----------------------------------------------------------------

    def _open(self, request: ModelRequest) -> Session:
        session = self.session
        if session is not None and not session.finished:
            if self._continues(request.messages):
                return session
            self.report = session.finish(crash="the run ended where its model could not see it (a tool that raised, the recursion "
                                               "limit); its report was finished when the next run started")
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
        self._seen, self._history, self._last_ai = 0, len(request.messages), None
        self._calls.clear()
        self._results.clear()
        if system:
            self.session.feed(SystemMessage(system))
        return self.session

    def _read(self, session: Session, messages: Sequence[BaseMessage]) -> None:
        """Feed what the session has not seen of the conversation: the user's words, the results of its calls.

        Before the run's first model call, the conversation is history (a thread's earlier runs): only what the user
        and the system said is fed. A conversation rewritten shorter (summarised) is read again from its start; each
        call and result is still fed once.
        """
        if len(messages) < self._seen:
            self._seen = self._history = 0
        for i in range(self._seen, len(messages)):
            message = messages[i]
            kind = message.type
            if kind == "tool" and isinstance(message, ToolMessage):
                cid = str(message.tool_call_id)
                if cid in self._calls and cid not in self._results:
                    self._results.add(cid)
                    session.feed(result_event(cid, message))
            elif kind in ("human", "system"):
                for event in conversation_events(message):
                    session.feed(event)
            elif kind == "ai" and i >= self._history and isinstance(message, AIMessage) and message.id != self._last_ai:
                self._turn(session, message, 0.0)  # a turn no model call of this run made (another middleware's)
        self._seen = len(messages)

    def _turn(self, session: Session, message: AIMessage, seconds: float) -> tuple[list[dict[str, Any]], list[str], StopRecord | None]:
        """Feed one model turn; its calls, their ids, and the stop when the rollout is halted."""
        calls = [dict(c) for c in message.tool_calls or []]
        turn = session.turn + 1
        ids = [call_id(c, f"turn{turn}-{i}") for i, c in enumerate(calls)]
        fresh = [i for i, cid in enumerate(ids) if cid not in self._calls]
        if calls and not fresh:
            return calls, ids, session.stop
        self._calls.update(ids)
        verdict = session.feed_turn(turn_events(message, self._offered, turn), seconds=seconds, tokens=_tokens(message))
        return calls, ids, verdict.stop

    def _before_model(self, request: ModelRequest) -> ExtendedModelResponse | None:
        """Feed what the model is about to see; the end of the run instead of a model call once halted."""
        with self._lock:
            session = self._open(request)
            self._read(session, request.messages)
            if session.stop is None:
                return None
            stop = session.stop
            self._finish()
            return ExtendedModelResponse(model_response=ModelResponse(result=[]),
                                         command=Command(update={"jump_to": "end", STOP_KEY: stop.model_dump(mode="json")}))

    def _after_model(self, response: ModelResponse, seconds: float) -> ModelResponse | ExtendedModelResponse:
        """Feed the model's turn; a halt answers its calls with refusals and ends the run, and a last turn ends it too."""
        message = _ai_message(response)
        with self._lock:
            session = self.session
            if message is None or session is None or session.finished:
                return response
            calls, ids, stop = self._turn(session, message, seconds)
            self._last_ai = message.id
            if stop is None:
                if not calls:
                    self._finish()  # no call: the agent's last word
                return response
            refusals: list[BaseMessage] = [refusal(c, stop, cid) for c, cid in zip(calls, ids, strict=True)]
            if refusals:
                session.note(f"the calls of the halted turn ({', '.join(sorted({str(c.get('name')) for c in calls}))[:300]}) were "
                             "answered with a refusal and never ran")
            self._results.update(ids)
            self._finish()
            return ExtendedModelResponse(model_response=response, command=Command(
                update={"messages": refusals, "jump_to": "end", STOP_KEY: stop.model_dump(mode="json")}))

    def _crashed(self, exc: BaseException) -> None:
        with self._lock:
            self._finish(crash=f"{type(exc).__name__}: {text_of(str(exc))[:2000]}")

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
                        ) -> ModelResponse | ExtendedModelResponse:
        """Feed the conversation before the model call and the model's turn after it (see the module's docstring)."""
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

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
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

