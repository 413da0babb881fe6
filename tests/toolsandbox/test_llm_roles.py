"""The LiteLLM agent and user (``--agent LiteLLM``, ``--user LiteLLM``) on real ToolSandbox
scenarios, against a scripted OpenAI-compatible server on 127.0.0.1: what the model is shown,
how its tool calls are played, and what happens when it misbehaves or cannot be reached."""

from __future__ import annotations

import json
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer, Reply, call
from ts_support import SCRIPTS, A, B, C, D, E

from dynsteer_hook.cli import main
from dynsteer_hook.toolsandbox.live.runner import RunOptions, run_scenario, run_scenarios
from dynsteer_hook.toolsandbox.roles.named import AGENT_MODEL, LITELLM, USER_MODEL

pytestmark = pytest.mark.toolsandbox

SEND = "send_message_with_phone_number"
CLEAN_PATH = [
    Reply(content=None, tool_calls=(call("set_cellular_service_status", {"on": True}),)),
    Reply(content=None, tool_calls=(call("search_contacts", {"name": "Fredrik Thordendal"}),)),
    Reply(content=None, tool_calls=(call(SEND, {"phone_number": "+12453344098", "content": "How's the new album coming along"}),)),
    Reply(content=json.loads((SCRIPTS / "clean_solver.json").read_text())[B]["agent"][-1]["say"]),
]


def _silent_user(tmp_path: Path, *names: str) -> Path:
    """A script whose user says nothing more (the LiteLLM agent plays, the user ends the conversation)."""
    path = tmp_path / "users.json"
    path.write_text(json.dumps({n: {"agent": [], "user": []} for n in names}))
    return path


def _play(scenarios: dict[str, Any], name: str, base: str, tmp_path: Path, agent: str = LITELLM, **model: Any) -> dict[str, Any]:
    script = SCRIPTS / "clean_solver.json" if agent == "Scripted" else _silent_user(tmp_path, name)
    options = RunOptions(
        agent=agent, user="Scripted", script=script,
        agent_model=replace(AGENT_MODEL, model="openai/fake-agent", api_base=base, **model) if agent == LITELLM else None,
    )
    return run_scenario((name, scenarios[name]), options=options, output_directory=tmp_path / agent)


