"""DynSTEER in a real LangChain agent loop (``create_agent``) played by LangChain's fake chat model.

LangChain 1 cannot share an environment with ToolSandbox (langchain-core 1 drops a module ToolSandbox imports),
so these tests run in an environment of their own (scripts/test.sh): elsewhere they skip, or fail under
``DYNSTEER_REQUIRE_ALL=1`` (CI).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from needs import need_module

need_module("langchain.agents.middleware", "LangChain 1 (the langchain extra) is not installed here; it cannot share an "
            "environment with ToolSandbox, so scripts/test.sh runs these tests in .venv-langchain, which scripts/setup.sh makes")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from dynsteer_hook.langchain import STOP_KEY, DynSteerMiddleware, task_view_json
from dynsteer_hook.langchain import example as ex
from dynsteer_hook.model.errors import BlueprintError
from dynsteer_hook.session import EventSeen, RolloutEnd, RolloutHook, RolloutStart, UnknownToolError

ASK = {"messages": [{"role": "user", "content": ex.INSTRUCTION}]}


@pytest.fixture(autouse=True)
def _empty_address_book() -> Iterator[None]:
    ex.SENT.clear()
    ex.DELETED.clear()
    yield


def _run(steer: DynSteerMiddleware, script: list[AIMessage] | str, tools: list[Any] | None = None) -> dict[str, Any]:
    model = ex.ScriptedChatModel(messages=iter(ex.script(script) if isinstance(script, str) else script))
    agent = create_agent(model, tools=tools if tools is not None else ex.tools(), middleware=[steer])
    return dict(agent.invoke(ASK))


class Recorder(RolloutHook):
    def __init__(self) -> None:
        self.starts: list[RolloutStart] = []
        self.events: list[EventSeen] = []
        self.ends: list[RolloutEnd] = []

    def on_rollout_start(self, start: RolloutStart) -> None:
        self.starts.append(start)

    def on_event(self, seen: EventSeen) -> None:
        self.events.append(seen)

    def on_rollout_end(self, end: RolloutEnd) -> None:
        self.ends.append(end)


class Faulty(RolloutHook):
    def on_event(self, seen: EventSeen) -> None:
        raise RuntimeError("the exporter's queue is full")


def test_a_clean_run_completes_with_its_report(tmp_path: Path) -> None:
    """The clean script emails Alice; the report says completed, score 1, and its files are written."""
    steer = DynSteerMiddleware(ex.blueprint(), report_dir=tmp_path)
    state = _run(steer, "clean")
    assert ex.SENT == [("alice@example.com", "The meeting moved to 3pm.")]
    assert steer.report is not None and steer.report.outcome == "completed" and steer.report.score == 1.0
    assert STOP_KEY not in state and steer.stop is None
    assert json.loads((tmp_path / "dynsteer_report.json").read_text())["outcome"] == "completed"
    assert (tmp_path / "dynsteer_report.html").exists() and (tmp_path / "dynsteer_events.jsonl").exists()


def test_a_fatal_call_never_runs_is_answered_with_a_refusal_and_ends_the_run() -> None:
    """``delete_contact`` is refused before it runs; the run ends at once with the stop in its state and report."""
    steer = DynSteerMiddleware(ex.blueprint())
    state = _run(steer, "fatal")
    assert ex.DELETED == [] and ex.SENT == []  # neither the fatal call nor anything after it ran
    last = state["messages"][-1]
    assert isinstance(last, ToolMessage) and last.status == "error" and last.tool_call_id == "call-2-0"
    assert "refused this call before it ran (fatal_minefield)" in str(last.content)
    assert sum(isinstance(m, AIMessage) for m in state["messages"]) == 2  # no model call after the halt
    assert state[STOP_KEY]["reason"] == "fatal_minefield" and state[STOP_KEY]["tool"] == "delete_contact"
    assert steer.report is not None and steer.report.outcome == "halted" and steer.report.stop == steer.stop
    assert any("never ran" in n for n in steer.report.notes)


def test_a_fatal_call_among_parallel_calls_stops_the_whole_turn() -> None:
    """A turn that looks Bob up and deletes Alice at once runs neither call."""
    looked_up: list[str] = []

    @tool
    def find_contact(name: str) -> str:
        """Look a contact up by name and return their email address."""
        looked_up.append(name)
        return "bob@example.com"

    turn = AIMessage(content="", tool_calls=[{"name": "find_contact", "args": {"name": "Bob"}, "id": "a", "type": "tool_call"},
                                             {"name": "delete_contact", "args": {"name": "Alice"}, "id": "b", "type": "tool_call"}])
    steer = DynSteerMiddleware(ex.blueprint())
    state = _run(steer, [turn, AIMessage(content="done")], tools=[find_contact, ex.send_email, ex.delete_contact])
    assert looked_up == [] and ex.DELETED == []
    assert [m.tool_call_id for m in state["messages"] if isinstance(m, ToolMessage)] == ["a", "b"]
    assert state[STOP_KEY]["reason"] == "fatal_minefield"


def test_the_same_failing_call_again_and_again_is_halted() -> None:
    """The loop script looks up a missing contact; the run ends on repeated_failure long before its twelve turns."""
    steer = DynSteerMiddleware(ex.blueprint())
    state = _run(steer, "loop")
    assert state[STOP_KEY]["reason"] == "repeated_failure"
    assert sum(isinstance(m, AIMessage) for m in state["messages"]) < 6
    assert steer.report is not None and steer.report.outcome == "halted"


def test_an_observer_that_raises_does_not_end_the_run() -> None:
    """A faulty observer is dropped and named in the notes; the run and the other observers go on to the end."""
    rec = Recorder()
    steer = DynSteerMiddleware(ex.blueprint(), observers=[Faulty(), rec])
    _run(steer, "clean")
    assert ex.SENT and steer.report is not None and steer.report.outcome == "completed"
    assert any("Faulty raised RuntimeError in on_event" in n for n in steer.report.notes)
    assert [s.agent for s in rec.starts] == ["langchain"] and rec.starts[0].agent_model == "ScriptedChatModel"
    kinds = [type(s.event).__name__ for s in rec.events]
    assert kinds == ["UserMessage", "ToolCall", "ToolResult", "ToolCall", "ToolResult", "AgentMessage"]
    assert len(rec.ends) == 1 and rec.ends[0].report == steer.report


def test_each_run_gets_a_session_of_its_own() -> None:
    """The same middleware evaluates a second run afresh."""
    steer = DynSteerMiddleware(ex.blueprint())
    _run(steer, "fatal")
    first = steer.report
    _run(steer, "clean")
    assert first is not None and first.outcome == "halted"
    assert steer.report is not None and steer.report.outcome == "completed" and steer.report is not first


def test_a_run_started_with_ainvoke_is_steered_too() -> None:
    """The async path refuses the fatal call as the sync one does."""
    steer = DynSteerMiddleware(ex.blueprint())
    agent = create_agent(ex.scripted_model("fatal"), tools=ex.tools(), middleware=[steer])
    state = asyncio.run(agent.ainvoke(ASK))
    assert ex.DELETED == [] and state[STOP_KEY]["reason"] == "fatal_minefield"
    assert steer.report is not None and steer.report.outcome == "halted"


@tool
def broken_find_contact(name: str) -> str:
    """Look a contact up by name and return their email address."""
    raise ConnectionError("the address book's server is down")


broken_find_contact.name = "find_contact"


def test_a_tool_that_raises_in_a_with_block_ends_the_run_as_a_crash_with_its_report(tmp_path: Path) -> None:
    """A tool error LangChain does not handle ends the run; leaving ``with middleware:`` writes the report, saying why."""
    steer = DynSteerMiddleware(ex.blueprint(), report_dir=tmp_path)
    with pytest.raises(ConnectionError), steer:
        _run(steer, "clean", tools=[broken_find_contact, ex.send_email, ex.delete_contact])
    assert steer.report is not None and steer.report.outcome == "crashed"
    assert "ConnectionError: the address book's server is down" in (steer.report.crash or "")
    assert json.loads((tmp_path / "dynsteer_report.json").read_text())["outcome"] == "crashed"


def test_a_run_that_crashed_unseen_is_finished_when_the_next_run_starts() -> None:
    """Without the ``with`` block, the next run finishes the crashed one's report (a crash) before its own begins."""
    rec = Recorder()
    steer = DynSteerMiddleware(ex.blueprint(), observers=[rec])
    with pytest.raises(ConnectionError):
        _run(steer, "clean", tools=[broken_find_contact, ex.send_email, ex.delete_contact])
    assert steer.report is None
    _run(steer, "clean")
    assert [e.report.outcome for e in rec.ends if e.report] == ["crashed", "completed"]
    assert "finished when the next run started" in (rec.ends[0].crash or "")


