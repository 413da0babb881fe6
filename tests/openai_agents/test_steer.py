"""DynSTEER in real OpenAI Agents SDK runs (``Runner.run``) played by the SDK's scripted model, offline."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from needs import need_module

need_module("agents", "the OpenAI Agents SDK (the openai-agents extra) is not installed (pip install -e '.[openai-agents]')")

from agents import Agent, Runner, ToolInputGuardrailTripwireTriggered, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from dynsteer_hook.model.errors import BlueprintError, DynsteerError
from dynsteer_hook.openai_agents import STOP_KEY, DynSteerAgents
from dynsteer_hook.openai_agents import example as ex
from dynsteer_hook.session import EventSeen, RolloutEnd, RolloutHook, RolloutStart, UnknownToolError

set_tracing_disabled(True)  # the SDK would otherwise try to export traces to OpenAI's servers


@pytest.fixture(autouse=True)
def _empty_address_book() -> Iterator[None]:
    ex.SENT.clear()
    ex.DELETED.clear()
    yield


def _agent(steps: list[list[Any]], tools: list[Any] | None = None) -> Agent[Any]:
    return Agent(name="book", instructions="Manage the address book.", tools=tools if tools is not None else ex.tools(),
                 model=ScriptedModel(steps))


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
    """The clean script emails Alice; the SDK's result comes back with a completed report, its files written."""
    run = DynSteerAgents(ex.blueprint(), report_dir=tmp_path).run_sync(ex.agent("clean"), ex.INSTRUCTION)
    assert ex.SENT == [("alice@example.com", "The meeting moved to 3pm.")]
    assert run.result is not None and run.result.final_output == "I emailed Alice that the meeting moved to 3pm."
    assert run.report.outcome == "completed" and run.report.score == 1.0 and run.stop is None and run.tripwire is None
    assert json.loads((tmp_path / "dynsteer_report.json").read_text())["outcome"] == "completed"


def test_a_fatal_call_never_runs_and_the_input_guardrail_trips(tmp_path: Path) -> None:
    """``delete_contact`` never runs: the input guardrail trips, the stop record is its output, the report is halted."""
    steer = DynSteerAgents(ex.blueprint(), report_dir=tmp_path)
    model = ex.scripted_model("fatal")
    run = steer.run_sync(Agent(name="book", tools=ex.tools(), model=model), ex.INSTRUCTION)
    assert ex.DELETED == [] and ex.SENT == []
    assert isinstance(run.tripwire, ToolInputGuardrailTripwireTriggered)
    assert run.tripwire.output.output_info[STOP_KEY]["reason"] == "fatal_minefield"
    assert run.result is None and run.stop is not None and run.stop.tool == "delete_contact"
    assert len(model.calls) == 2  # no model call after the halt
    assert json.loads((tmp_path / "dynsteer_report.json").read_text())["outcome"] == "halted"


def test_a_fatal_call_among_parallel_calls_stops_the_whole_turn() -> None:
    """A turn that looks Bob up and deletes Alice at once runs neither call."""
    looked_up: list[str] = []

    @function_tool
    def find_contact(name: str) -> str:
        """Look a contact up by name and return their email address."""
        looked_up.append(name)
        return "bob@example.com"

    turn = [function_call("find_contact", {"name": "Bob"}, call_id="a"), function_call("delete_contact", {"name": "Alice"}, call_id="b")]
    run = DynSteerAgents(ex.blueprint()).run_sync(_agent([turn, [assistant_message("done")]],
                                                          [find_contact, ex.send_email, ex.delete_contact]), ex.INSTRUCTION)
    assert looked_up == [] and ex.DELETED == []
    assert run.stop is not None and run.stop.reason == "fatal_minefield"


def test_the_same_failing_call_again_and_again_is_halted_by_the_output_guardrail() -> None:
    """The loop script's failures reach the evaluator as errors; the run ends on repeated_failure before the next model call."""
    model = ex.scripted_model("loop")
    run = DynSteerAgents(ex.blueprint()).run_sync(Agent(name="book", tools=ex.tools(), model=model), ex.INSTRUCTION)
    assert run.stop is not None and run.stop.reason == "repeated_failure"
    assert type(run.tripwire).__name__ == "ToolOutputGuardrailTripwireTriggered"
    assert len(model.calls) < 6 and run.report.outcome == "halted"
    assert run.report.steps and all(s.tools == ["find_contact"] and s.failed == 1 for s in run.report.steps)


def test_an_observer_that_raises_does_not_end_the_run() -> None:
    """A faulty observer is dropped and named in the notes; the run and the other observers go on to the end."""
    rec = Recorder()
    run = DynSteerAgents(ex.blueprint(), observers=[Faulty(), rec]).run_sync(ex.agent("clean"), ex.INSTRUCTION)
    assert ex.SENT and run.report.outcome == "completed"
    assert any("Faulty raised RuntimeError in on_event" in n for n in run.report.notes)
    assert rec.starts[0].agent == "openai-agents:address_book" and rec.starts[0].agent_model == "ScriptedModel"
    kinds = [type(s.event).__name__ for s in rec.events]
    assert kinds == ["SystemMessage", "UserMessage", "ToolCall", "ToolResult", "ToolCall", "ToolResult", "AgentMessage"]
    assert len(rec.ends) == 1 and rec.ends[0].report == run.report


