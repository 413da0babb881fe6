"""The conversation in every report: the request, the tools, each message and call in order with its clocks, the stage it
closed and its faults, parallel calls grouped, a call stopped by interception blocked; the same from an event file."""

from __future__ import annotations

import json
from pathlib import Path

from builders import AgentMessage, UserMessage, act, call, family, result, run, settle_events

import dynsteer_hook
from dynsteer_hook.cli import main
from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.model.events import SystemMessage, event_to_record
from dynsteer_hook.model.records import NativeSimilarity, Report
from dynsteer_hook.report.markdown import cell, render_markdown
from dynsteer_hook.report.scenario_page import REPORT_HTML, render_run
from dynsteer_hook.report.story import headline, similarity_line
from dynsteer_hook.runtime.transcript import TEXT_LIMIT

CHAIN = family("chain").blueprint()
MINES = family("minefield_off_path").blueprint()


def test_the_transcript_holds_request_tools_messages_and_calls_in_order() -> None:
    """Every event appears once, in k order, each action with its t, the stage it closed, its calls' arguments and results."""
    events = [SystemMessage("be nice"), UserMessage("please do a, b and c"), *settle_events(["a", "b", "c"])[1:], AgentMessage("done")]
    report = run(CHAIN, events).report
    tr = report.transcript
    assert tr is not None and tr.request == "please do a, b and c"
    assert [t.name for t in tr.tools] == [s.name for s in CHAIN.catalog] and tr.tools
    assert [e.kind for e in tr.entries] == ["system", "user", "action", "action", "action", "agent"]
    assert [e.t for e in tr.entries] == [None, None, 1, 2, 3, 4]
    assert [e.stages for e in tr.entries[2:5]] == [["a"], ["b"], ["c"]]
    first = tr.entries[2].calls[0]
    assert (first.tool, json.loads(first.arguments), first.status, first.result) == ("op_a", {"x": "a"}, "ok", "ok")
    assert first.k_result == first.k + 1
    assert tr.entries[-1].text == "done" and tr.entry_count == len(tr.entries)
    ks = [e.k for e in tr.entries]
    assert ks == sorted(ks)


def test_parallel_calls_are_one_action_and_errors_are_shown() -> None:
    """Two calls issued before either result share one entry and one t; a raising call shows its error and its fault."""
    events = [UserMessage("go"), call("1", "op_a", {"x": "a"}), call("2", "op_other", {"x": 1}), result("1"),
              result("2", exception="ValueError: no such thing")]
    tr = run(family("chain").blueprint(), events).report.transcript
    assert tr is not None
    [action] = [e for e in tr.entries if e.kind == "action"]
    assert action.t == 1 and [c.tool for c in action.calls] == ["op_a", "op_other"]
    assert [c.status for c in action.calls] == ["ok", "error"]
    assert action.calls[1].error == "ValueError: no such thing" and action.calls[1].result is None
    md = render_markdown(run(family("chain").blueprint(), events).report)
    assert "call 1 of 2 in parallel: op_a" in md and "call 2 of 2 in parallel: op_other" in md


def test_a_call_stopped_by_interception_is_blocked_at_the_clocks_of_its_first_error() -> None:
    """The fatal call is shown as blocked and never executed, with the minefield that stopped it; the stop, the first error
    and the blocked call have the same k and t."""
    r = run(MINES, [UserMessage("go"), *act("1", "op_a", {"x": "a"}), call("2", "delete_all", {"all": True})])
    report = r.report
    assert report.stop is not None and report.first_error is not None
    assert (report.stop.k, report.stop.t) == (report.first_error.k, report.first_error.t) == (4, 2)
    assert report.transcript is not None
    blocked = report.transcript.entries[-1]
    assert (blocked.t, blocked.k) == (2, 4)
    [c] = blocked.calls
    assert c.status == "blocked" and c.result is None and c.k_result is None
    assert c.rule is not None and c.rule.startswith("mf:delete_all") and c.faults
    md = render_markdown(report)
    assert "BLOCKED before it executed (never ran), stopped by mf:delete_all" in md
    assert "| 2 | 4 | blocked | delete_all | - | blocked before it executed (never ran): mf:delete_all |" in md
    page = render_run(report, MINES)
    assert 'data-status="blocked"' in page and "blocked, never executed" in page


