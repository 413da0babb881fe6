"""`dynsteer evaluate` with LLM judges behind a local OpenAI-compatible server (127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_llm import FakeLLMServer, Reply
from judge_runs import chain_files as _files
from judge_runs import standard_reply as _standard

from dynsteer_hook.cli import main

pytestmark = pytest.mark.usefixtures("core_cli")


def _argv(bp: Path, trace: Path, out: Path, server: FakeLLMServer) -> list[str]:
    return ["evaluate", "--blueprint", str(bp), "--events", str(trace), "--report", str(out),
            "--judge-model", "openai/local-judge", "--judge-api-base", server.url, "--judge-max-retries", "0",
            "--judge-samples", "1", "--judge-passes", "1", "--judge-timeout", "5"]


def test_judge_model_enables_the_llm_tiers_over_http(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """With --judge-model the ladder reaches tier 2 over HTTP; tokens are counted in the report."""
    llm_server.script(*[_standard(0.8)] * 10)
    bp, trace = _files(tmp_path)
    assert main(_argv(bp, trace, tmp_path / "out", llm_server)) == 0
    report = json.loads((tmp_path / "out" / "dynsteer_report.json").read_text())
    assert report["config"]["max_tier"] == 3
    b = next(s for s in report["stages"] if s["milestone"] == "b")
    assert b["tiers"]["efficiency"] == {"requested": 2, "used": 2}
    assert report["judge_usage"]["calls_by_tier"]["2"] >= 1 and report["judge_usage"]["tokens"] >= 150
    assert llm_server.requests and "STAGE_EVIDENCE" in llm_server.requests[0]["messages"][1]["content"]


def test_server_errors_degrade_the_judge_and_the_run_still_finishes(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """5xx answers through every retry fall back to tier 1 with the reason recorded; exit 0."""
    llm_server.script(*[Reply(content=None, status=503)] * 10)
    bp, trace = _files(tmp_path)
    assert main(_argv(bp, trace, tmp_path / "out", llm_server)) == 0
    report = json.loads((tmp_path / "out" / "dynsteer_report.json").read_text())
    b = next(s for s in report["stages"] if s["milestone"] == "b")
    assert b["tiers"]["efficiency"] == {"requested": 2, "used": 1}
    assert b["degraded"] and "server" in " ".join(b["degraded"]).lower()
    assert report["outcome"] == "completed"


def test_max_tier_above_one_without_a_judge_model_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Asking for LLM tiers without a model is one sentence and exit 2."""
    bp, trace = _files(tmp_path)
    code = main(["evaluate", "--blueprint", str(bp), "--events", str(trace), "--report", str(tmp_path / "o"), "--max-tier", "3"])
    err = capsys.readouterr().err
    assert code == 2 and "--judge-model" in err and len(err.strip().splitlines()) == 1


def test_unusable_judge_model_string_is_refused_before_evaluating(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A model string litellm cannot place is a usage error, reported before any event is read."""
    bp, trace = _files(tmp_path)
    code = main(["evaluate", "--blueprint", str(bp), "--events", str(trace), "--report", str(tmp_path / "o"), "--judge-model", "nonsense-model-xyz"])
    err = capsys.readouterr().err
    assert code == 2 and "provider" in err and "Traceback" not in err
    assert not (tmp_path / "o" / "dynsteer_report.json").exists()
