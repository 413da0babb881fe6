"""`dynsteer compile` through the command line: generator and LLM sources, the hash cache, faults and flag errors."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer, Reply
from llm_graphs import VIEW
from ts_support import A

from dynsteer_hook.cli import main
from dynsteer_hook.files.blueprints import load_blueprint
from dynsteer_hook.toolsandbox.scenario_view import public_view

pytestmark = pytest.mark.toolsandbox

MODEL = "openai/gpt-4o-mini"
OFF = json.dumps({"milestones": [{"id": "off", "tool": "set_cellular_service_status", "role": "turn_off",
                                  "args": [{"arg": "on", "op": "eq", "value": False}]}]})


def _llm(server: FakeLLMServer, *more: str) -> list[str]:
    return ["--model", MODEL, "--api-base", server.url, "--max-retries", "1", "--backoff", "0.01", "--timeout", "5", *more]


def _line(out: str, name: str) -> str:
    return next(x for x in out.splitlines() if x.startswith(name + ":"))


def test_generator_only_compiles_then_skips_then_forces(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --model the generator compiles alone; a second run skips by hash; --force recompiles."""
    assert main(["compile", "-s", A, "--out", str(tmp_path)]) == 0
    line = _line(capsys.readouterr().out, A)
    assert "compiled" in line and "candidates 5, valid 5, pruned 0; tokens -, cost -" in line
    bp = load_blueprint(tmp_path / f"{A}.json")
    assert bp.provenance is not None and bp.provenance.public_view_hash == public_view(A, scenarios[A]).digest()
    assert main(["compile", "-s", A, "--out", str(tmp_path)]) == 0
    assert "up to date" in _line(capsys.readouterr().out, A)
    assert main(["compile", "-s", A, "--out", str(tmp_path), "--force"]) == 0
    assert "compiled" in _line(capsys.readouterr().out, A)


def test_llm_candidates_print_pruned_reasons_tokens_and_cost(
    scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], llm_server: FakeLLMServer
) -> None:
    """Three LLM candidates, one malformed: the line shows the counts, the reason, tokens and cost; provenance has them."""
    llm_server.script(Reply(content=OFF), Reply(content="Sure, here you go"), Reply(status=429), Reply(content=OFF))
    code = main(["compile", "-s", A, "--out", str(tmp_path), "--no-generator", "-c", "3", "--min-valid", "2", *_llm(llm_server)])
    assert code == 0
    line = _line(capsys.readouterr().out, A)
    assert "candidates 3, valid 2, pruned 1 [" in line and "#1:hierarchical: json: no JSON object" in line
    assert "tokens 450, cost $0.000135," in line
    prov = load_blueprint(tmp_path / f"{A}.json").provenance
    assert prov is not None and prov.models == (MODEL,) and prov.tokens == 450
    assert prov.cost_usd == pytest.approx(300 * 0.15e-6 + 150 * 0.6e-6)
    assert len(llm_server.requests) == 4  # the 429 was retried


def test_llm_and_generator_pool_by_default(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], llm_server: FakeLLMServer) -> None:
    """--model without --no-generator: C LLM plus C generator candidates, merged into one blueprint."""
    llm_server.script(*[Reply(content=OFF.replace('"turn_off"', '"default"'))] * 2)
    assert main(["compile", "-s", A, "--out", str(tmp_path), "-c", "2", *_llm(llm_server)]) == 0
    assert "candidates 4, valid 4" in _line(capsys.readouterr().out, A)
    bp = load_blueprint(tmp_path / f"{A}.json")
    assert bp.provenance is not None and len(bp.provenance.generators) == 2 and MODEL in bp.provenance.models
    assert "set_cellular_service_status" in {m.tool for m in bp.milestones}


def test_pooled_candidates_that_share_no_milestone_write_nothing(
    scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], llm_server: FakeLLMServer
) -> None:
    """Two LLM and two generator candidates that agree on no operation: exit 2, no blueprint (it would ask nothing of the agent)."""
    llm_server.script(*[Reply(content=OFF)] * 2)  # role 'turn_off': a different operation from the generator's
    assert main(["compile", "-s", A, "--out", str(tmp_path), "-c", "2", *_llm(llm_server)]) == 2
    captured = capsys.readouterr()
    assert "no milestone reached the majority support of 3 among the 4 valid candidates" in _line(captured.out, A)
    assert not (tmp_path / f"{A}.json").exists()


