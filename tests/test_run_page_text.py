"""The run page and the comparison by scenario, as text: rows and totals from a run's records, the JSON block
that hostile names cannot leave, the console's totals, compare.md's escaped cells and the order of the
per-scenario comparison (the browser tests are in tests/toolsandbox/test_run_page.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from needs import need_module

from dynsteer_hook.files.names import safe_name
from dynsteer_hook.report.compare_page import markdown_rows, md_cell, replay_href, replay_index_href, scenario_table
from dynsteer_hook.report.run_page import (
    console_table,
    embed_json,
    error_words,
    render_run_page,
    run_rows,
    scenario_href,
    totals,
    with_back_link,
    write_run_page,
)
from dynsteer_hook.report.run_summary import dynsteer_summary

HOSTILE = '</script><!--<script>alert(1)</script><img src=x onerror=alert(2)>|a\nb"\'&\u2028'


def _block(**over: Any) -> dict[str, Any]:
    block = {"outcome": "completed", "crash": None, "halted": False, "stop": None, "score": 1.0, "settled": ["m1"], "unsettled": [],
             "first_error": None, "stage_dimensions_by_tier": {"1": 4}, "stages": 1, "k": 6, "t": 3, "rows_seen": 6, "max_messages": 30,
             "scripted_steps_not_played": None, "rollout_seconds": 1.5, "evaluator_seconds": 0.01, "blueprint": "ab", "blueprint_stale": False,
             "incomplete_logs": [], "report_written": True, "report_error": None, "judge_calls": 2, "judge_cost_usd": 0.001}
    return block | over


def _result(name: str, **over: Any) -> dict[str, Any]:
    r = {"name": name, "categories": ["SINGLE_TOOL_CALL"], "traceback": None, "exception_type": None, "milestone_similarity": 1.0,
         "minefield_similarity": 0, "similarity": 1.0, "turn_count": 6, "dynsteer": _block()}
    return r | over


def _mixed() -> list[dict[str, Any]]:
    stop = {"reason": "fatal_minefield", "k": 5, "t": 2, "anchor": "<s0>", "dimension": "safety", "cause": "blocked " + HOSTILE,
            "minefield": "mf", "tool": "remove_contact"}
    fe = {"k": 5, "t": 2, "stage": None, "dimension": "safety", "cause": "fatal_minefield", "detail": HOSTILE}
    return [
        _result("clean"),
        _result("mine", similarity=0.0, dynsteer=_block(outcome="halted", halted=True, stop=stop, first_error=fe, score=0.0,
                                                         scripted_steps_not_played=3)),
        _result("crash", exception_type="RuntimeError", traceback="Traceback...\nRuntimeError: agent unreachable", similarity=0,
                dynsteer=_block(outcome="crashed", crash="RuntimeError: agent unreachable", score=0.0, report_written=False, judge_calls=0)),
        _result(HOSTILE, categories=[HOSTILE]),
    ]


def test_rows_carry_outcome_scores_stop_and_first_error_in_words() -> None:
    """Each row has the fields the page shows; the halted row its stop, clocks, cause and first error; the crash its reason."""
    rows = {r["name"]: r for r in run_rows(_mixed())}
    mine = rows["mine"]
    assert (mine["outcome"], mine["stop"], mine["clock"], mine["saved"], mine["sim"], mine["mf"]) == ("halted", "fatal_minefield", "k=5, t=2", 3, 0.0, 0.0)
    assert mine["fe"].startswith("step t=2 (event k=5); safety: fatal_minefield (")
    assert rows["crash"]["crash"] == "RuntimeError: agent unreachable" and rows["crash"]["href"] is None
    assert rows["clean"]["href"] == "trajectories/clean/dynsteer_report.html"
    assert "/" not in rows[HOSTILE]["href"].split("/")[1] and "<" not in rows[HOSTILE]["href"]


def test_totals_and_the_console_table_count_outcomes_halts_and_saved_steps() -> None:
    """Totals: outcomes, halts by reason, the mean score over judged runs only (a crash does not count), steps saved."""
    t = totals(run_rows(_mixed()))
    assert t["outcomes"] == {"completed": 2, "halted": 1, "crashed": 1}
    assert t["halts_by_reason"] == {"fatal_minefield": 1}
    assert t["mean_score"] == round(2 / 3, 4) and t["steps_saved"] == 3 and t["judge_calls"] == 6
    text = console_table(t, Path("out/index.html"))
    assert "scenarios    4: completed 2, halted 1, crashed 1" in text and "halts        1: fatal_minefield 1" in text
    assert text.splitlines()[-1].strip() == "run page     out/index.html"


def test_an_unknown_similarity_is_shown_as_unknown_with_its_reason_and_left_out_of_the_mean() -> None:
    """A result whose ToolSandbox similarity was not computed: its row has no similarity but the reason (the page shows
    'unknown' and the reason), the mean is over the known ones, and the console counts the unknown one, never as 0."""
    why = "not computed within its budget of 300 s (--similarity-budget)"
    results = [_result("clean", similarity=0.5),
               _result("wide", similarity=None, milestone_similarity=None, minefield_similarity=None, similarity_unknown=why)]
    rows = {r["name"]: r for r in run_rows(results)}
    assert rows["wide"]["sim"] is None and rows["wide"]["simwhy"] == why and rows["clean"]["simwhy"] == ""
    t = totals(list(rows.values()))
    assert t["mean_similarity"] == 0.5 and t["similarity_unknown"] == 1
    assert "ToolSandbox similarity 0.500 (1 unknown, left out)" in console_table(t)
    [entry] = [p for p in dynsteer_summary(results)["per_scenario"] if p["name"] == "wide"]
    assert entry["similarity"] is None and entry["similarity_unknown"] == why
    page = render_run_page("run", list(rows.values()))
    assert "1 unknown, left out" in page


def test_hostile_text_cannot_leave_the_json_block() -> None:
    """The embedded JSON has no <, > or & and no line separator, and reads back to the very same rows."""
    rows = run_rows(_mixed())
    text = embed_json({"rows": rows})
    assert not set(text) & {"<", ">", "&", "\u2028"}
    assert json.loads(text) == {"rows": rows}
    page = render_run_page(HOSTILE, rows)
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the data block and the page's script, nothing else
    assert "<img" not in page and "<!--" not in page


def test_the_page_allows_its_own_script_only() -> None:
    """The page's CSP names the hash of its one script: no other script, no network."""
    import base64
    import hashlib

    page = render_run_page("run", run_rows(_mixed()))
    script = re.findall(r"<script>(.*?)</script>", page, re.S)
    digest = base64.b64encode(hashlib.sha256(script[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in page and "default-src 'none'" in page


def test_written_page_links_only_to_pages_that_exist(tmp_path: Path) -> None:
    """A row whose scenario page is missing (not written, or never started) has no link."""
    (tmp_path / "trajectories" / "clean").mkdir(parents=True)
    (tmp_path / "trajectories" / "clean" / "dynsteer_report.html").write_text("<html><body></body></html>")
    path = write_run_page(tmp_path, "run", run_rows(_mixed()))
    data = json.loads(re.search(r'id="run-data">(.*?)</script>', path.read_text(), re.S).group(1))  # type: ignore[union-attr]
    assert {r["name"]: r["href"] for r in data["rows"]} == {"clean": "trajectories/clean/dynsteer_report.html", "mine": None,
                                                             "crash": None, HOSTILE: None}


def test_a_scenario_page_links_back_to_its_run_page() -> None:
    """The back link goes first in the body; a page without a body is left as it is."""
    assert with_back_link("<html><body><h1>x</h1></body></html>").startswith('<html><body><nav style="margin:0 0 10px"><a id="run-page-link" href="../../index.html">')
    assert with_back_link("no body") == "no body"


def test_first_error_in_words() -> None:
    assert error_words({"k": 4, "t": 2, "stage": "m1", "dimension": "correctness", "cause": "tool_error", "detail": "boom"}) == (
        "step t=2 (event k=4), stage m1; correctness: tool_error (boom)")
    assert error_words(None) == ""


def test_the_run_summary_carries_the_first_error_and_the_stop_cause() -> None:
    """dynsteer_summary.json's per-scenario entries have the first error in full and the stop's cause."""
    per = {p["name"]: p for p in dynsteer_summary(_mixed())["per_scenario"]}
    assert per["mine"]["first_error"]["dimension"] == "safety" and per["mine"]["stop_cause"].startswith("blocked ")
    assert per["clean"]["first_error"] is None and per["clean"]["stop_cause"] is None
    assert per["mine"]["steps_saved"] == 3 and per["clean"]["judge_calls"] == 2


def test_markdown_cells_stay_one_cell_of_text() -> None:
    """A cell with |, a newline and tags parses back as one cell holding the same text, with no HTML node."""
    markdown_it: Any = need_module("markdown_it", "markdown-it-py is not installed (pip install -e .[dev])")
    md = f"| a | b |\n|---|---|\n| {md_cell(HOSTILE)} | x |\n"
    tokens = markdown_it.MarkdownIt("commonmark").enable(["table"]).parse(md)
    cells = [t for t in tokens if t.type == "inline"]
    assert len(cells) == 4
    assert not [c for t in tokens for c in (t.children or []) if c.type.startswith("html")]
    text = "".join(c.content for c in cells[2].children if c.type == "text")
    assert text == HOSTILE.replace("\n", " ").replace("\u2028", " ").strip()


def _cell(agent: str, scenario: str, score: float, native: float | None, repeat: int = 0, stop: str | None = None) -> dict[str, Any]:
    return {"agent": agent, "repeat": repeat, "scenario": scenario, "score": score, "native": native, "stop": stop,
            "href": replay_href(agent, repeat, f"run_1/trajectories/{scenario}")}


def test_scenarios_where_the_evaluators_disagree_come_first() -> None:
    """A scenario whose two evaluators rank the agents in opposite orders leads, then the widest score gap."""
    cells = [_cell("a", "agree", 1.0, 1.0), _cell("b", "agree", 0.2, 0.3),
             _cell("a", "gap", 0.1, 0.9), _cell("b", "gap", 0.1, 0.9),
             _cell("a", "opposite", 0.9, 0.1, stop="low_score"), _cell("b", "opposite", 0.2, 0.8)]
    rows = scenario_table(cells, ["a", "b"], 0.01)
    assert [r["scenario"] for r in rows] == ["opposite", "gap", "agree"]
    assert rows[0]["disagree"] and rows[0]["opposite_pairs"] == [["a", "b"]] and not rows[1]["disagree"]
    assert rows[0]["agents"]["a"]["stops"] == 1
    assert rows[0]["agents"]["a"]["trajectories"][0]["href"] == "replays/a/repeat_0/run_1/trajectories/opposite/dynsteer_report.html"
    lines = markdown_rows(rows, ["a", "b"])
    assert lines[2].startswith("| opposite | yes | 0.900 | 0.100 | 1 | [0](replays/a/repeat_0/run_1/trajectories/opposite/dynsteer_report.html) |")


def test_hrefs_percent_encode_every_part() -> None:
    assert scenario_href("a b#?%/<") == "trajectories/a%20b%23%3F%25%2F%3C/dynsteer_report.html"
    # the agent's part is the folder compare writes its replays in (the safe form of its name), then the recorded folder
    assert replay_href(safe_name("x/y"), 1, "r/trajectories/s#1").startswith(f"replays/{safe_name('x/y')}/repeat_1/r/trajectories/s%231/")
    assert "/" not in safe_name("x/y") and replay_index_href(safe_name("../../x"), 1) == f"replays/{safe_name('../../x')}/repeat_1/index.html"
