"""The one path that writes a run's report files, atomically.

The JSON report and its Markdown rendering are renamed into place together, so a killed
process leaves either the previous pair or the new one; a rollout's HTML page joins them
(``write_run_report``); the audit log beside them is appended line by line as the run goes
(see ``dynsteer_hook.files.outputs``).
"""

from __future__ import annotations

import os
from pathlib import Path

from dynsteer_hook.files.outputs import StagedFiles
from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.records import Report
from dynsteer_hook.report.markdown import render_markdown
from dynsteer_hook.report.run_page import with_back_link
from dynsteer_hook.report.scenario_page import REPORT_HTML, render_run

AUDIT_LOG = "dynsteer_audit.jsonl"
REPORT_JSON = "dynsteer_report.json"
REPORT_MD = "dynsteer_report.md"
REPORT_FILES = (AUDIT_LOG, REPORT_JSON, REPORT_MD, REPORT_HTML)


def stage_report(staged: StagedFiles, report: Report, out_dir: str | Path, blueprint: Blueprint | None = None) -> tuple[Path, Path]:
    """Stage the JSON and Markdown reports of ``report`` for ``out_dir`` (renamed in by ``staged.commit``), and its HTML page
    when the ``blueprint`` it draws is given."""
    out = Path(out_dir)
    json_path, md_path = out / REPORT_JSON, out / REPORT_MD
    staged.text(json_path, report.model_dump_json(indent=2) + "\n")
    staged.text(md_path, render_markdown(report))
    if blueprint is not None:
        staged.text(out / REPORT_HTML, render_run(report, blueprint))
    return json_path, md_path


def write_report(report: Report, out_dir: str | Path) -> tuple[Path, Path]:
    """Write the JSON and Markdown reports into ``out_dir``: both new files, or (on an error) both old ones.

    Raises:
        OSError: A report could not be written; no temporary file is left.
    """
    os.makedirs(out_dir, exist_ok=True)
    with StagedFiles() as staged:
        paths = stage_report(staged, report, out_dir)
        staged.commit()
    return paths


def write_run_report(report: Report, out_dir: str | Path, blueprint: Blueprint) -> tuple[Path, Path, Path]:
    """Write a rollout's report files into ``out_dir`` together: the JSON and Markdown pair (see ``write_report``) and the
    HTML page that draws ``blueprint``, with a link back to the run page two folders up (``trajectories/<scenario>/``).

    They are renamed in at once, like the pair, but not synced to the disk file by file (a run writes them for every
    rollout; its summaries, written once, are synced).

    Raises:
        OSError: A file could not be written (the files are all old or all new, whatever failed).
    """
    out = Path(out_dir)
    os.makedirs(out, exist_ok=True)
    html_path = out / REPORT_HTML
    with StagedFiles(durable=False) as staged:
        json_path, md_path = stage_report(staged, report, out)
        staged.text(html_path, with_back_link(render_run(report, blueprint)))
        staged.commit()
    return json_path, md_path, html_path
