"""The run page (index.html) and the comparison by scenario in headless Chromium: a mixed run (clean solves,
halts on every stop reason, a crash, a blocked minefield, a hostile name) shows one row per scenario, sorts,
filters by outcome, stop reason, category and free text, links every row to a page that exists (which links
back), logs no console error and makes no element out of hostile text; replay and compare write theirs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from test_html_report import _open, browser, replays  # noqa: F401 - the shared Chromium and the native recordings
from ts_support import BLUEPRINTS, SCRIPTS, script_names

from dynsteer_hook.report.run_page import run_rows, write_run_page
from dynsteer_hook.report.run_summary import DynsteerBlock
from dynsteer_hook.toolsandbox.live.results import ScenarioResult
from dynsteer_hook.toolsandbox.live.runner import RunOptions, run_scenarios

pytestmark = [pytest.mark.toolsandbox, pytest.mark.slow]

HOSTILE = '</script><!--<script>console.error("pwned")</script><img src=x onerror=alert(1)>"\'&'
HOSTILE_NAME = '<img src=x onerror=console.error("pwned")><b>bold #?%"\'&'  # a folder name: no slash
STOP_REASONS = ("fatal_minefield", "structural_failure", "repeated_failure", "low_score", "frontier_stagnation")


def _mixed_script(path: Path) -> list[str]:
    merged: dict[str, Any] = {}
    for name in ("clean_solver", "looping_agent", "minefield_agent"):
        merged |= {k: v for k, v in json.loads((SCRIPTS / f"{name}.json").read_text()).items() if not k.startswith("_")}
    path.write_text(json.dumps(merged))
    return sorted(merged)


@pytest.fixture(scope="module")
def mixed(scenarios: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A live run of clean solves, a looping agent and a blocked minefield, plus (beside its real rows) a halt on every
    other stop reason, an agent that could not be reached and a hostile name, each with a scenario page."""
    base = tmp_path_factory.mktemp("run_page")
    names = _mixed_script(base / "mixed.json")
    run = base / "run"
    played = run_scenarios({n: scenarios[n] for n in names}, RunOptions(agent="Scripted", user="Scripted", script=base / "mixed.json"), run, 1)
    written = json.loads((run / "index.html").read_text().split('id="run-data">')[1].split("</script>")[0])["rows"]
    halted = next(r for r in played if (r["dynsteer"] or {}).get("halted"))
    page = run / "trajectories" / halted["name"] / "dynsteer_report.html"
    results = list(played)
    seen = {r["dynsteer"]["stop"]["reason"] for r in played if r["dynsteer"]["halted"]}
    for i, reason in enumerate([r for r in STOP_REASONS if r not in seen] + [None]):
        name = f"synthetic_{reason}" if reason else HOSTILE_NAME
        block = dict(halted["dynsteer"])
        block["stop"] = {**block["stop"], "reason": reason or "low_score", "cause": f"cause of {reason or HOSTILE}"}
        results.append({**halted, "name": name, "categories": [f"CATEGORY_{i % 2}"] + ([] if reason else [HOSTILE]), "dynsteer": block})
        (run / "trajectories" / name).mkdir()
        shutil.copy(page, run / "trajectories" / name / "dynsteer_report.html")
    crashed = ScenarioResult.crashed("unreachable_agent", ["SINGLE_TOOL_CALL"], ConnectionError("agent unreachable at 127.0.0.1:9"), 10)
    crashed.dynsteer = DynsteerBlock.failed("ConnectionError: agent unreachable at 127.0.0.1:9", stale=False, rows_seen=0, max_messages=10,
                                            seconds=0.1, evaluator_seconds=0.0)
    results.append(crashed.record())
    mixed_dir = base / "mixed"
    shutil.copytree(run / "trajectories", mixed_dir / "trajectories")
    write_run_page(mixed_dir, "mixed run", run_rows(sorted(results, key=lambda r: r["name"])))
    return {"run": run, "played": played, "written": written, "dir": mixed_dir, "results": results}


