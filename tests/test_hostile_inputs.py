"""Hostile inputs, second round: text no encoder accepts, numbers Python refuses to parse, outputs that
overlap inputs, names used as paths, lists that grow with the run, and refused attempts spelled to
slip past minefield screening. Each case failed before its fix."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from builders import blueprint, call, result
from fake_llm import FakeLLMServer
from hypothesis import example, given, settings
from hypothesis import strategies as st
from judge_runs import standard_reply
from test_cli_evaluate import one_sentence_error
from test_judge_cache import _client, _request

from dynsteer_hook.cli import main
from dynsteer_hook.files.blueprints import load_blueprint, save_blueprint
from dynsteer_hook.files.names import MAX_NAME, safe_name
from dynsteer_hook.files.outputs import JsonlSink, check_apart
from dynsteer_hook.judges.llm_judges import StandardJudge
from dynsteer_hook.judges.steps import CallFacts, Step
from dynsteer_hook.llm.cache import CachedJudgeClient
from dynsteer_hook.model.blueprint import Minefield
from dynsteer_hook.model.errors import BlueprintError, OutputError
from dynsteer_hook.model.events import ToolCall, event_to_record
from dynsteer_hook.model.json_text import JsonTextError, loads, value_surrogate
from dynsteer_hook.model.predicates import ArgPredicate
from dynsteer_hook.model.records import MAX_LISTED
from dynsteer_hook.model.spelling import spelled_in
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.runtime.reporting import pending_fields, step_record

BIG = "9" * 5000
SURROGATE = '"\\ud800"'  # JSON text spelling a lone UTF-16 surrogate

# ---- one JSON parser for every input ------------------------------------------------------------------


@pytest.mark.parametrize(("text", "words"), [
    ('{"a": ' + BIG + "}", "integer of more than 4300 digits"),
    ('{"a": ' + SURROGATE + "}", "lone UTF-16 surrogate"),
    ('{"' + "\\udfff" + '": 1}', "lone UTF-16 surrogate"),
    ("[" * 200 + "]" * 200, "deeper than 100 levels"),
    ('{"a": NaN}', "no JSON number"),
    ('{"a": ', "is not valid JSON"),
])
def test_every_reason_json_cannot_be_used_is_one_error(text: str, words: str) -> None:
    """Digit limits, surrogates, depth and non-finite numbers are one JsonTextError, never a bare ValueError."""
    with pytest.raises(JsonTextError, match=words):
        loads(text)


# Strings mixing plain text, escapes' look-alikes and lone surrogates; values nest them as JSON does.
_TEXTS = st.text(alphabet=st.sampled_from(["a", "\\", "u", "d", "8", "0", "\ud800", "\udfff", "\U0001f600", '"']), max_size=8)
_VALUES = st.recursive(st.none() | st.integers() | _TEXTS,
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXTS, inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, ascii_only=st.booleans())
@example(value=["\ud800\udfff"], ascii_only=True).via("a surrogate pair, escaped: one character once parsed")
@example(value={"k\udfff": 1}, ascii_only=False).via("a raw lone surrogate in a key")
def test_a_lone_surrogate_is_refused_however_the_text_spells_it(value: Any, ascii_only: bool) -> None:
    """Escaped (\\ud800) or raw in the text, at any depth, in a key or a value: refused exactly when the parsed value holds one.

    (An escaped high and low surrogate side by side parse as one character, so the parsed value is the oracle.)
    """
    text = json.dumps(value, ensure_ascii=ascii_only)
    parsed = json.loads(text)
    if value_surrogate(parsed):
        with pytest.raises(JsonTextError, match="lone UTF-16 surrogate"):
            loads(text)
    else:
        assert loads(text) == parsed


@pytest.mark.parametrize("value", [BIG, SURROGATE])
def test_a_blueprint_holding_unusable_json_fails_validate_with_one_sentence(tmp_path: Path, value: str,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """validate refuses what evaluate and explain could not use, with one sentence and exit 2 (not 0, then a traceback)."""
    path = tmp_path / "bp.json"
    save_blueprint(blueprint(["a", "b"]), path)
    text = json.dumps(json.loads(path.read_text()))
    assert '"task": "t"' in text
    path.write_text(text.replace('"task": "t"', '"task": ' + value))
    with pytest.raises(BlueprintError, match=rf"^blueprint file {path} "):
        load_blueprint(path)
    for command in (["validate", str(path)], ["explain", str(path)]):
        assert main(command) != 0, command
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err and f"blueprint file {path}" in captured.out + captured.err


@pytest.mark.parametrize(("value", "words"), [(BIG, "4300 digits"), (SURROGATE, "surrogate")])
def test_an_event_file_holding_unusable_json_is_one_sentence_and_exit_2(tmp_path: Path, value: str, words: str,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`dynsteer evaluate` on an event line with a 5000-digit integer or a lone surrogate: the line named, exit 2."""
    bp = tmp_path / "bp.json"
    save_blueprint(blueprint(["a"]), bp)
    events = tmp_path / "trace.jsonl"
    good = json.dumps(event_to_record(call("c1", "op_a", {"x": 1})))
    events.write_text(good + "\n" + '{"kind": "agent_message", "content": ' + value + "}\n")
    assert main(["evaluate", "--blueprint", str(bp), "--events", str(events), "--report", str(tmp_path / "out")]) == 2
    msg = one_sentence_error(capsys.readouterr().err)
    assert f"event file {events} line 2" in msg and words in msg


