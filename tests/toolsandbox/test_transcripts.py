"""Recordings read as transcripts: a trajectory record's steps and ToolSandbox's conversation.json become the moves of
an agent and a user, parallel calls one batch with their recorded answers; anything else is one sentence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dynsteer_hook.toolsandbox.offline.transcripts import TranscriptError, find_transcripts, read_transcript


def step(i: int, actor: str, recipient: str, kind: str, content: Any = "", **extra: Any) -> dict[str, Any]:
    return {"step_id": f"s{i}", "actor": actor, "recipient": recipient, "event_type": kind, "content": content, **extra}


def call(i: int, name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return step(i, "agent", "environment", "tool_call", "", tool_call={"name": name, "arguments": args}, openai_tool_call_id=call_id,
                cost={"latency_ms": 1500})


def answer(i: int, content: str, call_id: str, exception: str | None = None) -> dict[str, Any]:
    return step(i, "environment", "agent", "tool_result", content, openai_tool_call_id=call_id,
                tool_result={"success": exception is None, "content": content, "exception": exception}, cost={"latency_ms": 40})


def record(steps: list[dict[str, Any]], **summary: Any) -> dict[str, Any]:
    return {"scenario_id": "cellular_off", "summary": {"score": 0.75, "started_at": "2026-08-05T04:48:20Z", **summary},
            "trajectory": {"steps": steps}}


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_a_record_becomes_moves_with_parallel_calls_in_one_batch(tmp_path: Path) -> None:
    steps = [call(16, "get_cellular_service_status", {}, "a"), call(17, "get_wifi_status", {}, "b"),
             answer(18, "True", "b"), answer(19, "False", "a"),
             call(20, "set_cellular_service_status", {"on": False}, "c"), answer(21, "None", "c"),
             step(22, "agent", "user", "message", "Done."), step(23, "user", "agent", "message", "Thanks, also wifi?"),
             step(24, "agent", "user", "message", "Wifi is on."),
             step(25, "user", "environment", "message", "x_response = end_conversation(**x_parameters)"),
             step(26, "environment", "user", "message", "None")]
    t = read_transcript(write(tmp_path, "r.json", record(steps)))
    assert [m.kind for m in t.moves] == ["calls", "calls", "agent_says", "user_says", "agent_says", "user_ends"]
    first = t.moves[0]
    assert [(c.name, c.result.content if c.result else None) for c in first.calls] == [
        ("get_cellular_service_status", "False"), ("get_wifi_status", "True")]  # answers paired by call id
    assert t.similarity == 0.75 and t.started_at is not None and t.started_at.isoformat() == "2026-08-05T04:48:20+00:00"
    assert t.rows == len(steps) and t.latencies[0] == pytest.approx(3.08)
    assert list(t.results()) == ["False", "True", "None"]


def test_a_toolsandbox_conversation_becomes_moves(tmp_path: Path) -> None:
    run = tmp_path / "agent_x_user_y_08_05_2026_04_48_20"
    (run / "trajectories" / "cellular_off").mkdir(parents=True)
    conversation = [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "Turn off cellular"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "set_cellular_service_status", "arguments": json.dumps({"on": False})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "None"},
        {"role": "assistant", "content": "Done."},
    ]
    (run / "trajectories" / "cellular_off" / "conversation.json").write_text(json.dumps(conversation))
    (run / "result_summary.json").write_text(json.dumps({"per_scenario_results": [{"name": "cellular_off", "similarity": 1.0}]}))
    [t] = list(find_transcripts([run]))
    assert not isinstance(t, TranscriptError)
    assert [m.kind for m in t.moves] == ["calls", "agent_says"] and t.moves[0].calls[0].arguments == {"on": False}
    assert t.similarity == 1.0 and not t.user_ends
    assert t.started_at is not None and t.started_at.year == 2026  # the folder's name: when ToolSandbox started the run


@pytest.mark.parametrize(("data", "words"), [
    ([], "is not a JSON object"),
    ({"trajectory": {"steps": []}}, "has no scenario_id"),
    ({"scenario_id": "x", "trajectory": {}}, "has no trajectory.steps list"),
    (record([step(1, "robot", "user", "message")]), "from 'robot' to 'user'"),
    (record([answer(1, "x", "zz")]), "tool result with no call before it"),
    (record([step(1, "user", "environment", "message", "rm -rf /")]), "other than end_conversation"),
    (record([step(1, "agent", "environment", "tool_call", "", tool_call={"arguments": {}})]), "without a tool name"),
    (record(["not a step"]), "not an object"),
])
def test_a_bad_record_is_one_sentence_naming_it(tmp_path: Path, data: Any, words: str) -> None:
    path = write(tmp_path, "bad.json", data)
    with pytest.raises(TranscriptError, match=r"bad\.json") as caught:
        read_transcript(path)
    assert words in str(caught.value)


def test_a_folder_of_records_skips_the_bad_ones_and_a_missing_source_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "a.json", record([step(1, "agent", "user", "message", "hi")]))
    (tmp_path / "b.json").write_text("{")
    found = list(find_transcripts([tmp_path]))
    assert [type(f).__name__ for f in found] == ["Transcript", "TranscriptError"]
    with pytest.raises(TranscriptError, match="does not exist"):
        list(find_transcripts([tmp_path / "nope.json"]))
    (tmp_path / "empty").mkdir()
    with pytest.raises(TranscriptError, match="holds no trajectory records"):
        list(find_transcripts([tmp_path / "empty"]))
