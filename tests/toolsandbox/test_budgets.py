"""Budgets on real ToolSandbox scenarios, with LiteLLM roles on the scripted OpenAI-compatible server on 127.0.0.1 (which
reports usage): what each role cost in the report, the summaries and the run page; --max-cost and
--max-tokens-per-rollout halting a rollout; --run-max-cost leaving scenarios unplayed; bad values refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_llm import PRICE_IN, PRICE_OUT, FakeLLMServer, Reply, call
from ts_support import SCRIPTS, A, B, C, D

from dynsteer_hook.cli import main
from dynsteer_hook.toolsandbox.roles.named import LITELLM

pytestmark = pytest.mark.toolsandbox

ANSWER = 100 * PRICE_IN + 50 * PRICE_OUT
"""Dollars of one scripted answer (100 prompt and 50 completion tokens) of the priced model."""
CLEAN_B = [
    Reply(content=None, tool_calls=(call("set_cellular_service_status", {"on": True}),)),
    Reply(content=None, tool_calls=(call("search_contacts", {"name": "Fredrik Thordendal"}),)),
    Reply(content=None, tool_calls=(call("send_message_with_phone_number",
                                         {"phone_number": "+12453344098", "content": "How's the new album coming along"}),)),
    Reply(content="Done."),
]


def _silent_user(tmp_path: Path, *names: str) -> Path:
    path = tmp_path / "users.json"
    path.write_text(json.dumps({n: {"agent": [], "user": []} for n in names}))
    return path


def _agent_run(tmp_path: Path, model: str, url: str, *names: str, extra: tuple[str, ...] = ()) -> int:
    return main(["run", "--agent", LITELLM, "--agent-model", model, "--agent-api-base", url, "--user", "Scripted",
                 "--script", str(_silent_user(tmp_path, *names)), "-s", *names, "-p", "1", "-o", str(tmp_path / "out"), *extra])


def _run_dir(tmp_path: Path) -> Path:
    return next((tmp_path / "out").iterdir())


def _report(run: Path, name: str) -> dict[str, Any]:
    return json.loads((run / "trajectories" / name / "dynsteer_report.json").read_text())


def test_max_cost_halts_the_rollout_before_the_next_model_call(scenarios: dict[str, Any], llm_server: FakeLLMServer, priced_model: str,
                                                              tmp_path: Path) -> None:
    """The second answer takes the agent past --max-cost: the rollout is halted there (stop reason budget, a halt, not a
    crash), the model is not asked a third time, and the report, the summaries and the run page say what it cost."""
    llm_server.script(*CLEAN_B)
    code = _agent_run(tmp_path, f"openai/{priced_model}", llm_server.url, B, extra=("--max-cost", str(1.5 * ANSWER)))
    assert code == 0
    assert len(llm_server.requests) == 2
    run = _run_dir(tmp_path)
    report = _report(run, B)
    assert report["outcome"] == "halted" and report["stop"]["reason"] == "budget"
    assert "over the budget" in report["stop"]["detail"]
    agent = report["cost"]["roles"]["agent"]
    assert agent == {"model": f"openai/{priced_model}", "calls": 2, "prompt_tokens": 200, "completion_tokens": 100,
                     "cost_usd": pytest.approx(2 * ANSWER)}
    assert report["cost"]["total"]["cost_usd"] == pytest.approx(2 * ANSWER)
    summary = json.loads((run / "dynsteer_summary.json").read_text())
    assert summary["halts_by_reason"] == {"budget": 1} and summary["crashed"] == 0
    assert summary["per_scenario"][0]["cost"]["roles"]["agent"]["calls"] == 2
    assert summary["cost"]["total"]["cost_usd"] == pytest.approx(2 * ANSWER) and summary["cost"]["unknown"] == 0
    assert "Cost:" in (run / "trajectories" / B / "dynsteer_report.md").read_text()
    assert f"${2 * ANSWER:.4f}" in (run / "index.html").read_text()


def test_within_budget_the_rollout_plays_to_its_end(scenarios: dict[str, Any], llm_server: FakeLLMServer, priced_model: str,
                                                    tmp_path: Path) -> None:
    """A budget the rollout never exceeds changes nothing: the clean path completes, every answer counted."""
    llm_server.script(*CLEAN_B)
    code = _agent_run(tmp_path, f"openai/{priced_model}", llm_server.url, B, extra=("--max-cost", "1", "--max-tokens-per-rollout", "600"))
    assert code == 0
    report = _report(_run_dir(tmp_path), B)
    assert report["outcome"] == "completed" and report["stop"] is None
    assert report["cost"]["total"]["prompt_tokens"] == 400 and report["cost"]["total"]["completion_tokens"] == 200


def test_token_budget_counts_the_user_simulator(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """The LiteLLM user's first answer (150 tokens) is past --max-tokens-per-rollout 100: halted before the agent plays on,
    the user's spending in the report and, for a model without a price, its dollars unknown (null, never 0)."""
    utterance = json.loads((SCRIPTS / "clean_solver.json").read_text())[C]["user"][0]
    llm_server.script(Reply(content=utterance), Reply(content=None, tool_calls=(call("end_conversation", {}),)))
    code = main(["run", "--agent", "Scripted", "--user", LITELLM, "--user-model", "openai/fake-user", "--user-api-base", llm_server.url,
                 "--script", str(SCRIPTS / "clean_solver.json"), "-s", C, "-p", "1", "-o", str(tmp_path / "out"),
                 "--max-tokens-per-rollout", "100"])
    assert code == 0
    assert len(llm_server.requests) == 1
    run = _run_dir(tmp_path)
    report = _report(run, C)
    assert report["stop"]["reason"] == "budget" and "150 tokens spent" in report["stop"]["detail"]
    assert list(report["cost"]["roles"]) == ["user"]  # the scripted agent calls no model
    assert report["cost"]["roles"]["user"] == {"model": "openai/fake-user", "calls": 1, "prompt_tokens": 100, "completion_tokens": 50,
                                               "cost_usd": None}
    page = (run / "index.html").read_text()
    data = json.loads(page.split('<script type="application/json" id="run-data">')[1].split("</script>")[0])
    assert data["rows"][0]["cost"] is None and data["rows"][0]["costunk"] is True  # the page shows "unknown", not $0
    assert 'id="cost-unknown"' in page