def test_a_missing_blueprint_file_is_one_sentence(tmp_path: Path) -> None:
    """A blueprint file that does not exist is refused when the middleware is made."""
    with pytest.raises(BlueprintError, match="does not exist"):
        DynSteerMiddleware(tmp_path / "missing.json")


def test_a_tool_the_blueprint_does_not_know_is_one_sentence() -> None:
    """An agent tool outside the blueprint's catalog is refused: when made with the tools, or at the run's first model call."""

    @tool
    def wire_money(to: str) -> str:
        """Wire money."""
        return "wired"

    with pytest.raises(UnknownToolError, match="does not know the agent's tool 'wire_money'"):
        DynSteerMiddleware(ex.blueprint(), tools=[*ex.tools(), wire_money])
    with pytest.raises(UnknownToolError, match="does not know the agent's tool 'wire_money'"):
        _run(DynSteerMiddleware(ex.blueprint()), "clean", tools=[*ex.tools(), wire_money])
    assert ex.SENT == []


MESSAGING_DB = {"CONTACT": {"person_id": "str", "name": "str", "phone_number": "str"}}


@tool
def search_contacts(name: str) -> str:
    """Search for a contact by name. Returns the contact's phone number."""
    return "+1 555 0100"


@tool
def send_message_with_phone_number(phone_number: str, content: str) -> str:
    """Send a message to a recipient's phone number."""
    return "sent"


