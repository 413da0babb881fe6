"""diff.html in headless Chromium: rows worst regression first, each linking to both runs' scenario pages (which exist),
columns that sort both ways with empty cells last, filters kept in the URL's fragment, the scenarios one side holds listed
apart, a hundred rows drawn at a time, and hostile names, causes and errors shown as text that makes no element."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from run_folders import first_error, run_entry, stop, write_run
from test_html_report import _open, browser  # noqa: F401 - the shared Chromium

from dynsteer_hook.cli import main

HOSTILE_NAME = '<img src=x onerror=console.error("pwned")><b>bold #?%"\'&'  # a folder name: no slash
HOSTILE = '</script><!--<script>console.error("pwned")</script><iframe src="https://example.com/x"></iframe>"\'&'


def _unscored(name: str) -> dict[str, Any]:
    entry = run_entry(name, 0.0)
    entry.pop("dynsteer")
    return entry


@pytest.fixture(scope="module")
def diffed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two runs with drops, gains, steady scores, a crash, an unscored scenario, hostile text in a name, a cause and an
    error, and scenarios only one side holds; diffed with a gate that fails."""
    base = tmp_path_factory.mktemp("diff_page")
    a = write_run(base / "runs" / "before", [
        run_entry("drops", 1.0), run_entry("slips", 0.9), run_entry("improves", 0.5), run_entry("steady", 0.8),
        run_entry("crashes", 0.7), run_entry("unscored", 0.4), run_entry(HOSTILE_NAME, 0.6, categories=(HOSTILE,)),
        run_entry("gone", 1.0), run_entry("also_gone", 0.2),
    ])
    b = write_run(base / "runs" / "after", [
        run_entry("drops", 0.0, "halted", halted=True, stop_=stop(cause="cause " + HOSTILE), fe=first_error(detail=HOSTILE)),
        run_entry("slips", 0.85), run_entry("improves", 0.75), run_entry("steady", 0.8),
        run_entry("crashes", 0.0, "crashed", crash="ConnectionError: agent unreachable " + HOSTILE), _unscored("unscored"),
        run_entry(HOSTILE_NAME, 0.1, "halted", halted=True, stop_=stop("low_score", cause=HOSTILE), categories=(HOSTILE,)),
        run_entry("new", 0.3),
    ])
    out = base / "diff"
    assert main(["diff", str(a), str(b), "-o", str(out), "--fail-on-regression"]) == 3
    return {"out": out, "page": out / "diff.html", "doc": json.loads((out / "diff.json").read_text()), "a": a, "b": b}


def _target(page_url: str, href: str) -> Path:
    return Path(unquote(urlparse(href).path)) if href.startswith("file:") else Path(unquote(urlparse(page_url).path)).parent / unquote(href)


def _rows(page: Any) -> list[dict[str, Any]]:
    return page.evaluate("""() => Array.from(document.querySelectorAll('#rows tr')).map(tr => ({
        change: tr.getAttribute('data-change'), cells: Array.from(tr.children).map(td => td.textContent)}))""")


def test_rows_come_worst_regression_first_and_link_to_both_runs_pages(browser: Any, diffed: dict[str, Any]) -> None:  # noqa: F811
    """One row per shared scenario in diff.json's order (worst regression first); every before and after link, and both
    run pages' links, open a file that exists in the right run; no console error, no request."""
    page, problems = _open(browser, diffed["page"])
    doc = diffed["doc"]
    rows = _rows(page)
    assert len(rows) == len(doc["per_scenario"]) and all(r["cells"][0].startswith(p["name"]) for r, p in zip(rows, doc["per_scenario"], strict=True))
    assert [r["change"] for r in rows][:3] == ["worse", "worse", "worse"] and rows[-1]["change"] == "unscored"
    assert page.locator("#count").inner_text() == str(doc["totals"]["shared"]) == str(len(rows))
    for side, run in (("before", diffed["a"]), ("after", diffed["b"])):
        links = page.eval_on_selector_all(f"#rows a.{side}", "as => as.map(a => a.href)")
        assert len(links) == sum(1 for p in doc["per_scenario"] if p[side]["href"])
        for href in links:
            target = _target(page.url, href)
            assert target.is_file() and target.resolve().is_relative_to(run.resolve()), href
    for href in page.eval_on_selector_all("p.paths a", "as => as.map(a => a.href)"):
        assert _target(page.url, href).name == "index.html" and _target(page.url, href).is_file()
    only = page.eval_on_selector_all("#only-a a, #only-b a", "as => as.map(a => a.href)")
    assert len(only) == 3 and all(_target(page.url, h).is_file() for h in only)
    assert page.locator("#only-a tbody tr").count() == 2 and page.locator("#only-b tbody tr").count() == 1
    assert page.locator("#gates .gate-failed").count() == 1
    assert problems == []


