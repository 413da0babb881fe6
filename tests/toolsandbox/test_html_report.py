"""The HTML reports in a real headless browser (Chromium from the system's packages): the run page
draws the milestone graph with the right nodes and states, marks the first error and the stop, and
shows hostile text as text; the comparison page draws its plots; no page logs a console error."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from needs import need_module, unavailable
from shipped_runs import ShippedRuns
from ts_support import BLUEPRINTS, script_names

from dynsteer_hook.files.blueprints import load_blueprint
from dynsteer_hook.model.records import Report
from dynsteer_hook.report.html import render_run
from dynsteer_hook.report.run_page import with_back_link
from dynsteer_hook.toolsandbox.offline.replay import ReplayOptions, replay_runs

pytestmark = pytest.mark.toolsandbox

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by Playwright (the system's browser; nothing is downloaded)."""
    if CHROMIUM is None:
        unavailable("Chromium is not installed (scripts/setup.sh installs Debian's chromium package)")
    sync_api: Any = need_module("playwright.sync_api", "playwright is not installed (pip install -e .[dev])")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                                              "--disable-component-update", "--disable-sync", "--no-first-run"])
        try:
            yield b
        finally:
            b.close()


def _open(browser: Any, path: Path) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on("request", lambda r: problems.append(f"request: {r.url}") if not r.url.startswith(("file:", "data:", "about:")) else None)
    page.goto(path.resolve().as_uri())
    return page, problems