def _rows(page: Any) -> list[dict[str, Any]]:
    return page.evaluate("""() => Array.from(document.querySelectorAll('#rows tr')).map(tr => ({
        outcome: tr.getAttribute('data-outcome'), cells: Array.from(tr.children).map(td => td.textContent)}))""")


def _target(page_url: str, href: str) -> Path:
    return Path(unquote(urlparse(href).path)) if href.startswith("file:") else Path(unquote(urlparse(page_url).path)).parent / unquote(href)


def test_dynsteer_run_writes_its_run_page_with_a_row_per_scenario(mixed: dict[str, Any]) -> None:
    """The runner's own index.html has one row per played scenario, linking to the pages it wrote."""
    assert sorted(r["name"] for r in mixed["written"]) == sorted(r["name"] for r in mixed["played"])
    assert all(r["href"] and (mixed["run"] / unquote(r["href"])).is_file() for r in mixed["written"])
    outcomes = {r["outcome"] for r in mixed["written"]}
    assert {"completed", "halted"} <= outcomes
    assert any(r["stop"] == "fatal_minefield" for r in mixed["written"])


def test_rows_links_and_back_links_resolve(browser: Any, mixed: dict[str, Any]) -> None:  # noqa: F811
    """One row per scenario; every row's link opens a page that exists and whose back link returns to the run page."""
    page, problems = _open(browser, mixed["dir"] / "index.html")
    assert page.locator("#rows tr").count() == len(mixed["results"]) == int(page.locator("#count").inner_text())
    links = page.eval_on_selector_all("#rows a", "as => as.map(a => a.href)")
    assert len(links) == len(mixed["results"]) - 1  # the unreachable agent has no page
    for href in links:
        target = _target(page.url, href)
        assert target.is_file(), href
        scenario, more = _open(browser, target)
        back = scenario.locator("#run-page-link")
        assert back.count() == 1 and _target(scenario.url, back.evaluate("a => a.href")) == mixed["dir"] / "index.html"
        assert more == [], more
        scenario.close()
    assert problems == []


def test_columns_sort_both_ways_with_empty_cells_last(browser: Any, mixed: dict[str, Any]) -> None:  # noqa: F811
    page, problems = _open(browser, mixed["dir"] / "index.html")
    header = page.locator('th[data-key="score"] button')
    for clicks, direction in ((1, "ascending"), (2, "descending")):
        header.click()
        assert page.locator('th[data-key="score"]').get_attribute("aria-sort") == direction, clicks
        scores = [r["cells"][2] for r in _rows(page)]
        values = [float(s) for s in scores if s]
        assert values == sorted(values, reverse=direction == "descending")
        assert scores[len(values):] == [""] * (len(scores) - len(values))
    page.locator('th[data-key="name"] button').click()
    names = page.evaluate("() => Array.from(document.querySelectorAll('#rows td.name > a, #rows td.name')).length")
    assert names >= len(mixed["results"]) and problems == []


def test_each_filter_keeps_exactly_its_rows(browser: Any, mixed: dict[str, Any]) -> None:  # noqa: F811
    """Outcome, stop reason and category keep the rows that have them; free text matches names and causes; the URL
    fragment keeps the choice (a page opened with it shows the same rows)."""
    results = mixed["results"]
    page, problems = _open(browser, mixed["dir"] / "index.html")
    outcomes = {(r["dynsteer"] or {}).get("outcome") for r in results}
    for outcome in outcomes:
        page.select_option("#f-outcome", outcome)
        rows = _rows(page)
        assert len(rows) == sum(1 for r in results if r["dynsteer"]["outcome"] == outcome) and {r["outcome"] for r in rows} == {outcome}
    page.select_option("#f-outcome", "")
    for reason in STOP_REASONS:
        page.select_option("#f-stop", reason)
        assert len(_rows(page)) == sum(1 for r in results if (r["dynsteer"]["stop"] or {}).get("reason") == reason), reason
    page.select_option("#f-stop", "")
    page.select_option("#f-cat", "CATEGORY_1")
    assert len(_rows(page)) == sum(1 for r in results if "CATEGORY_1" in r["categories"])
    page.select_option("#f-cat", "")
    page.fill("#f-q", "UNREACHABLE")
    assert [r["outcome"] for r in _rows(page)] == ["crashed"]
    page.fill("#f-q", "")
    page.select_option("#f-outcome", "halted")
    page.locator('th[data-key="steps"] button').click()
    again, more = _open(browser, mixed["dir"] / "index.html")
    again.goto(page.url)
    again.reload()
    assert _rows(again) == _rows(page) and again.locator('th[data-key="steps"]').get_attribute("aria-sort") == "ascending"
    assert problems == [] and more == []


