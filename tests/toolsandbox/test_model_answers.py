"""What local models actually answer, played by the LiteLLM agent on a real scenario against a local
server: the tool_choice that makes llama.cpp call tools is sent, and every malformed shape of a tool
call (no name, arguments that are not a JSON object, HTML-escaped quotes) reaches the sandbox and the
evaluator as a malformed call; a context overflow ends the rollout as a crash with its reason."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer, Reply, call
from ts_support import A

from dynsteer_hook.cli import main
from dynsteer_hook.toolsandbox.live.runner import RunOptions, run_scenario
from dynsteer_hook.toolsandbox.roles.named import AGENT_MODEL, LITELLM

pytestmark = pytest.mark.toolsandbox

SET = "set_cellular_service_status"


def _play(scenarios: dict[str, Any], server: FakeLLMServer, tmp_path: Path, **model: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    script = tmp_path / "users.json"
    script.write_text(json.dumps({A: {"agent": [], "user": []}}))
    settings = replace(AGENT_MODEL, model="openai/fake-agent", api_base=server.url, max_retries=0, **model)
    options = RunOptions(agent=LITELLM, user="Scripted", script=script, agent_model=settings)
    r = run_scenario((A, scenarios[A]), options=options, output_directory=tmp_path / "out")
    lines = (tmp_path / "out" / "trajectories" / A / "dynsteer_events.jsonl").read_text().splitlines()
    return r, [json.loads(x) for x in lines if x.strip()]


@pytest.mark.parametrize(("choice", "sent"), [("auto", "auto"), ("none", "none"), ("required", "required"), ("omit", None)])
def test_tool_choice_is_sent_with_the_tools(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path,
                                            choice: str, sent: str | None) -> None:
    """The role's tool_choice goes with every request that offers tools (auto by default); omit sends nothing."""
    llm_server.script(Reply(content=None, tool_calls=(call(SET, {"on": False}),)), Reply(content="Done."))
    _play(scenarios, llm_server, tmp_path, tool_choice=choice)
    first = llm_server.requests[0]
    assert first["tools"] and first.get("tool_choice") == sent


def test_tool_choice_defaults_to_auto_on_the_command_line(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """`dynsteer run --agent LiteLLM` sends tool_choice auto unless told otherwise; --agent-tool-choice omit sends none."""
    script = tmp_path / "users.json"
    script.write_text(json.dumps({A: {"agent": [], "user": []}}))
    for flag, expected in ((), "auto"), (("--agent-tool-choice", "omit"), None):
        llm_server.requests.clear()
        llm_server.script(Reply(content=None, tool_calls=(call(SET, {"on": False}),)), Reply(content="Done."))
        code = main(["run", "--agent", LITELLM, "--agent-model", "openai/fake-agent", "--agent-api-base", llm_server.url, *flag,
                     "--user", "Scripted", "--script", str(script), "-s", A, "-p", "1", "-o", str(tmp_path / f"out{len(flag)}")])
        assert code == 0 and llm_server.requests[0].get("tool_choice") == expected


@dataclass(frozen=True)
class Shape:
    label: str
    name: str
    arguments: str
    error: str  # what the agent is told


SHAPES = [
    Shape("a call without a name", "", '{"on": false}', "unknown tool ''"),
    Shape("arguments that are not JSON", SET, '{"on": fal', "not valid JSON"),
    Shape("arguments that are a JSON string", SET, json.dumps('{"on": false}'), "JSON string holding an object"),
    Shape("arguments that are a list", SET, "[false]", "must be a JSON object"),
    Shape("arguments HTML-escaped", SET, "{&quot;on&quot;: false}", "HTML-escaped"),
    Shape("a value with an HTML-escaped quote", SET, '{"on": false, "note": "it&#39;s off"}', "HTML-escaped"),
    Shape("arguments cut off at the token limit", SET, '{"on": fa', "not valid JSON"),
]


@pytest.mark.parametrize("label", [s.label for s in SHAPES])
def test_malformed_model_calls_reach_the_sandbox_and_the_evaluator(scenarios: dict[str, Any], llm_server: FakeLLMServer,
                                                                   tmp_path: Path, label: str) -> None:
    """The call is played (the agent sees a tool error naming the problem), the evaluator records a refused,
    malformed call, and nothing is changed in the world."""
    shape = next(s for s in SHAPES if s.label == label)
    llm_server.script(Reply(content=None, tool_calls=((shape.name, shape.arguments),)), Reply(content="I could not do it."))
    r, events = _play(scenarios, llm_server, tmp_path)
    assert r["exception_type"] is None, r["traceback"]
    agent_calls = [e for e in events if e.get("kind") == "tool_call" and e.get("actor", "agent") == "agent"]
    assert len(agent_calls) == 1 and agent_calls[0]["rejected"]
    result = next(e for e in events if e.get("kind") == "tool_result" and e["call_id"] == agent_calls[0]["call_id"])
    assert shape.error in result["exception"] and not result.get("state_changes")
    # The model's next request shows it the error it caused.
    tool_message = llm_server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and shape.error in tool_message["content"]
    report = json.loads((tmp_path / "out" / "trajectories" / A / "dynsteer_report.json").read_text())
    assert report["steps"][0]["structural"] == 1


def test_a_context_overflow_is_a_crash_with_its_reason(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """The server refusing a prompt longer than its context ends the rollout as a crash that says so, never a hang."""
    llm_server.script(Reply(content=None, status=400,
                            error_message="This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens."))
    r, _ = _play(scenarios, llm_server, tmp_path)
    assert r["exception_type"] is not None and "context window" in (r["traceback"] or "")
    report = json.loads((tmp_path / "out" / "trajectories" / A / "dynsteer_report.json").read_text())
    assert report["outcome"] == "crashed" and "context window" in report["crash"]
