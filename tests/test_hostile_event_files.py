"""Event files whose tool calls and results do not pair up: evaluation goes on, every break is named.

Table-driven: each row is an event file (one record per line, the first line a meta record)
and what ``dynsteer evaluate`` must make of it: the pairing faults with the line they point
at, the closed actions (never frozen at t=0) and the milestones settled. Add a row to add a
case. The blueprint is the chain a -> b -> c, where ``op_a(x="a")`` settles a.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from builders import family

from dynsteer_hook.cli import main
from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.model.records import Report
from dynsteer_hook.report.writer import REPORT_JSON, REPORT_MD
from dynsteer_hook.runtime.pairing import KEEP_FAULTS, LineIndex

pytestmark = pytest.mark.usefixtures("core_cli")

META = {"kind": "meta", "task": "chain"}
USER = {"kind": "user_message", "content": "please do the task"}


def call(call_id: str, node: str = "a", **kw: Any) -> dict[str, Any]:
    return {"kind": "tool_call", "call_id": call_id, "tool": f"op_{node}", "arguments": {"x": node}, **kw}


def res(call_id: str, value: Any = "ok") -> dict[str, Any]:
    return {"kind": "tool_result", "call_id": call_id, "result": value}


def say(text: str) -> dict[str, Any]:
    return {"kind": "agent_message", "content": text}


def user(text: str) -> dict[str, Any]:
    return {"kind": "user_message", "content": text}


@dataclass(frozen=True)
class Case:
    """An event file and what evaluating it must give."""

    records: list[dict[str, Any]]  # line 1 is META, line 2 is USER: records start at line 3
    faults: list[tuple[str, int]]  # (kind, line) in order
    t: int
    settled: list[str]
    pending: list[str] = ()  # type: ignore[assignment]


CASES: dict[str, Case] = {
    "orphan result with an unknown id": Case(
        [call("1"), res("ghost"), res("1")],
        [("orphan_result", 4)], t=1, settled=["a"]),
    "result for an unknown id with nothing waiting": Case(
        [res("ghost"), call("1"), res("1")],
        [("orphan_result", 3)], t=1, settled=["a"]),
    "result before its call, then an agent message and the end": Case(
        [res("1"), call("1"), say("done")],
        [("orphan_result", 3), ("result_before_call", 4), ("unanswered_call", 4)], t=1, settled=[], pending=["1:op_a"]),
    "result before its call, then the call is answered again": Case(
        [res("1"), call("1"), res("1")],
        [("orphan_result", 3), ("result_before_call", 4)], t=1, settled=["a"]),
    "duplicate call ids waiting together": Case(
        [call("1"), call("1", "b"), res("1"), res("1")],
        [("duplicate_call_id", 4)], t=1, settled=["a"]),
    "call never answered before an agent message and the user's reply": Case(
        [call("1"), say("working on it"), user("and?"), call("2"), res("2")],
        [("unanswered_call", 3)], t=2, settled=["a"]),
    "call never answered, the agent speaks twice": Case(
        [call("1"), say("working on it"), say("still working"), call("2"), res("2")],
        [("unanswered_call", 3)], t=3, settled=["a"]),
    "call never answered before the end of the file": Case(
        [call("1")],
        [("unanswered_call", 3)], t=1, settled=[], pending=["1:op_a"]),
    "one of two parallel calls never answered, the agent calls again": Case(
        [call("1", "b"), call("2"), res("2"), call("3", "b"), res("3")],
        [("unanswered_call", 3)], t=2, settled=["a", "b"]),
    "late result after the agent moved on": Case(
        [call("1", "b"), user("hello?"), res("1"), call("2"), res("2")],
        [("unanswered_call", 3), ("late_result", 5)], t=2, settled=["a"]),
    "interleaved parallel calls (results out of order)": Case(
        [call("1"), call("2", "z"), res("2"), res("1")],
        [], t=1, settled=["a"]),
    "the same id reused in a later action": Case(
        [call("c"), res("c"), call("c", "b"), res("c")],
        [], t=2, settled=["a", "b"]),
    "a user call and its result": Case(
        [call("1"), res("1"), {"kind": "tool_call", "call_id": "u", "tool": "end_conversation", "arguments": {}, "actor": "user"}, res("u")],
        [], t=1, settled=["a"]),
}


def write_case(tmp_path: Path, records: list[dict[str, Any]]) -> dict[str, Path]:
    bp = tmp_path / "bp.json"
    save_blueprint(family("chain").blueprint(), bp)
    events = tmp_path / "trace.jsonl"
    events.write_text("".join(json.dumps(r) + "\n" for r in [META, USER, *records]), encoding="utf-8")
    return {"bp": bp, "events": events, "report": tmp_path / "out"}


def evaluate(files: dict[str, Path]) -> int:
    return main(["evaluate", "--blueprint", str(files["bp"]), "--events", str(files["events"]), "--report", str(files["report"])])


@pytest.mark.parametrize("name", list(CASES))
def test_pairing_faults_are_evaluated_on_and_named_by_line(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 0, the actions close (no freeze), each fault is one stderr sentence naming its line and is in the report."""
    case = CASES[name]
    files = write_case(tmp_path, case.records)
    assert evaluate(files) == 0
    out, err = capsys.readouterr()
    report = Report.model_validate_json((files["report"] / REPORT_JSON).read_text(encoding="utf-8"))
    assert (report.t, report.settled) == (case.t, case.settled)
    assert report.pending_calls == list(case.pending)
    assert [f.kind for f in report.trace_faults] == [kind for kind, _ in case.faults]
    assert report.trace_fault_count == len(case.faults)
    warned = [line for line in err.splitlines() if line.startswith("dynsteer: warning: ")]
    assert [(int(m.group(1)) if (m := re.search(r"trace\.jsonl line (\d+): ", w)) else None) for w in warned] == [line for _, line in case.faults]
    assert all(w.endswith("; evaluated on, recorded in the report") for w in warned)
    assert "Traceback" not in err and out.startswith("chain: ")
    audit = [json.loads(x) for x in (files["report"] / "dynsteer_audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["kind"] for r in audit if r["type"] == "trace_fault"] == [kind for kind, _ in case.faults]
    if case.faults:
        assert "## Trace faults" in (files["report"] / REPORT_MD).read_text(encoding="utf-8")


def test_a_flood_of_orphan_results_is_counted_in_bounded_space(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Thousands of orphans: the report keeps the first ones and the total, stderr names ten and counts the rest."""
    n = 3000
    files = write_case(tmp_path, [res(f"o{i}") for i in range(n)] + [call("1"), res("1")])
    assert evaluate(files) == 0
    err = capsys.readouterr().err
    report = Report.model_validate_json((files["report"] / REPORT_JSON).read_text(encoding="utf-8"))
    assert report.trace_fault_count == n and len(report.trace_faults) == KEEP_FAULTS
    assert report.settled == ["a"] and report.t == 1
    assert err.count("dynsteer: warning: ") == 11 and f"has {n - 10} more pairing faults" in err


def test_line_numbers_skip_blank_and_meta_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fault after blank and meta lines still names its own line."""
    files = write_case(tmp_path, [])
    text = files["events"].read_text(encoding="utf-8") + "\n\n" + json.dumps(META) + "\n" + json.dumps(res("ghost")) + "\n"
    files["events"].write_text(text, encoding="utf-8")
    assert evaluate(files) == 0
    assert "trace.jsonl line 6: the result for call 'ghost' matches no call waiting for one" in capsys.readouterr().err


@pytest.mark.parametrize(("notes", "probe", "line"), [
    ([(1, 2), (2, 3), (3, 4)], 3, 4),
    ([(1, 1), (2, 5), (3, 6)], 1, 1),
    ([(1, 1), (2, 5), (3, 6)], 3, 6),
    ([], 1, None),
])
def test_line_index_maps_raw_events_to_lines(notes: list[tuple[int, int]], probe: int, line: int | None) -> None:
    """The line index answers with the line an event was read from, storing only where the offset changes."""
    index = LineIndex()
    for k, lineno in notes:
        index.note(k, lineno)
    assert index.line(probe) == line