def test_runner_run_with_the_steered_agent_raises_the_tripwire_and_the_report_is_written(tmp_path: Path) -> None:
    """Without ``run()``: the SDK raises its tripwire with the stop record, and the report was finished and written before."""
    steer = DynSteerAgents(ex.blueprint(), report_dir=tmp_path)
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as caught:
        asyncio.run(Runner.run(steer.steer(ex.agent("fatal")), ex.INSTRUCTION, hooks=steer.hooks))
    assert caught.value.output.output_info[STOP_KEY]["reason"] == "fatal_minefield" and ex.DELETED == []
    assert steer.report is not None and steer.report.outcome == "halted"
    assert json.loads((tmp_path / "dynsteer_report.json").read_text())["stop"]["reason"] == "fatal_minefield"


def test_steer_leaves_the_agent_and_its_tools_as_they_were() -> None:
    """The guardrails go on copies: the user's agent and tools run unguarded elsewhere."""
    agent = ex.agent("clean")
    steered = DynSteerAgents(ex.blueprint()).steer(agent)
    assert all(not t.tool_input_guardrails for t in agent.tools)
    assert all(len(t.tool_input_guardrails or []) == 1 for t in steered.tools)


def test_a_crashing_run_is_raised_after_its_report(tmp_path: Path) -> None:
    """A tool error the SDK does not turn into a message ends the run; ``run`` finishes the report as a crash first."""

    @function_tool(failure_error_function=None)
    def find_contact(name: str) -> str:
        """Look a contact up by name and return their email address."""
        raise ConnectionError("the address book's server is down")

    steer = DynSteerAgents(ex.blueprint(), report_dir=tmp_path)
    with pytest.raises(Exception, match="server is down"):
        steer.run_sync(_agent(ex.script("clean"), [find_contact, ex.send_email, ex.delete_contact]), ex.INSTRUCTION)
    assert steer.report is not None and steer.report.outcome == "crashed" and "server is down" in (steer.report.crash or "")
    assert json.loads((tmp_path / "dynsteer_report.json").read_text())["outcome"] == "crashed"


def test_each_run_gets_a_session_of_its_own() -> None:
    """One DynSteerAgents evaluates a second run afresh."""
    steer = DynSteerAgents(ex.blueprint())
    first = steer.run_sync(ex.agent("fatal"), ex.INSTRUCTION).report
    second = steer.run_sync(ex.agent("clean"), ex.INSTRUCTION).report
    assert first.outcome == "halted" and second.outcome == "completed"


def test_a_missing_blueprint_file_and_an_unknown_tool_are_one_sentence(tmp_path: Path) -> None:
    """A missing blueprint file, and an agent tool the blueprint does not know, are refused (at once when the tools are given)."""

    @function_tool
    def wire_money(to: str) -> str:
        """Wire money."""
        return "wired"

    with pytest.raises(BlueprintError, match="does not exist"):
        DynSteerAgents(tmp_path / "missing.json")
    with pytest.raises(UnknownToolError, match="does not know the agent's tool 'wire_money'"):
        DynSteerAgents(ex.blueprint(), tools=[*ex.tools(), wire_money])
    with pytest.raises(UnknownToolError, match="does not know the agent's tool 'wire_money'"):
        DynSteerAgents(ex.blueprint()).run_sync(_agent(ex.script("clean"), [*ex.tools(), wire_money]), ex.INSTRUCTION)
    assert ex.SENT == []


def test_run_refuses_hooks_of_its_own() -> None:
    """``run`` passes its own hooks; a caller's are refused in one sentence."""
    with pytest.raises(DynsteerError, match="give yours to the agent"):
        DynSteerAgents(ex.blueprint()).run_sync(ex.agent("clean"), ex.INSTRUCTION, hooks=object())


def test_without_a_blueprint_one_is_compiled_from_the_agents_tools_and_first_message() -> None:
    """No blueprint: the first model call compiles one from the tools, the tables they work on and the user's first message."""

    @function_tool
    def search_contacts(name: str) -> str:
        """Search for a contact by name. Returns the contact's phone number."""
        return "+1 555 0100"

    @function_tool
    def send_message_with_phone_number(phone_number: str, content: str) -> str:
        """Send a message to a recipient's phone number."""
        return "sent"

    steps = [[function_call("search_contacts", {"name": "Alice"}, call_id="s")],
             [function_call("send_message_with_phone_number", {"phone_number": "+1 555 0100", "content": "The meeting moved to 3pm."},
                            call_id="m")],
             [assistant_message("I texted Alice.")]]
    steer = DynSteerAgents(task="text_alice", databases={"CONTACT": {"person_id": "str", "name": "str", "phone_number": "str"}})
    run = steer.run_sync(_agent(steps, [search_contacts, send_message_with_phone_number]),
                         "Send a message to Alice saying the meeting moved to 3pm.")
    assert steer.session is not None
    assert [m.tool for m in steer.session.blueprint.milestones][:2] == ["search_contacts", "send_message_with_phone_number"]
    assert run.report.outcome == "completed"