def test_columns_sort_both_ways_with_empty_cells_last(browser: Any, diffed: dict[str, Any]) -> None:  # noqa: F811
    """The change column and the after score sort up and down; the unscored row's empty cell stays last either way."""
    page, problems = _open(browser, diffed["page"])
    header = page.locator('th[data-key="delta"] button')
    for clicks, direction in ((1, "ascending"), (2, "descending")):
        header.click()
        assert page.locator('th[data-key="delta"]').get_attribute("aria-sort") == direction, clicks
        cells = [r["cells"][4] for r in _rows(page)]
        values = [float(c.replace("\u2212", "-").replace("\u00b1", "").replace("+", "")) for c in cells if c]
        assert values == sorted(values, reverse=direction == "descending") and cells[-1] == ""
    page.locator('th[data-key="sb"] button').click()
    after = [r["cells"][3] for r in _rows(page)]
    assert [float(v) for v in after if v] == sorted(float(v) for v in after if v) and after[-1] == ""
    assert problems == []


def test_filters_keep_their_rows_and_the_fragment_keeps_the_choice(browser: Any, diffed: dict[str, Any]) -> None:  # noqa: F811
    """Change, outcome after, stop reason and free text keep exactly their rows; a page opened at the same address shows them."""
    doc = diffed["doc"]
    page, problems = _open(browser, diffed["page"])
    for change in ("worse", "better", "same", "unscored"):
        page.select_option("#f-change", change)
        rows = _rows(page)
        assert {r["change"] for r in rows} == {change} and len(rows) == sum(1 for p in doc["per_scenario"] if p["change"] == change)
    page.select_option("#f-change", "")
    page.select_option("#f-outcome", "halted")
    assert len(_rows(page)) == 2
    page.select_option("#f-outcome", "")
    page.select_option("#f-stop", "low_score")
    assert len(_rows(page)) == 1
    page.select_option("#f-stop", "")
    page.fill("#f-q", "unreachable")
    assert [r["cells"][0][:7] for r in _rows(page)] == ["crashes"]
    page.fill("#f-q", "")
    page.select_option("#f-change", "worse")
    page.locator('th[data-key="sa"] button').click()
    again, more = _open(browser, diffed["page"])
    again.goto(page.url)
    again.reload()
    assert _rows(again) == _rows(page) and again.locator('th[data-key="sa"]').get_attribute("aria-sort") == "ascending"
    assert problems == [] and more == []


def test_hostile_text_makes_no_element(browser: Any, diffed: dict[str, Any]) -> None:  # noqa: F811
    """A hostile scenario name, category, stop cause, first error and crash are shown as text: the page has its two
    scripts only, and no image, bold, frame or script element comes from the rows."""
    page, problems = _open(browser, diffed["page"])
    assert page.locator("script").count() == 2 and page.locator("img, b, iframe, #rows script").count() == 0
    text = page.locator("#rows").inner_text()
    titles = " ".join(page.eval_on_selector_all("#rows [title]", "ns => ns.map(n => n.title)"))
    assert HOSTILE_NAME in text and HOSTILE.lower() in text and HOSTILE in text + titles
    page.fill("#f-q", "pwned")
    assert page.locator("#rows tr").count() == 3  # the hostile name (and its cause), the drop's cause and error, the crash
    assert problems == []


def test_a_long_diff_draws_a_hundred_rows_at_a_time(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    """250 shared scenarios and 150 only after: 100 rows each, the buttons draw the rest; a sort starts again at 100 and
    sorts all 250."""
    a = write_run(tmp_path / "a", [run_entry(f"s{i:03d}", 0.5) for i in range(250)], pages=False)
    b = write_run(tmp_path / "b", [run_entry(f"s{i:03d}", i / 250) for i in range(250)] + [run_entry(f"n{i:03d}", 0.1) for i in range(150)],
                  pages=False)
    assert main(["diff", str(a), str(b), "-o", str(tmp_path / "out")]) == 0
    page, problems = _open(browser, tmp_path / "out" / "diff.html")
    assert page.locator("#rows tr").count() == 100 and page.locator("#count").inner_text() == "250"
    assert _rows(page)[0]["cells"][0].startswith("s000")  # the worst drop first
    for drawn in (200, 250):
        page.locator("#more").click()
        assert page.locator("#rows tr").count() == drawn
    assert page.locator("#only-b tbody tr").count() == 100
    page.locator("#only-b + button").click()
    assert page.locator("#only-b tbody tr").count() == 150
    page.locator('th[data-key="sb"] button').click()
    page.locator('th[data-key="sb"] button').click()
    assert page.locator("#rows tr").count() == 100 and _rows(page)[0]["cells"][0].startswith("s249")
    assert problems == []


@pytest.mark.parametrize("width", [1280, 800])
def test_the_page_fits_and_photographs(browser: Any, diffed: dict[str, Any], width: int, tmp_path: Path) -> None:  # noqa: F811
    """At 1280 px the page needs no horizontal scrolling; at 800 px only the tables scroll, inside their frames."""
    page, problems = _open(browser, diffed["page"])
    page.set_viewport_size({"width": width, "height": 900})
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    shot = tmp_path / f"diff_{width}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000 and problems == []
