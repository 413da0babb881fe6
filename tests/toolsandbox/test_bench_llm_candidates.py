"""scripts/bench_llm_candidates.py: answers recorded from an OpenAI-compatible server (here the fake one) are replayed
by prompt, and the blueprints compiled from them are scored three ways per split."""

from __future__ import annotations

import json
from pathlib import Path

import bench_llm_candidates as bench
import pytest
from fake_llm import FakeLLMServer, Reply
from ts_support import A

pytestmark = pytest.mark.toolsandbox

GOOD = json.dumps({"milestones": [{"id": "off", "tool": "set_cellular_service_status", "args": [{"arg": "on", "op": "eq", "value": False}]},
                                  {"id": "tell", "tool": "@agent_message"}],
                   "edges": [{"source": "off", "target": "tell"}]})


def test_recorded_answers_are_replayed_and_scored_three_ways(tmp_path: Path, llm_server: FakeLLMServer,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    llm_server.script(Reply(content=GOOD), Reply(content="not a graph"), Reply(content=GOOD))
    answers = tmp_path / "answers.json"
    assert bench.main(["--record", str(answers), "-s", A, "-c", "3", "--api-base", llm_server.url]) == 0
    recorded = json.loads(answers.read_text())
    assert recorded["scenarios"] == [A] and len(recorded["answers"]) == 3  # one prompt per focus code
    assert len(llm_server.requests) == 3

    out = tmp_path / "figures.json"
    assert bench.main(["--answers", str(answers), "--json", str(out)]) == 0
    assert len(llm_server.requests) == 3  # replay never asks the model again
    data = json.loads(out.read_text())
    assert data["unrecorded_prompts"] == 0
    ways = data["ways"]
    assert set(ways) == {"generator", "llm", "pooled"}
    assert ways["llm"]["llm_candidates_pruned"] == 1 and ways["llm"]["refused"] == 0
    for way in ways.values():  # cellular_off is held out
        assert set(way["metrics"]) == {"all", "held-out"}
        assert way["metrics"]["held-out"]["op_micro_f1"] == 1.0
    printed = capsys.readouterr().out
    assert "pooled" in printed and "held-out" in printed


@pytest.mark.slow  # the script builds ToolSandbox's scenarios
def test_an_unrecorded_prompt_is_refused_not_invented(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"model": "m", "candidates": 2, "scenarios": [A], "answers": {}}))
    out = tmp_path / "figures.json"
    assert bench.main(["--answers", str(answers), "--json", str(out), "--timeout", "5"]) == 0
    data = json.loads(out.read_text())
    assert data["unrecorded_prompts"] > 0
    assert data["ways"]["llm"]["refused"] == 1  # no answer, no graph: the LLM-only compile is refused


@pytest.mark.parametrize(("argv", "words"), [
    (["--answers", "nowhere.json"], "is not a file"),
    (["--record", "x.json", "-c", "0"], "must be at least 1"),
    (["--record", "x.json", "-s", "no_such_scenario"], "unknown scenario name(s)"),
])
def test_bad_arguments_are_one_sentence(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1