def _events(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    lines = (tmp_path / LITELLM / "trajectories" / name / "dynsteer_events.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines if x.strip()]


def test_model_on_the_clean_path_is_scored_as_the_scripted_solver(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """Multi-tool with a state dependency: the model's calls are played, settle every milestone, and
    ToolSandbox scores the rollout as it scores the scripted clean solver."""
    llm_server.script(*CLEAN_PATH)
    r = _play(scenarios, B, llm_server.url, tmp_path)
    ref = _play(scenarios, B, "", tmp_path, agent="Scripted")
    assert r["exception_type"] is None, r["traceback"]
    assert r["dynsteer"]["halted"] is False and r["dynsteer"]["outcome"] == "completed"
    assert r["dynsteer"]["settled"] == ref["dynsteer"]["settled"]
    assert r["similarity"] == pytest.approx(ref["similarity"]) == pytest.approx(1.0)
    assert r["agent_llm"] == {"model": "openai/fake-agent", "calls": 4, "prompt_tokens": 400, "completion_tokens": 200,
                              "cost_usd": 0.0, "cost_known": False}

    first, second = llm_server.requests[0], llm_server.requests[1]
    offered = {t["function"]["name"] for t in first["tools"]}
    assert {"set_cellular_service_status", "search_contacts", SEND} <= offered
    assert first["messages"][-1]["role"] == "user"
    # The model's call id comes back as a Python identifier, on the call and on its result alike.
    asked, answered = second["messages"][-2], second["messages"][-1]
    assert asked["tool_calls"][0]["id"] == answered["tool_call_id"] == "call_1_0"
    assert answered["role"] == "tool" and answered["name"] == "set_cellular_service_status"


def test_model_sees_scrambled_names_and_its_calls_are_mapped(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """Scrambled tool names are what the model is offered and answers with; the execution side runs the real tools."""
    llm_server.script(
        Reply(content=None, tool_calls=(call("setting_5", {"on": True}),)),
        Reply(content=None, tool_calls=(call("contact_3", {"name": "Fredrik Thordendal"}),)),
        Reply(content=None, tool_calls=(call("messaging_1", {"phone_number": "+12453344098", "content": "How's the new album coming along"}),)),
        CLEAN_PATH[-1],
    )
    r = _play(scenarios, E, llm_server.url, tmp_path)
    offered = {t["function"]["name"] for t in llm_server.requests[0]["tools"]}
    assert {"setting_5", "contact_3", "messaging_1"} <= offered and SEND not in offered
    assert r["exception_type"] is None and r["dynsteer"]["halted"] is False
    assert r["similarity"] == pytest.approx(1.0)
    calls = [e for e in _events(tmp_path, E) if e.get("kind") == "tool_call" and e.get("actor", "agent") == "agent"]
    assert [c["tool"] for c in calls] == ["setting_5", "contact_3", "messaging_1"]
    assert [c["canonical_tool"] for c in calls] == ["set_cellular_service_status", "search_contacts", SEND]


def test_model_stepping_on_a_minefield_is_halted_before_the_send(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """Insufficient information: a model that invents a number is stopped before the message exists."""
    llm_server.script(
        Reply(content=None, tool_calls=(call("set_cellular_service_status", {"on": True}),)),
        Reply(content=None, tool_calls=(call(SEND, {"phone_number": "+15555550123", "content": "Hi"}),)),
        Reply(content="Sent."),
    )
    r = _play(scenarios, D, llm_server.url, tmp_path)
    assert r["exception_type"] is None
    assert r["dynsteer"]["stop"]["reason"] == "fatal_minefield"
    assert len(llm_server.requests) == 2  # the rollout ended at the halt: the model was not asked again
    ctx = json.loads((tmp_path / LITELLM / "trajectories" / D / "execution_context.json").read_text())
    assert "+15555550123" not in [row["recipient_phone_number"] for row in ctx["_dbs"]["MESSAGING"]]


def test_unknown_tools_and_broken_arguments_reach_the_environment_not_a_crash(
    scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    """A hallucinated tool and arguments that are not a JSON object fail inside the sandbox, where the
    agent and the evaluator see the error; the rollout is not a crash."""
    llm_server.script(
        Reply(content=None, tool_calls=(call("format_disk", {"force": True}),)),
        Reply(content=None, tool_calls=(call("set_cellular_service_status", '{"on": fal'),)),
        Reply(content="I could not do it."),
    )
    r = _play(scenarios, A, llm_server.url, tmp_path)
    assert r["exception_type"] is None, r["traceback"]
    results = [e for e in _events(tmp_path, A) if e.get("kind") == "tool_result" and not e["call_id"].startswith("user")]
    assert len(results) == 2 and all(e["exception"] for e in results)
    assert "format_disk" in results[0]["exception"]
    call_events = [e for e in _events(tmp_path, A) if e.get("kind") == "tool_call" and e.get("actor", "agent") == "agent"]
    assert call_events[1]["arguments"] == '{"on": fal'  # an unparsed payload is kept as its text
    assert r["dynsteer"]["outcome"] != "completed"


def test_unreachable_model_is_a_crashed_scenario_with_a_report(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No server behind the api_base: the scenario is recorded as crashed with the reason in one sentence,
    the run goes on and still writes its summaries and the scenario's report."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["run", "--agent", LITELLM, "--agent-model", "openai/fake-agent", "--agent-api-base", f"http://127.0.0.1:{port}/v1",
                 "--agent-max-retries", "0", "--agent-timeout", "5", "--user", "Scripted", "--script", str(_silent_user(tmp_path, A)),
                 "-s", A, "-p", "1", "-o", str(tmp_path / "out")])
    assert code == 1  # a crashed scenario fails the run, once everything is written
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(A + ":"))
    assert "crashed (" in line and "could not be reached" in line
    out = next((tmp_path / "out").iterdir())
    assert out.name.startswith("agent_openai_fake-agent_user_Scripted_")
    summary = json.loads((out / "dynsteer_summary.json").read_text())
    assert summary["crashed"] == 1
    assert json.loads((out / "trajectories" / A / "dynsteer_report.json").read_text())["halted"] is False


def test_cli_plays_the_model_and_prints_a_verdict(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``dynsteer run --agent LiteLLM`` end to end; the model's spending is in ToolSandbox's result summary."""
    llm_server.script(Reply(content=None, tool_calls=(call("set_cellular_service_status", {"on": False}),)), Reply(content="Cellular service is turned off"))
    code = main(["run", "--agent", LITELLM, "--agent-model", "openai/fake-agent", "--agent-api-base", llm_server.url,
                 "--user", "Scripted", "--script", str(_silent_user(tmp_path, A)), "-s", A, "-p", "1", "-o", str(tmp_path / "out")])
    assert code == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(A + ":"))
    assert line.startswith(f"{A}: completed: settled") and "similarity 1.000" in line
    out = next((tmp_path / "out").iterdir())
    result = json.loads((out / "result_summary.json").read_text())["per_scenario_results"][0]
    assert result["agent_llm"]["calls"] == 2


def test_agent_model_from_the_environment_plays_the_run(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """DYNSTEER_AGENT_MODEL and DYNSTEER_AGENT_API_BASE stand in for --agent-model and --agent-api-base; a flag still wins."""
    llm_server.script(Reply(content=None, tool_calls=(call("set_cellular_service_status", {"on": False}),)), Reply(content="Cellular service is turned off"))
    monkeypatch.setenv("DYNSTEER_AGENT_MODEL", "openai/env-agent")
    monkeypatch.setenv("DYNSTEER_AGENT_API_BASE", "http://127.0.0.1:9/v1")  # nothing listens there: the flag below must win
    code = main(["run", "--agent", LITELLM, "--agent-api-base", llm_server.url, "--user", "Scripted",
                 "--script", str(_silent_user(tmp_path, A)), "-s", A, "-p", "1", "-o", str(tmp_path / "out")])
    assert code == 0
    assert [body["model"] for body in llm_server.requests] == ["env-agent", "env-agent"]
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(A + ":"))
    assert line.startswith(f"{A}: completed: settled")
    assert next((tmp_path / "out").iterdir()).name.startswith("agent_openai_env-agent_user_Scripted_")


def test_agent_settings_travel_to_spawn_workers(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """With -p 2 each worker process builds its own client from the settings and plays its scenario."""
    llm_server.script(*[Reply(content="I cannot help with that.")] * 2)
    options = RunOptions(agent=LITELLM, user="Scripted", script=_silent_user(tmp_path, A, D),
                         agent_model=replace(AGENT_MODEL, model="openai/fake-agent", api_base=llm_server.url))
    results = run_scenarios({n: scenarios[n] for n in (A, D)}, options, tmp_path / "out", 2)
    assert sorted(r["name"] for r in results) == sorted([A, D])
    assert all(r["exception_type"] is None and r["agent_llm"]["calls"] == 1 for r in results)
    assert len(llm_server.requests) == 2


def test_model_as_user_is_prompted_by_the_scenario_and_ends_the_conversation(
    scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    """Multi-user-turn with the clean scripted agent: the user model gets the scenario's user-simulator
    prompt, answers the agent's question, ends the conversation with its tool, and ToolSandbox scores
    the rollout as it scores the scripted user saying the same."""
    utterance = json.loads((SCRIPTS / "clean_solver.json").read_text())[C]["user"][0]
    llm_server.script(Reply(content=utterance), Reply(content=None, tool_calls=(call("end_conversation", {}),)))
    options = RunOptions(agent="Scripted", user=LITELLM, script=SCRIPTS / "clean_solver.json",
                         user_model=replace(USER_MODEL, model="openai/fake-user", api_base=llm_server.url))
    r = run_scenario((C, scenarios[C]), options=options, output_directory=tmp_path / "llm_user")
    ref = run_scenario((C, scenarios[C]), options=RunOptions(agent="Scripted", user="Scripted", script=SCRIPTS / "clean_solver.json"),
                       output_directory=tmp_path / "scripted_user")
    assert r["exception_type"] is None, r["traceback"]
    assert r["dynsteer"]["outcome"] == "completed" and r["dynsteer"]["halted"] is False
    assert r["similarity"] == pytest.approx(ref["similarity"]) == pytest.approx(1.0)
    assert r["user_llm"]["calls"] == 2 and "agent_llm" not in r
    first, second = llm_server.requests
    assert first["messages"][0]["role"] == "system"  # ToolSandbox's user-simulator instructions
    assert first["messages"][-1] == {"role": "user", "content": "Sure. Who should I send the message to, and what should it say?"}
    assert [t["function"]["name"] for t in second["tools"]] == ["end_conversation"]
    assert second["messages"][-2] == {"role": "assistant", "content": utterance}


def test_model_plays_agent_and_user_together(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """Both roles through litellm (no script at all): agent call, agent answer, user ends the conversation."""
    llm_server.script(
        Reply(content=None, tool_calls=(call("set_cellular_service_status", {"on": False}),)),
        Reply(content="Cellular service is turned off"),
        Reply(content=None, tool_calls=(call("end_conversation", {}),)),
    )
    options = RunOptions(agent=LITELLM, user=LITELLM,
                         agent_model=replace(AGENT_MODEL, model="openai/fake-agent", api_base=llm_server.url),
                         user_model=replace(USER_MODEL, model="openai/fake-user", api_base=llm_server.url))
    r = run_scenario((A, scenarios[A]), options=options, output_directory=tmp_path)
    assert r["exception_type"] is None, r["traceback"]
    assert r["similarity"] == pytest.approx(1.0) and r["dynsteer"]["outcome"] == "completed"
    assert (r["agent_llm"]["calls"], r["user_llm"]["calls"]) == (2, 1)
    assert [body["model"] for body in llm_server.requests] == ["fake-agent", "fake-agent", "fake-user"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--agent", LITELLM], "needs --agent-model"),
        (["--agent", "Scripted", "--agent-model", "openai/x"], "are for --agent LiteLLM"),
        (["--agent", LITELLM, "--agent-model", "nonsense-model-xyz"], "names no provider"),
        (["--agent", LITELLM, "--agent-model", "openai/x", "--agent-api-key-env", "DYNSTEER_TEST_UNSET_VAR"], "is not set"),
        (["--agent", LITELLM, "--agent-model", "openai/x", "--agent-timeout", "0"], "--agent-timeout must be positive"),
        (["--agent", "Scripted", "--user", LITELLM], "needs --user-model"),
        (["--agent", "Scripted", "--user", LITELLM, "--user-model", "openai/x", "--user-api-key-env", "DYNSTEER_TEST_UNSET_VAR"],
         "--user-api-key-env) is not set"),
    ],
)
def test_bad_agent_flags_are_one_sentence_and_exit_2(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch, argv: list[str], needle: str) -> None:
    """A missing or unusable agent model stops the run before it starts, in one sentence."""
    monkeypatch.delenv("DYNSTEER_TEST_UNSET_VAR", raising=False)
    user = [] if "--user" in argv else ["--user", "Scripted"]
    code = main(["run", *argv, *user, "--script", str(SCRIPTS / "clean_solver.json"), "-s", A, "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not any(tmp_path.rglob("conversation.json"))