def test_a_provider_without_usage_leaves_the_tokens_unknown(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """Answers without a usage block: tokens and dollars are null in the report and the summary's totals, and a token
    budget, which counts only what is known, does not halt."""
    llm_server.script(Reply(content=None, tool_calls=(call("set_cellular_service_status", {"on": False}),), usage=False),
                      Reply(content="Cellular service is turned off", usage=False))
    code = _agent_run(tmp_path, "openai/fake-agent", llm_server.url, A, extra=("--max-tokens-per-rollout", "1"))
    assert code == 0
    run = _run_dir(tmp_path)
    report = _report(run, A)
    assert report["stop"] is None
    assert report["cost"]["roles"]["agent"] == {"model": "openai/fake-agent", "calls": 2, "prompt_tokens": None,
                                                "completion_tokens": None, "cost_usd": None}
    totals = json.loads((run / "dynsteer_summary.json").read_text())["cost"]["total"]
    assert totals == {"calls": 2, "prompt_tokens": None, "completion_tokens": None, "cost_usd": None}


def test_run_max_cost_leaves_the_scenarios_after_it_unplayed(scenarios: dict[str, Any], llm_server: FakeLLMServer, priced_model: str,
                                                             tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The first scenario spends the run's budget: the second never starts (one model call in all), one sentence on stderr
    says how many were left, the summary lists them, and the run is not a failure."""
    llm_server.script(*[Reply(content="I cannot help with that.")] * 2)
    code = _agent_run(tmp_path, f"openai/{priced_model}", llm_server.url, A, D, extra=("--run-max-cost", str(ANSWER / 2)))
    assert code == 0
    assert len(llm_server.requests) == 1
    err = capsys.readouterr().err
    assert "1 scenario(s) were left unplayed" in err and "--run-max-cost" in err
    run = _run_dir(tmp_path)
    summary = json.loads((run / "dynsteer_summary.json").read_text())
    block = summary["run_budget"]
    assert block["left"] == 1 and block["spent_usd"] == pytest.approx(ANSWER) and len(block["not_started"]) == 1
    assert summary["scenarios"] == 1 and summary["crashed"] == 0
    assert len(json.loads((run / "result_summary.json").read_text())["per_scenario_results"]) == 1
    assert not (run / "trajectories" / block["not_started"][0]).exists()


def test_a_resume_counts_what_its_kept_scenarios_spent_and_plays_those_the_budget_left(
        scenarios: dict[str, Any], llm_server: FakeLLMServer, priced_model: str, tmp_path: Path) -> None:
    """A run whose budget left a scenario unplayed, resumed under the same budget, plays nothing (its kept scenario spent
    it) and still lists the one left; resumed under a larger one, it plays the scenario left, and the summaries cover both."""
    llm_server.script(*[Reply(content="I cannot help with that.")] * 3)
    tight = ("--run-max-cost", str(ANSWER / 2))
    assert _agent_run(tmp_path, f"openai/{priced_model}", llm_server.url, A, D, extra=tight) == 0
    run = _run_dir(tmp_path)
    left = json.loads((run / "dynsteer_summary.json").read_text())["run_budget"]["not_started"]
    assert len(left) == 1 and len(llm_server.requests) == 1

    def resume(*budget: str) -> int:
        return main(["run", "--agent", LITELLM, "--agent-model", f"openai/{priced_model}", "--agent-api-base", llm_server.url,
                     "--user", "Scripted", "--script", str(tmp_path / "users.json"), "-s", A, D, "-p", "1",
                     "--resume", str(run), *budget])

    assert resume(*tight) == 0
    summary = json.loads((run / "dynsteer_summary.json").read_text())
    assert len(llm_server.requests) == 1 and summary["run_budget"]["not_started"] == left and summary["scenarios"] == 1
    assert resume("--run-max-cost", str(ANSWER * 10)) == 0
    summary = json.loads((run / "dynsteer_summary.json").read_text())
    assert len(llm_server.requests) == 2 and summary["run_budget"]["left"] == 0 and summary["scenarios"] == 2
    assert (run / "trajectories" / left[0] / "dynsteer_report.json").is_file()


def test_run_max_cost_holds_with_parallel_workers(scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """With -p 2 the first two scenarios play at once and spend the budget; the third is never handed to a worker. (The
    spawn workers do not see the test's own price, so the model is one litellm's shipped price map knows.)"""
    llm_server.script(*[Reply(content="I cannot help with that.")] * 3)
    code = main(["run", "--agent", LITELLM, "--agent-model", "openai/gpt-4o-mini", "--agent-api-base", llm_server.url,
                 "--user", "Scripted", "--script", str(_silent_user(tmp_path, A, B, D)), "-s", A, B, D, "-p", "2",
                 "-o", str(tmp_path / "out"), "--run-max-cost", "1e-9"])
    assert code == 0
    block = json.loads((_run_dir(tmp_path) / "dynsteer_summary.json").read_text())["run_budget"]
    assert len(llm_server.requests) == 2 and block["left"] == 1


@pytest.mark.parametrize(("flag", "value", "words"), [
    ("--max-cost", "-1", "--max-cost -1.0 must be a finite number of dollars"),
    ("--max-cost", "nan", "--max-cost nan must be a finite number of dollars"),
    ("--run-max-cost", "inf", "--run-max-cost inf must be a finite number of dollars"),
    ("--max-tokens-per-rollout", "-5", "--max-tokens-per-rollout -5 must be a whole number"),
])
def test_bad_budgets_are_one_sentence_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str,
                                                 words: str) -> None:
    """A negative, NaN or infinite budget stops the run before anything plays: one sentence, exit status 2."""
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", "clean_solver", "-s", A, "-p", "1",
                 "-o", str(tmp_path / "out"), flag, value])
    assert code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