def test_a_looping_agent_is_told_in_words() -> None:
    """The same call in consecutive actions (here malformed, until the structural stop) is a repeat the headline names, on
    the page and in the Markdown."""
    events = [UserMessage("go")] + [e for i in range(6) for e in act(str(i), "op_other", {"q": "same"})]
    report = run(CHAIN, events).report
    assert report.transcript is not None
    [rep] = report.transcript.repeats
    assert (rep.tool, rep.count, rep.t_first, rep.t_last, rep.settled) == ("op_other", 4, 1, 4, False)
    words = " ".join(headline(report))
    assert "the same call 4 times in a row (t=1 to 4), settling nothing" in words and "No milestone settled" in words
    assert "Stopped by structural_failure" in words
    page = render_run(report, CHAIN)
    assert page.count('data-step-state="failed"') == 4 and "No milestone settled, so no stage was judged" in page
    assert "the same call 4 times in a row" in render_markdown(report)


def test_huge_texts_are_clipped_in_the_transcript() -> None:
    """A 1 MB argument, result and message cost a few kilobytes in the report."""
    big = "Z" * 1_000_000
    report = run(CHAIN, [UserMessage(big), *act("1", "op_a", {"x": big}, value=big), AgentMessage(big)]).report
    tr = report.transcript
    assert tr is not None and tr.request is not None and len(tr.request) <= TEXT_LIMIT
    c = tr.entries[1].calls[0]
    assert len(c.arguments) <= TEXT_LIMIT and c.result is not None and len(c.result) <= TEXT_LIMIT
    assert len(report.model_dump_json()) < 40_000
    assert len(render_run(report, CHAIN)) < 60_000 and len(render_markdown(report)) < 20_000


def test_every_markdown_cell_goes_through_one_escape() -> None:
    """The cell function keeps a cell one cell: pipes, line breaks and HTML tags are escaped; empty values are a dash."""
    assert cell("a|b\nc<script>") == "a\\|b c\\<script\\>"
    assert cell(None) == cell("") == cell([]) == "-"
    assert cell(["x", "y"]) == "x, y"
    report = run(CHAIN, [UserMessage("| fake | row |\n## heading <b>x</b>"), *act("1", "op_a", {"x": "a|b"})]).report
    md = render_markdown(report)
    for line in md.splitlines():
        if line.startswith("| "):
            assert line.replace("\\|", "").count("|") in (3, 7, 9, 11, 7) or "---" in line, line
    assert "\n## heading" not in md and "<b>" not in md


def test_toolsandbox_similarity_stands_beside_the_score_and_says_when_it_is_of_a_cut_run() -> None:
    """The native similarity with its parts; a halted run's similarity is said to be that of the cut trajectory."""
    report = run(MINES, [UserMessage("go"), call("2", "delete_all")]).report
    assert similarity_line(report) == "not evaluated by ToolSandbox"
    cut = report.model_copy(update={"native": NativeSimilarity(similarity=0.25, milestone_similarity=0.5, minefield_similarity=0, cut=True)})
    line = similarity_line(cut)
    assert line.startswith("0.250 (milestones 0.500, minefields 0.000) of the cut trajectory")
    assert line in render_markdown(cut).replace("\\", "") and "of the cut trajectory" in render_run(cut, MINES)


def test_an_event_file_gives_the_same_transcript_and_evaluate_writes_the_page(tmp_path: Path, core_cli: None) -> None:
    """`dynsteer evaluate` on the events written from a run gives the very transcript of the run, and writes the HTML page
    (the public ``write_html_report`` writes the same page)."""
    events = [UserMessage("go"), call("1", "op_a", {"x": "a"}), call("2", "op_b", {"x": "b"}), result("2"), result("1"),
              *settle_events(["a", "b", "c"])[4:], AgentMessage("all done")]
    direct = run(CHAIN, events).report
    save_blueprint(CHAIN, tmp_path / "bp.json")
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(event_to_record(e)) + "\n" for e in events), encoding="utf-8")
    code = main(["evaluate", "--blueprint", str(tmp_path / "bp.json"), "--events", str(tmp_path / "events.jsonl"), "--report", str(tmp_path / "out")])
    assert code == 0
    read = Report.model_validate_json((tmp_path / "out" / "dynsteer_report.json").read_text())
    assert read.transcript == direct.transcript and read.transcript is not None
    page = (tmp_path / "out" / REPORT_HTML).read_text()
    assert page == render_run(read, CHAIN)
    written = dynsteer_hook.write_html_report(read, tmp_path / "api", CHAIN)
    assert written.read_text() == page