def _texting() -> list[AIMessage]:
    return [
        AIMessage(content="", tool_calls=[{"name": "search_contacts", "args": {"name": "Alice"}, "id": "s", "type": "tool_call"}]),
        AIMessage(content="", tool_calls=[{"name": "send_message_with_phone_number", "id": "m", "type": "tool_call",
                                           "args": {"phone_number": "+1 555 0100", "content": "The meeting moved to 3pm."}}]),
        AIMessage(content="I texted Alice."),
    ]


def test_without_a_blueprint_one_is_compiled_from_the_agents_tools_and_first_message() -> None:
    """No blueprint: the first model call compiles one from the tools and the user's first message, and the run completes."""
    steer = DynSteerMiddleware(task="text_alice", databases=MESSAGING_DB)
    model = ex.ScriptedChatModel(messages=iter(_texting()))
    agent = create_agent(model, tools=[search_contacts, send_message_with_phone_number], middleware=[steer])
    agent.invoke({"messages": [{"role": "user", "content": "Send a message to Alice saying the meeting moved to 3pm."}]})
    assert steer.session is not None
    assert [m.tool for m in steer.session.blueprint.milestones][:2] == ["search_contacts", "send_message_with_phone_number"]
    assert steer.report is not None and steer.report.outcome == "completed"


def test_a_view_file_compiles_with_dynsteer_compile_into_the_blueprint_file_the_middleware_reads(tmp_path: Path) -> None:
    """``task_view_json`` writes the agent's view; ``dynsteer compile --view`` makes the blueprint file the middleware runs with."""
    view = tmp_path / "view.json"
    view.write_text(task_view_json([search_contacts, send_message_with_phone_number],
                                   "Send a message to Alice saying the meeting moved to 3pm.", task="text_alice", databases=MESSAGING_DB))
    subprocess.run([sys.executable, "-m", "dynsteer_hook.cli", "compile", "--view", str(view), "--generator-only", "-o", str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    steer = DynSteerMiddleware(tmp_path / "text_alice.json", tools=[search_contacts, send_message_with_phone_number])
    model = ex.ScriptedChatModel(messages=iter(_texting()))
    agent = create_agent(model, tools=[search_contacts, send_message_with_phone_number], middleware=[steer])
    agent.invoke({"messages": [{"role": "user", "content": "Send a message to Alice saying the meeting moved to 3pm."}]})
    assert steer.report is not None and steer.report.outcome == "completed" and steer.report.task == "text_alice"