@pytest.mark.parametrize("damage", [b'{"key": "KEY", "text": "x", "usage": ' + BIG.encode() + b"}",
                                    b'{"key": "KEY", "text": ' + SURROGATE.encode() + b', "finish_reason": null, "usage": '
                                    b'{"prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 0, "cost_known": true}}'])
def test_a_cache_entry_python_refuses_is_counted_corrupt_and_rewritten(llm_server: FakeLLMServer, tmp_path: Path, damage: bytes) -> None:
    """A judge-cache entry with a 5000-digit number or a lone surrogate is corrupt: counted, asked again, rewritten."""
    llm_server.script(standard_reply(0.6), standard_reply(0.6))
    folder = tmp_path / "cache"
    StandardJudge(CachedJudgeClient(_client(llm_server), folder), samples=1)(_request())
    (path,) = folder.rglob("*.json")
    path.write_bytes(damage.replace(b"KEY", path.stem.encode()))
    client = CachedJudgeClient(_client(llm_server), folder)
    StandardJudge(client, samples=1)(_request())
    assert client.stats.corrupt == 1 and client.stats.misses == 1
    assert json.loads(path.read_text())["key"] == path.stem


# ---- output files --------------------------------------------------------------------------------------


def test_a_log_record_with_a_lone_surrogate_is_written_escaped(tmp_path: Path) -> None:
    """An audit record holding a surrogate is written as valid UTF-8 JSON (escaped), not raised out of the sink."""
    sink = JsonlSink(tmp_path / "log.jsonl")
    sink.write({"type": "step", "message": "x\ud800y"})
    sink.close()
    line = (tmp_path / "log.jsonl").read_bytes().decode("utf-8")
    assert sink.records == 1 and "\\ud800" in line


