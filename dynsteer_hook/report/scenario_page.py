"""The HTML page of one evaluated scenario, from Jinja2 templates with autoescaping.

The page says in a few sentences what happened, then shows the task (the user's request and
the agent-facing tools), ToolSandbox's similarity beside the dynsteer score, the milestone
graph, the stage timeline, the stages, and the transcript: every message and call in order with
its arguments and result or error, parallel calls grouped, each action labelled with its clocks,
the stage it closed and its faults, and a call stopped by interception shown as blocked.

It is rendered from the same records as the Markdown report (``dynsteer_hook.model.records``).
Every text goes through the template's autoescaping, so whatever an agent, a user or a tool
wrote is shown as text; the page runs no script and loads nothing (a Content-Security-Policy
says so to the browser), so it opens from disk anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dynsteer_hook.files.outputs import write_text_atomic
from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.config import DIMENSIONS
from dynsteer_hook.model.records import Report
from dynsteer_hook.report.layout import graph, timeline
from dynsteer_hook.report.story import cost_line, headline, similarity_line
from dynsteer_hook.report.templating import environment

REPORT_HTML = "dynsteer_report.html"
"""The scenario page's file name, beside ``dynsteer_report.json`` and ``.md``."""


def render_run(report: Report, blueprint: Blueprint) -> str:
    """The HTML page of one evaluated run (a stage fails below the run's own ``theta_pass``)."""
    fail_threshold = float(report.config.get("theta_pass", 0.7))
    context: dict[str, Any] = {
        "r": report, "dimensions": DIMENSIONS, "headline": headline(report), "similarity": similarity_line(report), "cost": cost_line(report),
        "graph": graph(report, blueprint, fail_threshold), "timeline": timeline(report, fail_threshold),
        "transcript": report.transcript, "fail_threshold": fail_threshold,
    }
    return environment().get_template("scenario.html.j2").render(context)


def write_html_report(report: Report, out_dir: str | Path, blueprint: Blueprint) -> Path:
    """Write the scenario page of ``report`` (``dynsteer_report.html``) into ``out_dir``, atomically; return its path.

    Raises:
        OSError: The page could not be written (no temporary file is left).
    """
    path = Path(out_dir) / REPORT_HTML
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, render_run(report, blueprint))
    return path
