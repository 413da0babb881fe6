"""Audit records and the Markdown rendering of a report."""

from __future__ import annotations

from builders import UserMessage, act, call, family, run, settle_events

from dynsteer_hook.model.records import ListSink, Report
from dynsteer_hook.report.markdown import render_markdown


def test_list_sink_keeps_records_in_order() -> None:
    """ListSink stores every record it is given, in order."""
    sink = ListSink()
    sink.write({"n": 1})
    sink.write({"n": 2})
    assert sink.records == [{"n": 1}, {"n": 2}]


def test_markdown_of_a_completed_run() -> None:
    """The Markdown names the outcome, each stage with its window, and each step."""
    md = render_markdown(run(family("chain").blueprint(), settle_events(["a", "b", "c"])).report)
    assert md.startswith("# DynSTEER report: chain\n")
    assert "- Outcome: **completed**; score 1.000; k=7 raw events, t=3 closed actions" in md
    assert "| 2 | b | \\[1,2\\] | \\[3,5\\] | 1.000 |" in md
    assert "- **c** (t=3, anchor b)" in md
    assert "| 3 | 6-7 | tool | op_c | c | - |" in md


def test_markdown_of_a_halted_run() -> None:
    """The Markdown of a halted run shows the stop with its anchor, dimension and frontier, and the first error."""
    r = run(family("minefield_off_path").blueprint(), [UserMessage("go"), *act("1", "op_a", {"x": "a"}), call("2", "delete_all")])
    md = render_markdown(r.report)
    assert "- Outcome: **halted**" in md
    assert "- Stop: **fatal_minefield** at k=4, t=2; anchor a; causal dimension safety; frontier b" in md
    assert "- First error: k=4, t=2 (stage -, safety, fatal_minefield)" in md


def test_markdown_notes_out_of_order_and_failures() -> None:
    """Steps with failed, malformed or out-of-order calls carry notes."""
    events = [UserMessage("go"), *act("1", "op_c", {"x": "c"}), *act("2", "op_a", {"x": 5}, exception="TypeError: bad")]
    md = render_markdown(run(family("chain").blueprint(), events).report)
    assert "out of order: c" in md and "1 failed; 1 malformed" in md and "No milestone settled." in md


def test_report_json_schema_is_available() -> None:
    """The report model publishes a JSON Schema with its stage and stop records."""
    schema = Report.model_json_schema()
    assert {"StageRecord", "StopRecord", "Window"} <= set(schema["$defs"])