def test_a_full_disk_is_recorded_by_the_sink_and_nothing_half_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC at the file layer: the sink keeps its whole lines, stops, and says why."""
    sink = JsonlSink(tmp_path / "log.jsonl")
    sink.write({"n": 1})
    real = os.write

    def full(fd: int, data: Any) -> int:
        if fd == sink._fd:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    sink.write({"n": 2})
    sink.close()
    assert sink.records == 1 and sink.error and "space" in sink.error.lower()
    assert (tmp_path / "log.jsonl").read_text() == '{"n": 1}\n'


@pytest.mark.parametrize(("output", "how"), [(".", "is"), ("..", "contains"), ("trajectories/x", "lies inside")])
def test_an_output_folder_overlapping_an_input_is_refused(tmp_path: Path, output: str, how: str) -> None:
    """An output folder that is, contains or lies inside an input is refused in one sentence (links resolved)."""
    run = tmp_path / "runs" / "run1"
    (run / "trajectories").mkdir(parents=True)
    with pytest.raises(OutputError, match=f" {how} the input "):
        check_apart(run / output, [run], "-o/--out")
    (tmp_path / "link").symlink_to(run)
    with pytest.raises(OutputError, match=" is the input "):
        check_apart(tmp_path / "link", [run], "-o/--out")
    check_apart(tmp_path / "elsewhere", [run], "-o/--out")


@pytest.mark.parametrize("name", ["../../X", "a/b", "/abs", "..", ".", "", "a\nb", "<b>x</b>", "x|y", "\ud800", "n" * 500])
def test_any_name_becomes_a_safe_distinct_path_component(tmp_path: Path, name: str) -> None:
    """A safe name is one plain component, never a dot name, and two names never share one."""
    s = safe_name(name)
    assert s and "/" not in s and not s.startswith(".") and len(s) <= MAX_NAME and s.isascii()
    assert (tmp_path / s).resolve().parent == tmp_path.resolve()
    assert safe_name(name + "x") != s
    assert safe_name("plain_name-1.0") == "plain_name-1.0"


# ---- lists that grow with the run ----------------------------------------------------------------------


def test_a_step_of_a_thousand_calls_is_listed_capped_with_a_count() -> None:
    """A step record lists the first MAX_LISTED calls and counts the rest, so the report and audit log stay small."""
    calls = tuple(CallFacts(k_call=2 * i, k_result=2 * i + 1, tool=f"tool_{i}", canonical_tool=None, arguments={}, raw_arguments=None,
                            result="ok", exception=None, issues=(), fatal_near=(), warnings=(), repeated_of=None, state_changes=(),
                            settled=None, out_of_order=()) for i in range(1000))
    record = step_record(Step(t=1, k_start=1, k_end=2000, kind="tool", calls=calls, message=None, settled=()))
    assert len(record.tools) == MAX_LISTED and record.omitted == {"tools": 1000 - MAX_LISTED}
    fields = pending_fields([f"c{i}:t" for i in range(10**5)])
    assert len(fields["pending_calls"]) == MAX_LISTED and fields["omitted"] == {"pending_calls": 10**5 - MAX_LISTED}


def test_a_million_pending_calls_make_a_small_report() -> None:
    """Calls left without a result are listed up to the cap; the report says how many it left out."""
    ev = Evaluator(blueprint(["a"]))
    for i in range(5000):
        ev.observe(call(f"c{i}", f"unknown_{i}"))
    report = ev.finish()
    assert len(report.pending_calls) == MAX_LISTED and report.omitted["pending_calls"] == 5000 - MAX_LISTED
    assert len(report.model_dump_json()) < 2_000_000


# ---- refused attempts spelled past screening -----------------------------------------------------------

MINE = Minefield(id="mf", tool="send_message", args=(ArgPredicate(arg="target", op="eq", value="+1555"),), reason="forbidden")
SPELLINGS = {
    "Cyrillic look-alikes": "ѕеnd_mеѕѕаgе",
    "Greek look-alikes": "send_mεssαgε",
    "reversed behind a right-to-left override": "\u202e" + "send_message"[::-1],
    "after 50k characters": "x" * 50_000 + " send_message",
    "zero-width joiners between letters": "\u200d".join("send_message"),
}


@pytest.mark.parametrize("label", list(SPELLINGS))
def test_a_refused_call_spelling_a_minefield_tool_is_the_fatal_attempt(label: str) -> None:
    """A refused call whose name folds to a fatal minefield's tool halts the run, suspects listed or not."""
    assert spelled_in(SPELLINGS[label], ["send_message", "get_time"]) == ("send_message",)
    ev = Evaluator(blueprint(["a"], minefields=[MINE]))
    hostile = ToolCall("c", SPELLINGS[label], {"target": "+1555"}, rejected="unknown tool")
    assert ev.screen(hostile) is MINE
    assert ev.screen(ToolCall("c", SPELLINGS[label], {"target": "+1666"}, rejected="unknown tool")) is None


def test_a_refused_call_with_unreadable_arguments_steps_on_a_minefield_that_asks_nothing_of_them() -> None:
    """Arguments too long or garbled to read cannot clear a minefield of the tool that any call of it steps on."""
    mine = Minefield(id="mf", tool="send_message", args=(), reason="never")
    ev = Evaluator(blueprint(["a"], minefields=[mine]))
    refused = ToolCall("c", "send_message", None, '{"target": "+15', rejected="the arguments are longer than 200000 characters")
    assert ev.screen(refused) is mine
    assert Evaluator(blueprint(["a"], minefields=[MINE])).screen(refused) is None  # a predicate it cannot check: no guess


def test_a_clean_call_never_halts_on_the_folded_reading() -> None:
    """Folding only reads refused calls: an accepted call of another tool never halts."""
    ev = Evaluator(blueprint(["a"], minefields=[MINE]))
    ev.observe(call("c1", "op_a", {"x": "send_message", "target": "+1555"}))
    ev.observe(result("c1"))
    assert not ev.finish().halted


def test_no_writer_writes_nan_or_infinity(tmp_path: Path) -> None:
    """A number that is no finite float (from any input) is written as null by the JSON writers, never as NaN or
    Infinity, which json.dumps writes and no JSON reader but Python's accepts."""
    import math

    from dynsteer_hook.files.outputs import write_json_atomic

    def strict(text: str) -> object:
        return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} written"))

    value = {"a": float("nan"), "b": [float("inf"), -math.inf, 1.5], "c": {"d": float("-inf")}, "e": "NaN"}
    write_json_atomic(tmp_path / "x.json", value)
    assert strict((tmp_path / "x.json").read_text()) == {"a": None, "b": [None, None, 1.5], "c": {"d": None}, "e": "NaN"}
    with JsonlSink(tmp_path / "log.jsonl") as sink:
        sink.write({"type": "x", "v": float("inf")})
        sink.write({"type": "y", "v": "\ud800", "w": float("nan")})
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert [strict(line)["v"] for line in lines] == [None, "\ud800"] and sink.records == 2