def test_hostile_text_makes_no_element(browser: Any, mixed: dict[str, Any]) -> None:  # noqa: F811
    """The hostile name, category and cause are shown as text; the page has its two scripts only and no image."""
    page, problems = _open(browser, mixed["dir"] / "index.html")
    assert page.locator("script").count() == 2 and page.locator("img, b, #rows script").count() == 0
    text = page.locator("#rows").inner_text()
    causes = page.eval_on_selector_all("#rows td.stop .sub", "ss => ss.map(s => s.title || s.textContent)")
    assert HOSTILE_NAME in text and HOSTILE.lower() in text and f"cause of {HOSTILE}" in causes
    page.fill("#f-q", "pwned")
    assert page.locator("#rows tr").count() == 1
    assert problems == []


@pytest.mark.parametrize("width", [1280, 800])
def test_the_run_page_fits_and_photographs(browser: Any, mixed: dict[str, Any], width: int, tmp_path: Path) -> None:  # noqa: F811
    """At 1280 px the page needs no horizontal scrolling; at 800 px only the table scrolls, inside its frame."""
    page, problems = _open(browser, mixed["dir"] / "index.html")
    page.set_viewport_size({"width": width, "height": 900})
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    shot = tmp_path / f"run_page_{width}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000 and problems == []


def test_replay_writes_a_run_page_per_run_and_over_all(browser: Any, replays: Path) -> None:  # noqa: F811
    """replay's index.html lists every replayed scenario; each run's folder has its own, whose links and back links resolve."""
    summary = json.loads((replays / "replay_summary.json").read_text())
    page, problems = _open(browser, replays / "index.html")
    assert page.locator("#rows tr").count() == summary["replayed"]
    for href in page.eval_on_selector_all("#rows a", "as => as.map(a => a.href)"):
        assert _target(page.url, href).is_file(), href
    for run in {Path(r["run"]).name for r in summary["per_scenario"]}:
        mine = [r for r in summary["per_scenario"] if Path(r["run"]).name == run]
        sub, more = _open(browser, replays / run / "index.html")
        assert sub.locator("#rows tr").count() == len(mine) and more == []
    assert problems == []


def test_compare_lists_scenarios_across_agents_linking_to_each_replay(browser: Any, replays: Path, tmp_path: Path) -> None:  # noqa: F811
    """compare's index.html: one row per scenario, a linked cell per agent and repeat, disagreements first; compare.md has the same table."""
    from dynsteer_hook.cli import main

    runs = replays.parent / "runs"
    out = tmp_path / "cmp"
    assert main(["compare", f"clean={runs / 'clean_solver'}", f"loop|<b>ing={runs / 'looping_agent'}", "-o", str(out), "--no-progress",
                 "--blueprints", str(BLUEPRINTS)]) == 0
    result = json.loads((out / "compare.json").read_text())
    scenarios = set(script_names("clean_solver")) | set(script_names("looping_agent"))
    page, problems = _open(browser, out / "index.html")
    assert page.locator("#scenarios tbody tr").count() == len(scenarios) == len(result["per_scenario"])
    flags = page.eval_on_selector_all("#scenarios tbody tr", "trs => trs.map(t => t.hasAttribute('data-disagree'))")
    assert flags == sorted(flags, reverse=True)
    links = page.eval_on_selector_all("#scenarios a.traj", "as => as.map(a => a.href)")
    assert len(links) == sum(a["trajectories"] for a in result["agents"].values())
    assert all(_target(page.url, h).is_file() for h in links)
    assert page.locator("b").count() == 0 and "loop|<b>ing" in page.locator("#scenarios thead").inner_text()
    md = (out / "compare.md").read_text()
    assert "loop\\|&lt;b&gt;ing" in md and "## Per scenario" in md
    for width in (1280, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(tmp_path / f"compare_{width}.png"), full_page=True)
    assert problems == []


