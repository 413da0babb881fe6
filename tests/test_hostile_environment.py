"""Hostile DYNSTEER_* environment variables: each is one sentence naming the variable, exit status 2, nothing written.

Table-driven: add a row to add a case. A row is the command, the variable, its value and a
piece of the one sentence expected on stderr. Every command fails before it reads an input
or opens an output, so no ToolSandbox scenario is loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_runs import chain_files

from dynsteer_hook.cli import main
from dynsteer_hook.model.task_view import PublicMessage, TaskView

ROWS = [
    ("evaluate", "DYNSTEER_JUDGE_TIMEOUT", "soon", "DYNSTEER_JUDGE_TIMEOUT='soon' is not a number"),
    ("evaluate", "DYNSTEER_JUDGE_TIMEOUT", "0", "DYNSTEER_JUDGE_TIMEOUT must be positive"),
    ("evaluate", "DYNSTEER_JUDGE_MAX_RETRIES", "-1", "DYNSTEER_JUDGE_MAX_RETRIES must be between 0 and 100"),
    ("evaluate", "DYNSTEER_JUDGE_TIMEOUT", "1e308", "DYNSTEER_JUDGE_TIMEOUT must be positive and at most 86400"),
    ("evaluate", "DYNSTEER_JUDGE_MAX_RETRIES", "2.5", "DYNSTEER_JUDGE_MAX_RETRIES='2.5' is not a number"),
    ("evaluate", "DYNSTEER_JUDGE_TEMPERATURE", "nan", "DYNSTEER_JUDGE_TEMPERATURE must be between 0 and 2"),
    ("evaluate", "DYNSTEER_JUDGE_JSON_MODE", "yaml", "DYNSTEER_JUDGE_JSON_MODE must be one of auto, object, schema, off"),
    ("evaluate", "DYNSTEER_JUDGE_MODEL", "nonsense-model-xyz", "names no provider"),
    ("evaluate", "DYNSTEER_JUDGE_SAMPLES", "0", "DYNSTEER_JUDGE_SAMPLES"),
    ("evaluate", "DYNSTEER_JUDGE_API_KEY_ENV", "DYNSTEER_TEST_SURELY_UNSET", "DYNSTEER_TEST_SURELY_UNSET"),
    ("compile", "DYNSTEER_COMPILE_MAX_TOKENS", "0", "DYNSTEER_COMPILE_MAX_TOKENS must be at least 1"),
    ("compile", "DYNSTEER_COMPILE_BACKOFF", "-3", "DYNSTEER_COMPILE_BACKOFF must be between 0 and 86400"),
    ("compile", "DYNSTEER_COMPILE_MODEL", "nonsense-model-xyz", "names no provider"),
    ("run", "DYNSTEER_AGENT_TIMEOUT", "never", "DYNSTEER_AGENT_TIMEOUT='never' is not a number"),
    ("run", "DYNSTEER_AGENT_MAX_TOKENS", "0", "DYNSTEER_AGENT_MAX_TOKENS must be at least 1"),
]


def _argv(command: str, variable: str, tmp_path: Path) -> list[str]:
    out = str(tmp_path / "out")
    if command == "evaluate":
        bp, trace = chain_files(tmp_path)
        judge = [] if variable == "DYNSTEER_JUDGE_MODEL" else ["--judge-model", "openai/x", "--judge-api-base", "http://127.0.0.1:9/v1"]
        return ["evaluate", "--blueprint", str(bp), "--events", str(trace), "--report", out, *judge]
    if command == "compile":
        view = tmp_path / "view.json"
        view.write_text(TaskView(task="t", messages=(PublicMessage(role="user", content="hi"),), tools=(), databases={}).model_dump_json())
        model = [] if variable == "DYNSTEER_COMPILE_MODEL" else ["--compile-model", "openai/x", "--compile-api-base", "http://127.0.0.1:9/v1"]
        return ["compile", "--view", str(view), "--out", out, *model]
    return ["run", "--agent", "LiteLLM", "--agent-model", "openai/x", "--agent-api-base", "http://127.0.0.1:9/v1", "--user", "Scripted",
            "--script", str(tmp_path / "no-script.json"), "-s", "cellular_off", "-o", out]


@pytest.mark.parametrize(("command", "variable", "value", "needle"), ROWS, ids=[f"{r[1]}={r[2]}" for r in ROWS])
def test_a_bad_environment_variable_is_one_sentence_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                        monkeypatch: pytest.MonkeyPatch, command: str,
                                                                        variable: str, value: str, needle: str) -> None:
    """The command exits 2 with one line naming the variable's fault, before any output exists."""
    monkeypatch.delenv("DYNSTEER_TEST_SURELY_UNSET", raising=False)
    monkeypatch.setenv(variable, value)
    code = main(_argv(command, variable, tmp_path))
    err = capsys.readouterr().err
    assert code == 2, err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