@pytest.fixture(scope="module")
def replays(shipped_runs: ShippedRuns, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Native recordings of the clean, looping and minefield agents, replayed (one HTML page per scenario)."""
    base = tmp_path_factory.mktemp("html")
    for script in ("clean_solver", "looping_agent", "minefield_agent"):
        shutil.copytree(shipped_runs(script, "native").folder, base / "runs" / script)
    replay_runs([base / "runs"], ReplayOptions(blueprint_dir=BLUEPRINTS), base / "out")
    return base / "out"


def _pages(replays: Path) -> list[Path]:
    return sorted(replays.glob("*/*/trajectories/*/dynsteer_report.html")) + sorted(replays.glob("*/trajectories/*/dynsteer_report.html"))


def test_every_replayed_run_page_draws_its_graph_and_marks(browser: Any, replays: Path) -> None:
    """Each page renders with one node per milestone plus the start, in the state the report gives,
    the stop's minefield and markers where the report has them, and no console error or request."""
    pages = _pages(replays)
    assert len(pages) >= 7
    for path in pages:
        report = Report.model_validate_json((path.parent / "dynsteer_report.json").read_text())
        bp = load_blueprint(BLUEPRINTS / f"{report.task}.json")
        page, problems = _open(browser, path)
        nodes = page.locator("#dag [data-node]")
        assert nodes.count() == len(bp.milestones) + 1, path
        states = {nodes.nth(i).get_attribute("data-node"): nodes.nth(i).get_attribute("data-state") for i in range(nodes.count())}
        for m in report.settled:
            assert states[m] in ("settled", "failed")
        for m in report.unsettled:
            assert states[m] in ("frontier", "pending")
        assert page.locator("#dag [data-minefield]").count() == len(bp.minefields)
        assert page.locator('[data-mark="stop"]').count() == (1 if report.stop else 0)
        assert page.locator('[data-mark="first-error"]').count() == (1 if report.first_error else 0)
        if report.stop is not None and report.stop.minefield:
            assert page.locator(f'.mine.hit[data-minefield="{report.stop.minefield}"]').count() == 1
        blocked = 1 if report.stop is not None and report.stop.reason == "fatal_minefield" else 0
        assert page.locator("#timeline [data-step]").count() == len(report.steps) + blocked
        assert problems == [], (path, problems)
        page.close()


def test_a_screenshot_of_a_halted_run_shows_the_drawings(browser: Any, replays: Path, tmp_path: Path) -> None:
    """The halted looping run renders to a non-empty screenshot with both drawings visible."""
    path = next(p for p in _pages(replays) if "looping_agent" in str(p))
    page, problems = _open(browser, path)
    assert page.locator("#dag").is_visible() and page.locator("#timeline").is_visible()
    shot = tmp_path / "halted.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000 and problems == []


HOSTILE = '<script>console.error("pwned")</script><img src=x onerror=alert(1)>"\'&'


def test_hostile_text_is_shown_as_text(browser: Any, replays: Path, tmp_path: Path) -> None:
    """Agent and tool text with markup in a report appears as text: no element, no script, no console error."""
    path = next(p for p in _pages(replays) if "looping_agent" in str(p))
    data = json.loads((path.parent / "dynsteer_report.json").read_text())
    data["task"] = HOSTILE
    data["stop"]["detail"] = HOSTILE
    for step in data["steps"]:
        step["tools"] = [HOSTILE]
    report = Report.model_validate(data)
    bp = load_blueprint(BLUEPRINTS / f"{json.loads((path.parent / 'dynsteer_report.json').read_text())['task']}.json")
    page_path = tmp_path / "hostile.html"
    page_path.write_text(render_run(report, bp))
    page, problems = _open(browser, page_path)
    assert page.locator("script").count() == 0 and page.locator("img").count() == 0
    assert HOSTILE in page.locator("body").inner_text()
    assert problems == []


def test_the_comparison_page_draws_distributions_and_the_stop_histogram(browser: Any, replays: Path, tmp_path: Path) -> None:
    """`dynsteer compare` writes compare.html with one point per trajectory and evaluator and a stop histogram."""
    from dynsteer_hook.cli import main

    runs = replays.parent / "runs"
    code = main(["compare", f"clean={runs / 'clean_solver'}", f"looping={runs / 'looping_agent'}", "-o", str(tmp_path / "cmp"), "--no-progress"])
    assert code == 0
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    page, problems = _open(browser, tmp_path / "cmp" / "compare.html")
    trajectories = sum(a["trajectories"] for a in result["agents"].values())
    native = sum(a["native"]["n"] for a in result["agents"].values())
    assert page.locator("circle[data-point]").count() == trajectories + native
    assert page.locator("#stop-histogram [data-bin]").count() == 10
    assert page.locator("table").count() >= 4 and problems == []


@pytest.fixture(scope="module")
def live_runs(shipped_runs: ShippedRuns, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The looping and minefield agents played live with dynsteer (`dynsteer run`'s runner): one HTML page per scenario."""
    base = tmp_path_factory.mktemp("live_html")
    for script in ("looping_agent", "minefield_agent"):
        shutil.copytree(shipped_runs(script, "dynsteer").folder, base / script)
    return base


def test_dynsteer_run_writes_the_run_page_beside_the_json_report(browser: Any, live_runs: Path, tmp_path: Path) -> None:
    """Every live scenario has dynsteer_report.html next to its JSON report, rendered from that very report (with the link back
    to the run page); in Chromium it
    draws one node per milestone plus the start, the live stop and first error, with no console error or request."""
    reports = sorted(live_runs.glob("*/trajectories/*/dynsteer_report.json"))
    assert len(reports) == sum(len(script_names(s)) for s in ("looping_agent", "minefield_agent"))
    halted = 0
    for json_path in reports:
        path = json_path.with_name("dynsteer_report.html")
        report = Report.model_validate_json(json_path.read_text())
        bp = load_blueprint(BLUEPRINTS / f"{report.task}.json")
        assert path.read_text() == with_back_link(render_run(report, bp)), path
        page, problems = _open(browser, path)
        assert page.locator("#dag [data-node]").count() == len(bp.milestones) + 1, path
        assert page.locator('[data-mark="stop"]').count() == (1 if report.stop else 0)
        assert page.locator('[data-mark="first-error"]').count() == (1 if report.first_error else 0)
        blocked = 1 if report.stop is not None and report.stop.reason == "fatal_minefield" else 0
        assert page.locator("#timeline [data-step]").count() == len(report.steps) + blocked
        assert problems == [], (path, problems)
        assert report.transcript is not None and page.locator("#transcript > li").count() == len(report.transcript.entries)
        assert page.locator("#request").inner_text() == report.transcript.request
        assert page.locator('[data-status="blocked"]').count() == blocked
        if report.halted:  # ToolSandbox scored the cut trajectory, and the page says so
            assert "of the cut trajectory" in page.locator("#similarity").inner_text()
        halted += report.halted
        if report.halted and halted == 1:
            shot = tmp_path / "live_halted.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        page.close()
    assert halted >= 1  # the looping and minefield agents are stopped live
