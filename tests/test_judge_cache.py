"""The judge answer cache: a re-run with the same folder asks no model and reaches the same verdicts; the key
holds everything that changes an answer; damaged entries are ignored with a note; concurrent writers leave
whole files only. Judges talk to the fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from fake_llm import FakeLLMServer, Reply
from judge_runs import chain_files, standard_reply

from dynsteer_hook.cli import main
from dynsteer_hook.judges.base import JudgeRequest, StageContext, StageGoal
from dynsteer_hook.judges.llm_judges import ExpertJudge, StandardJudge
from dynsteer_hook.llm.cache import CachedJudgeClient
from dynsteer_hook.llm.client import LLMClient
from dynsteer_hook.llm.judges import JUDGE_MODEL, JudgeSettings

DIMS = ("correctness", "efficiency", "safety", "tool_compliance")


def _request(goal_text: str = "call op_a") -> JudgeRequest:
    context = StageContext(task="send a message", anchor="START", settled=(), frontier=("a",), minefields=(), tool_schemas={})
    goal = StageGoal(milestone="a", tool="op_a", role="agent", description=goal_text, conditions=())
    return JudgeRequest(goal=goal, dimensions=DIMS, steps=(), context=context, tier=2, settling_t=1)


def _client(server: FakeLLMServer, **options: object) -> LLMClient:
    return LLMClient("openai/local-judge", api_base=server.url, max_retries=0, timeout=5, **options)  # type: ignore[arg-type]


def _specialist(score: float) -> Reply:
    return Reply(content=json.dumps({"score": score, "confidence": 0.8, "forensic_trace": "t=1", "rationale": "t=1", "cited_steps": [1]}))


def test_a_rerun_reads_every_answer_from_the_cache_and_asks_no_model(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """Two Tier 2 samples of one prompt are two entries (sample index in the key); the second run makes no request."""
    llm_server.script(standard_reply(0.2), standard_reply(0.8))
    first = CachedJudgeClient(_client(llm_server), tmp_path / "cache")
    verdict = StandardJudge(first, samples=2)(_request())
    assert len(llm_server.requests) == 2 and first.stats.misses == 2 and first.stats.hits == 0
    assert verdict.scores["safety"].score == pytest.approx(0.5)  # two different samples were kept apart
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2

    second = CachedJudgeClient(_client(llm_server), tmp_path / "cache")
    again = StandardJudge(second, samples=2)(_request())
    assert len(llm_server.requests) == 2, "the re-run asked the model"
    assert second.stats.hits == 2 and second.stats.misses == 0
    assert again.scores == verdict.scores and again.tokens == verdict.tokens and again.calls == verdict.calls


def test_the_key_changes_with_the_prompt_the_temperature_the_limit_and_the_model(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """Every setting that changes the answer makes a new entry; the same call again is a hit."""
    llm_server.script(*[standard_reply(0.9)] * 6)
    folder = tmp_path / "cache"
    calls = [
        (CachedJudgeClient(_client(llm_server), folder), _request(), 0.7, 800),
        (CachedJudgeClient(_client(llm_server), folder), _request("call op_a twice"), 0.7, 800),
        (CachedJudgeClient(_client(llm_server), folder), _request(), 0.0, 800),
        (CachedJudgeClient(_client(llm_server), folder), _request(), 0.7, 400),
        (CachedJudgeClient(LLMClient("openai/other-judge", api_base=llm_server.url, max_retries=0, timeout=5), folder), _request(), 0.7, 800),
    ]
    for client, request, temperature, limit in calls:
        StandardJudge(client, samples=1, temperature=temperature, max_tokens=limit)(request)
        assert client.stats.misses == 1, (request.goal.description, temperature, limit, client.model)
    assert len(llm_server.requests) == 5
    repeat = CachedJudgeClient(_client(llm_server), folder)
    StandardJudge(repeat, samples=1, temperature=0.7, max_tokens=800)(_request())
    assert repeat.stats.hits == 1 and len(llm_server.requests) == 5


@pytest.mark.parametrize("damage", [
    b"",
    b'{"key": "',
    b"\xff\xfe not utf-8",
    b"[1, 2, 3]",
    b'{"key": "KEY", "text": 42, "finish_reason": "stop", "usage": {}}',
    b'{"key": "another", "text": "{}", "finish_reason": "stop", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 0, "cost_known": true}}',
    b'{"key": "KEY", "text": "{}", "finish_reason": "stop", "usage": {"prompt_tokens": -5, "completion_tokens": 1, "cost_usd": 0, "cost_known": true}}',
    b'{"key": "KEY", "text": "{}", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 0, "cost_known": true}}',
    b'{"key": "KEY", "text": "{}", "finish_reason": "stop", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 1e400, "cost_known": true}}',
])
def test_a_damaged_entry_is_ignored_with_a_note_and_replaced(llm_server: FakeLLMServer, tmp_path: Path, damage: bytes) -> None:
    """An entry that is not a whole answer for its own key is counted as corrupt, the model is asked, the file rewritten whole."""
    llm_server.script(standard_reply(0.6), standard_reply(0.6))
    folder = tmp_path / "cache"
    StandardJudge(CachedJudgeClient(_client(llm_server), folder), samples=1)(_request())
    (path,) = folder.rglob("*.json")
    path.write_bytes(damage.replace(b"KEY", path.stem.encode()))
    client = CachedJudgeClient(_client(llm_server), folder)
    verdict = StandardJudge(client, samples=1)(_request())
    assert client.stats.corrupt == 1 and client.stats.misses == 1 and client.stats.hits == 0
    assert str(path) in client.stats.notes[0] and len(llm_server.requests) == 2
    assert verdict.degraded is None and verdict.scores["safety"].score == pytest.approx(0.6)
    assert json.loads(path.read_text())["key"] == path.stem


def test_a_stored_answer_is_data_validated_like_a_fresh_one(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """A well-formed entry whose text is code, not a judgement, is an unusable answer: the judge is degraded, nothing runs."""
    llm_server.script(standard_reply(0.6))
    folder = tmp_path / "cache"
    StandardJudge(CachedJudgeClient(_client(llm_server), folder), samples=1)(_request())
    (path,) = folder.rglob("*.json")
    data = json.loads(path.read_text())
    marker = tmp_path / "ran"
    data["text"] = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
    path.write_text(json.dumps(data))
    client = CachedJudgeClient(_client(llm_server), folder)
    verdict = StandardJudge(client, samples=1)(_request())
    assert client.stats.hits == 1 and len(llm_server.requests) == 1
    assert verdict.scores == {} and verdict.degraded and "unusable" in verdict.degraded
    assert not marker.exists()


def test_concurrent_writers_leave_whole_files_only(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """Eight clients on one folder judging the same stages at once (Tier 3 dimensions in threads too): every file
    is a whole entry for its key, no temporary file is left, and a later run is served entirely from the cache."""
    llm_server.script(*[_specialist(0.7)] * 64)
    folder = tmp_path / "cache"
    verdicts = []

    def judge() -> None:
        verdicts.append(ExpertJudge(CachedJudgeClient(_client(llm_server), folder), passes=1)(_request()))

    threads = [threading.Thread(target=judge) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    files = list(folder.rglob("*"))
    entries = [f for f in files if f.is_file()]
    assert len(entries) == len(DIMS) and not [f for f in entries if f.name.endswith(".tmp")]
    assert all(json.loads(f.read_text())["key"] == f.stem for f in entries)
    assert len(verdicts) == 8 and all(v.degraded is None for v in verdicts)
    asked = len(llm_server.requests)
    later = CachedJudgeClient(_client(llm_server), folder)
    ExpertJudge(later, passes=1)(_request())
    assert later.stats.hits == len(DIMS) and len(llm_server.requests) == asked


def test_an_unwritable_cache_folder_still_judges(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """A cache folder under a file cannot hold answers: the answer is used, the miss noted as not stored."""
    llm_server.script(standard_reply(0.6))
    (tmp_path / "file").write_text("x")
    client = CachedJudgeClient(_client(llm_server), tmp_path / "file" / "cache")
    verdict = StandardJudge(client, samples=1)(_request())
    assert verdict.degraded is None and client.stats.unwritable == 1


def _argv(bp: Path, trace: Path, out: Path, server: FakeLLMServer) -> list[str]:
    return ["evaluate", "--blueprint", str(bp), "--events", str(trace), "--report", str(out),
            "--judge-model", "openai/local-judge", "--judge-api-base", server.url, "--judge-max-retries", "0",
            "--judge-samples", "2", "--judge-passes", "1", "--judge-timeout", "5"]


@pytest.mark.usefixtures("core_cli")
@pytest.mark.parametrize("via", ["flag", "env"])
def test_evaluate_twice_with_a_cache_gives_the_same_report_and_no_second_call(
    llm_server: FakeLLMServer, tmp_path: Path, via: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """`dynsteer evaluate --judge-cache DIR` (or DYNSTEER_JUDGE_CACHE): the second run's stages equal the first's with zero requests."""
    llm_server.script(*[standard_reply(0.8), standard_reply(0.4), _specialist(0.5)] * 10)
    bp, trace = chain_files(tmp_path)
    cache = tmp_path / "cache"
    extra = ["--judge-cache", str(cache)] if via == "flag" else []
    if via == "env":
        monkeypatch.setenv("DYNSTEER_JUDGE_CACHE", str(cache))
    assert main([*_argv(bp, trace, tmp_path / "one", llm_server), *extra]) == 0
    asked = len(llm_server.requests)
    assert asked > 0
    assert main([*_argv(bp, trace, tmp_path / "two", llm_server), *extra]) == 0
    assert len(llm_server.requests) == asked
    out = capsys.readouterr().out
    assert f"0 answers reused, {asked} asked and stored" in out and f"{asked} answers reused, 0 asked" in out
    one, two = (json.loads((tmp_path / d / "dynsteer_report.json").read_text()) for d in ("one", "two"))
    assert one["stages"] == two["stages"] and one["judge_usage"] == two["judge_usage"] and one["score"] == two["score"]


@pytest.mark.usefixtures("core_cli")
def test_a_cache_that_is_a_file_is_one_sentence(llm_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bp, trace = chain_files(tmp_path)
    (tmp_path / "c").write_text("x")
    code = main([*_argv(bp, trace, tmp_path / "o", llm_server), "--judge-cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and "--judge-cache" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_judge_settings_carry_the_cache_to_both_tiers(tmp_path: Path) -> None:
    """The settings (picklable, sent to workers) build both LLM tiers on one cached client."""
    from dataclasses import replace

    settings = JudgeSettings(model=replace(JUDGE_MODEL, model="openai/x", api_base="http://127.0.0.1:9/v1"), cache=str(tmp_path))
    judges = settings.build()
    assert isinstance(judges[2].client, CachedJudgeClient) and judges[2].client is judges[3].client  # type: ignore[attr-defined]
