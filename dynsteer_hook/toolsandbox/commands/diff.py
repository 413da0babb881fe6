"""``dynsteer diff``: two runs of the same scenarios (before and after a change) side by side, written as a page, Markdown
and JSON, with gates for CI."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from dynsteer_hook.model.errors import DynsteerError, OutputError

SHOWN = 5
"""Regressions the console names."""


def add_diff_parser(sub: Any, *, flags: bool = True) -> None:
    """Declare ``diff``, with its flags unless ``flags`` is false."""
    p = sub.add_parser(
        "diff",
        help="compare two runs or replays of the same scenarios: which got worse, which better, a paired test",
        description="RUN_A (before) and RUN_B (after) are folders written by dynsteer run or rerun (result_summary.json) or by "
        "dynsteer replay (replay_summary.json). The scenarios both hold are paired by name: per scenario the dynsteer score, "
        "outcome, stop and first error before and after, worst regression first; the totals with a paired Wilcoxon "
        "signed-rank test over the shared scenarios and how many got worse, better or stayed the same; the scenarios only "
        "one side holds listed apart. Writes diff.html (linking to both runs' scenario pages), diff.md and diff.json into "
        "-o. Exit status 3 when a gate fails (everything written), 2 for bad input.",
    )
    if not flags:
        return
    from dynsteer_hook.report.gates import add_gate_flags

    # "*", not exactly two: a wrong count gets this command's one sentence, not argparse's usage dump.
    p.add_argument("runs", nargs="*", type=Path, metavar="RUN", help="RUN_A (before) and RUN_B (after): run or replay folders")
    p.add_argument("-o", "--out", type=Path, required=True, help="folder for diff.html, diff.md and diff.json")
    add_gate_flags(p, regression=True, side="RUN_B")
    p.set_defaults(func=cmd_diff, logs=False)  # it logs nothing: no structlog to set up


def _printable(text: str, limit: int = 120) -> str:
    """A name from a run as one console line: control characters (a newline, a terminal escape) shown escaped, clipped."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _console(doc: dict[str, Any], out: Path) -> list[str]:
    a, b, t = doc["a"], doc["b"], doc["totals"]
    w = t["wilcoxon"]

    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    test = f"Wilcoxon p = {w['p_value']:.4g} over {w['pairs']} scored pair(s)" if w["p_value"] is not None else "no score changed"
    change = "" if t["mean_change"] is None else f" ({t['mean_change']:+.3f})"
    lines = [
        f"RUN_A {_printable(a['path'])} ({a['kind']}, {a['scenarios']} scenario(s)) -> RUN_B {_printable(b['path'])} ({b['kind']}, "
        f"{b['scenarios']} scenario(s))",
        f"shared {t['shared']}: {t['worse']} worse, {t['better']} better, {t['same']} the same"
        + (f", {t['unscored']} unscored" if t["unscored"] else "")
        + f"; mean dynsteer score {num(t['mean_before'])} -> {num(t['mean_after'])}{change}; {test}",
        f"only in RUN_A {t['only_in_a']}, only in RUN_B {t['only_in_b']}"
        + (f"; {len(doc['skipped_entries'])} entry(ies) could not be read (listed in diff.md)" if doc["skipped_entries"] else ""),
    ]
    worse = [p for p in doc["per_scenario"] if p["change"] == "worse"]
    for p in worse[:SHOWN]:
        moved = "" if p["before"]["outcome"] == p["after"]["outcome"] else f", {p['before']['outcome']} -> {p['after']['outcome']}"
        lines.append(f"  worse: {_printable(p['name'])}: {num(p['before']['score'])} -> {num(p['after']['score'])}{moved}")
    if len(worse) > SHOWN:
        lines.append(f"  and {len(worse) - SHOWN} more worse (diff.md lists them all)")
    lines.append(f"wrote {out / 'diff.html'} (linking to both runs' scenario pages), diff.md and diff.json")
    return lines


def cmd_diff(args: argparse.Namespace) -> int:
    """Run ``dynsteer diff``."""
    from dynsteer_hook.files.outputs import StagedFiles, check_apart, check_output_dir, create_dir, reason
    from dynsteer_hook.report.diff_page import render_diff_markdown, render_diff_page
    from dynsteer_hook.report.gates import judge_gates, summary_line
    from dynsteer_hook.toolsandbox.commands.gating import gated_status, gates_of
    from dynsteer_hook.toolsandbox.offline.diff import DIFF_FILES, diff_document, document_text, pair_runs, side_measures
    from dynsteer_hook.toolsandbox.offline.run_records import read_run

    gates = gates_of(args)
    if len(args.runs) != 2:
        raise DynsteerError(f"diff needs two folders, RUN_A (before) and RUN_B (after), each written by dynsteer run, rerun or replay; "
                            f"{len(args.runs)} given")
    run_a, run_b = args.runs
    before, after = read_run(run_a, "RUN_A"), read_run(run_b, "RUN_B")
    out: Path = args.out
    check_apart(out, [run_a, run_b], "-o/--out")
    check_output_dir(out, "-o/--out", DIFF_FILES)
    diff = pair_runs(before, after)
    # Judged before the files are written, so that diff.json and the page carry the verdicts; said once they are written.
    judged = judge_gates(gates, side_measures(after), worse=[(p.name, p.before.score or 0.0, p.after.score or 0.0) for p in diff.worse],
                         shared=len(diff.paired)) if gates.any else []
    doc = diff_document(diff, out, [dataclasses.asdict(v) for v in judged])
    create_dir(out, "-o/--out")
    html_name, md_name, json_name = DIFF_FILES
    try:
        with StagedFiles() as staged:
            staged.text(out / json_name, document_text(doc))
            staged.text(out / md_name, render_diff_markdown(doc))
            staged.text(out / html_name, render_diff_page(doc))
            staged.commit()
    except OSError as exc:
        raise OutputError(f"the diff cannot be written to {out} ({reason(exc)}); the files already there are unchanged; free some "
                          "space or pass another -o/--out") from None
    for line in _console(doc, out):
        print(line)
    verdict = summary_line(judged)
    if verdict:
        print(verdict)
    return gated_status(judged, 0)
