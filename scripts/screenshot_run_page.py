"""A screenshot of a real run page, for the README: the shipped scripted agents played live over their
scenarios in one `dynsteer run` (clean solves, a looping agent halted, a minefield blocked), then
index.html photographed in headless Chromium.

    python scripts/screenshot_run_page.py                      # docs/images/run-page.png, 1280 px wide
    python scripts/screenshot_run_page.py --width 800 --out /some/where.png --keep RUN_DIR

Needs ToolSandbox, Playwright and the system's Chromium (scripts/setup.sh installs them).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "dynsteer_hook" / "data" / "scripts"
# Which shipped agent plays each scenario of the mixed run: the faulty ones where they have a script.
PLAYED_BY = ("clean_solver", "looping_agent", "minefield_agent")


def mixed_script(path: Path) -> list[str]:
    """Write one script file in which each scenario is played by the last agent of ``PLAYED_BY`` that has it; its names."""
    merged: dict[str, Any] = {"_about": "clean solves, a looping agent and a minefield, in one run"}
    for name in PLAYED_BY:
        data = json.loads((SCRIPTS / f"{name}.json").read_text(encoding="utf-8"))
        merged |= {k: v for k, v in data.items() if not k.startswith("_")}
    path.write_text(json.dumps(merged), encoding="utf-8")
    return sorted(k for k in merged if not k.startswith("_"))


def mixed_run(base: Path, *, write_reports: bool = True) -> Path:
    """Play the mixed run into a new folder under ``base`` (as `dynsteer run` does); the run's folder."""
    sys.path.insert(0, str(ROOT))
    from dynsteer_hook.toolsandbox.live.runner import RunOptions, load_scenarios, run_scenarios

    script = base / "mixed_script.json"
    names = mixed_script(script)
    scenarios = load_scenarios(names)
    out = base / "agent_Scripted_user_Scripted"
    run_scenarios(scenarios, RunOptions(agent="Scripted", user="Scripted", script=script, write_reports=write_reports), out, 1)
    return out


def screenshot(page_path: Path, png: Path, width: int, height: int) -> None:
    """Photograph ``page_path`` at ``width`` x ``height`` CSS pixels (the first screen, not the whole page)."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("screenshot_run_page: Chromium is not installed; apt-get install -y chromium")
    png.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(page_path.resolve().as_uri() + "#sort=-outcome")  # the halted runs first
            page.wait_for_selector("body[data-ready]")
            page.screenshot(path=str(png))
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "run-page.png")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=560)
    ap.add_argument("--keep", type=Path, default=None, help="play the run into this folder and keep it")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        run = mixed_run(base)
        screenshot(run / "index.html", args.out, args.width, args.height)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
