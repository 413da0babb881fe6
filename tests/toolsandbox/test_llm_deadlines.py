"""The whole-answer deadline on the ToolSandbox paths: a LiteLLM agent and ``dynsteer compile`` against a
server that trickles its answers a few bytes at a time (no single read ever waits long)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLMServer, Reply
from ts_support import A

from dynsteer_hook.cli import main
from dynsteer_hook.files.blueprints import load_blueprint
from dynsteer_hook.toolsandbox.roles.named import LITELLM

pytestmark = pytest.mark.toolsandbox

TRICKLE = Reply(content="Cellular service is off.", trickle=0.1, trickle_bytes=2)  # about 20 s for the whole answer
OFF = json.dumps({"milestones": [{"id": "off", "tool": "set_cellular_service_status", "role": "turn_off",
                                  "args": [{"arg": "on", "op": "eq", "value": False}]}]})


def test_a_trickling_agent_model_is_a_crash_with_the_timeout_as_its_reason(
    scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--agent-timeout 2`` cuts the trickled answer: the scenario is crashed with the reason, and the run writes its summaries."""
    llm_server.script(TRICKLE)
    users = tmp_path / "users.json"
    users.write_text(json.dumps({A: {"agent": [], "user": []}}))
    code = main(["run", "--agent", LITELLM, "--agent-model", "openai/fake-agent", "--agent-api-base", llm_server.url,
                 "--agent-max-retries", "0", "--agent-timeout", "2", "--user", "Scripted", "--script", str(users),
                 "-s", A, "-p", "1", "-o", str(tmp_path / "out")])
    assert code == 1  # a crashed scenario fails the run
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(A + ":"))
    assert "crashed (" in line and "did not answer within 2 s" in line
    out = next((tmp_path / "out").iterdir())
    assert json.loads((out / "dynsteer_summary.json").read_text())["crashed"] == 1
    assert len(llm_server.requests) == 1


def test_a_trickled_compile_candidate_is_pruned_for_its_timeout(
    scenarios: dict[str, Any], llm_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compile --timeout 2``: the trickled candidate is pruned with the timeout as its reason; the others compile."""
    llm_server.script(Reply(content=OFF), Reply(content=OFF, trickle=0.1, trickle_bytes=2), Reply(content=OFF))
    code = main(["compile", "-s", A, "--out", str(tmp_path), "--no-generator", "-c", "3", "--min-valid", "2",
                 "--model", "openai/gpt-4o-mini", "--api-base", llm_server.url, "--max-retries", "0", "--timeout", "2"])
    assert code == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(A + ":"))
    assert "candidates 3, valid 2, pruned 1 [" in line and "timeout: " in line and "did not answer within 2 s" in line
    assert load_blueprint(tmp_path / f"{A}.json").milestones[0].tool == "set_cellular_service_status"