def test_a_long_run_draws_a_hundred_rows_at_a_time(browser: Any, mixed: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    """250 scenarios: 100 rows drawn, the button draws the next 100 and then the last 50; a sort or a filter starts again
    at 100 and sorts all 250, not the rows drawn."""
    halted = next(r for r in mixed["played"] if r["dynsteer"]["halted"])
    many = [{**halted, "name": f"s{i:03d}", "dynsteer": {**halted["dynsteer"], "score": i / 250}} for i in range(250)]
    page, problems = _open(browser, write_run_page(tmp_path, "long", run_rows(many)))
    assert page.locator("#rows tr").count() == 100 and page.locator("#count").inner_text() == "250"
    for drawn in (200, 250):
        page.locator("#more").click()
        assert page.locator("#rows tr").count() == drawn
    assert page.locator("#more").is_hidden()
    page.locator('th[data-key="score"] button').click()
    page.locator('th[data-key="score"] button').click()
    assert page.locator("#rows tr").count() == 100 and _rows(page)[0]["cells"][0].startswith("s249")
    assert problems == []


OBJECT_NAMES = ("constructor", "toString", "__proto__", "hasOwnProperty", "valueOf")


def test_categories_named_like_object_properties_are_counted_and_filtered(browser: Any, mixed: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    """Categories named ``constructor``, ``toString``, ``__proto__`` (what every plain object already has) are options with
    their own counts, and choosing one keeps exactly its rows: no function's text as a count, no category lost."""
    halted = next(r for r in mixed["played"] if r["dynsteer"]["halted"])
    many = [{**halted, "name": f"s{i}", "categories": list(OBJECT_NAMES[: i % len(OBJECT_NAMES) + 1])} for i in range(7)]
    page, problems = _open(browser, write_run_page(tmp_path, "object names", run_rows(many)))
    options = page.eval_on_selector_all("#f-cat option", "os => os.map(o => [o.value, o.textContent])")
    counts = {name: sum(name in r["categories"] for r in many) for name in OBJECT_NAMES}
    assert dict((v, t) for v, t in options if v) == {name: f"{name} ({n})" for name, n in counts.items()}
    for name, n in counts.items():
        page.select_option("#f-cat", name)
        assert len(_rows(page)) == n, name
    assert problems == []


def test_an_unknown_similarity_reads_unknown_with_its_reason(browser: Any, mixed: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    """A scenario whose ToolSandbox similarity was not computed shows 'unknown' and the reason in its cell, not 0 or an
    empty cell, and sorts with the empty cells (last); the card counts it as left out of the mean."""
    clean = next(r for r in mixed["played"] if not r["dynsteer"]["halted"])
    why = "not computed within its budget of 300 s (--similarity-budget)"
    wide = {**clean, "name": "wide", "similarity": None, "milestone_similarity": None, "minefield_similarity": None,
            "similarity_unknown": why}
    page, problems = _open(browser, write_run_page(tmp_path, "unknown", run_rows([clean, wide])))
    [cells] = [row["cells"] for row in _rows(page) if row["cells"][0].startswith("wide")]
    assert cells[3].startswith("unknown") and why in cells[3], cells
    page.locator('th[data-key="sim"] button').click()
    assert _rows(page)[-1]["cells"][0].startswith("wide")
    assert "1 unknown, left out" in page.locator("body").inner_text()
    assert problems == []