def test_too_few_valid_candidates_exit_2_and_write_nothing(
    scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], llm_server: FakeLLMServer
) -> None:
    """All answers unusable: a FAILED line with reasons, one error sentence, exit 2, no blueprint."""
    llm_server.script(Reply(content=""), Reply(content="{"), Reply(content='{"milestones": [{"id": "x", "tool": "launch_rocket"}]}'))
    code = main(["compile", "-s", A, "--out", str(tmp_path), "--no-generator", "-c", "3", *_llm(llm_server)])
    captured = capsys.readouterr()
    assert code == 2
    line = _line(captured.out, A)
    assert "FAILED" in line and "valid 0" in line and "empty" in line and "json" in line
    err = captured.err.strip()
    assert err.startswith("dynsteer: error: 1 of 1 view could not be compiled") and "fewer than the minimum 2" in err
    assert "\n" not in err and "Traceback" not in captured.err
    assert not (tmp_path / f"{A}.json").exists()


def test_unreachable_provider_exits_2_with_one_sentence(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Connection refused through every retry: exit 2, 'could not be reached', no traceback, no file."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["compile", "-s", A, "--out", str(tmp_path), "--model", MODEL, "--api-base", f"http://127.0.0.1:{port}/v1",
                 "--max-retries", "1", "--backoff", "0.01"])
    err = capsys.readouterr().err
    assert code == 2 and "could not be reached after 2 attempts" in err and "Traceback" not in err
    assert not (tmp_path / f"{A}.json").exists()


def test_api_key_env_is_sent(scenarios: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llm_server: FakeLLMServer) -> None:
    """--api-key-env VAR sends that variable's value as the bearer key."""
    monkeypatch.setenv("MY_TEST_KEY", "sk-from-env")
    llm_server.script(Reply(content=OFF))
    assert main(["compile", "-s", A, "--out", str(tmp_path), "--no-generator", "-c", "1", "--api-key-env", "MY_TEST_KEY", *_llm(llm_server)]) == 0
    assert llm_server.headers[0]["authorization"] == "Bearer sk-from-env"


def test_view_file_compiles_without_toolsandbox_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--view FILE compiles a TaskView JSON file into <task>.json."""
    view_file = tmp_path / "view.json"
    view_file.write_text(VIEW.model_dump_json())
    assert main(["compile", "--view", str(view_file), "--out", str(tmp_path / "bp"), "-c", "2"]) == 0
    assert "message_alice: compiled" in capsys.readouterr().out
    assert load_blueprint(tmp_path / "bp" / "message_alice.json").provenance is not None


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--view", "VIEW", "--no-generator"], "--no-generator leaves no candidate source"),
        (["--view", "VIEW", "--generator-only", "--model", MODEL], "--generator-only uses no model"),
        (["--view", "VIEW", "--model", MODEL, "--api-key-env", "DYNSTEER_SURELY_UNSET"], "DYNSTEER_SURELY_UNSET"),
        (["--view", "VIEW", "--model", "no-provider-model"], "names no provider"),
        (["--view", "VIEW", "--candidates", "0"], "--candidates 0 must be at least 1"),
        (["--view", "VIEW", "--min-valid", "0"], "--min-valid 0 must be at least 1"),
        (["--view", "VIEW", "--model", MODEL, "--api-base", "http://127.0.0.1:9/v1", "--concurrency", "0"], "--concurrency 0 must be at least 1"),
        (["--view", "missing.json"], "does not exist"),
        (["--view", "BAD"], "is not a TaskView"),
    ],
)
def test_flag_errors_are_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    """Each mistake: exit 2 and one line on stderr naming the fix."""
    good, bad = tmp_path / "view.json", tmp_path / "bad.json"
    good.write_text(VIEW.model_dump_json())
    bad.write_text('{"task": "x"}')
    argv = [str(good) if a == "VIEW" else str(bad) if a == "BAD" else a for a in argv]
    assert main(["compile", *argv, "--out", str(tmp_path / "bp")]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert not (tmp_path / "bp").exists()
