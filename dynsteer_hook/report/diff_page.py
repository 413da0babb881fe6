"""``diff.html`` and ``diff.md``: two runs of the same scenarios side by side, from ``offline.diff``'s document.

The page follows the run page: the same look (its stylesheet), the totals on top, the rows as one JSON blob that a
small inline script (allowed by its CSP hash alone) turns into a table with ``textContent``, so that a hostile
scenario name, cause or error never becomes an element; sorting and filters live in the URL's fragment, rows are drawn
a hundred at a time, and each row links to both runs' scenario pages. The Markdown has the same tables, every cell
escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dynsteer_hook.model.untrusted import for_markdown
from dynsteer_hook.report.static_page import embed_json, page_script
from dynsteer_hook.report.templating import environment

__all__ = ["diff_title", "render_diff_markdown", "render_diff_page"]


def row(*cells: Any, limit: int = 300) -> str:
    """One Markdown table row, every cell escaped (as ``report.markdown.row``, whose module imports the report records)."""
    return "| " + " | ".join("-" if c is None or c == "" else for_markdown(c, limit) for c in cells) + " |"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    if value is None:
        return "-"
    return ("+" if value > 0 else "\u2212" if value < 0 else "\u00b1") + f"{abs(value):.3f}"


def diff_title(doc: Mapping[str, Any]) -> str:
    """The page's title: the two folders' names."""
    return f"dynsteer diff: {Path(doc['a']['path']).name} \u2192 {Path(doc['b']['path']).name}"


def render_diff_page(doc: Mapping[str, Any]) -> str:
    """The HTML page of a diff document (``offline.diff.diff_document``)."""
    from markupsafe import Markup

    script, digest = page_script("diff_page.js")
    data = {"rows": doc["per_scenario"], "only_in_a": doc["only_in_a"], "only_in_b": doc["only_in_b"],
            "skipped_entries": doc["skipped_entries"]}
    return str(environment(keep_trailing_newline=True).get_template("diff_page.html.j2").render(
        title=diff_title(doc), doc=doc, t=doc["totals"], num=_num, signed=_signed, digest=digest,
        data=Markup(embed_json(data)), script=Markup(script),
    ))


def _stop(side: Mapping[str, Any]) -> str:
    if not side["stop"]:
        return ""
    return f"{side['stop']} ({side['clock']})" + (f": {side['cause']}" if side["cause"] else "")


def _outcome(p: Mapping[str, Any]) -> str:
    a, b = p["before"]["outcome"], p["after"]["outcome"]
    return a if a == b else f"{a} \u2192 {b}"


def _gate_lines(gates: Sequence[Mapping[str, Any]]) -> list[str]:
    if not gates:
        return []
    return ["", "## Gates", "", "| gate | verdict | measured |", "| --- | --- | --- |",
            *(row(g["flag"], "passed" if g["passed"] else "FAILED", g["words"]) for g in gates)]


def _alone(title: str, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["", f"## {title} ({len(rows)})", ""]
    if not rows:
        return [*lines, "None."]
    return [*lines, "| scenario | outcome | dynsteer | stop | first error |", "| --- | --- | ---: | --- | --- |",
            *(row(r["name"], r["outcome"], _num(r["score"]), _stop(r), r["first_error"], limit=160) for r in rows)]


def render_diff_markdown(doc: Mapping[str, Any]) -> str:
    """The Markdown of a diff document: totals, every shared scenario worst regression first, the one-sided ones apart."""
    a, b, t = doc["a"], doc["b"], doc["totals"]
    w = t["wilcoxon"]
    test = (f"paired Wilcoxon signed-rank test over {w['pairs']} scored pair(s): p = {w['p_value']:.4g}" if w["p_value"] is not None
            else f"paired Wilcoxon signed-rank test over {w['pairs']} scored pair(s): no difference to test")
    lines = [
        f"# {for_markdown(diff_title(doc), 400)}", "",
        f"Before: {for_markdown(a['path'], 400)} ({a['kind']}); after: {for_markdown(b['path'], 400)} ({b['kind']}).", "",
        "| | before | after |", "| --- | ---: | ---: |",
        row("scenarios", a["scenarios"], b["scenarios"]),
        row("mean dynsteer score", _num(a["mean_score"]), _num(b["mean_score"])),
        row("halt rate", f"{_num(a['halt_rate'])} ({a['halted']})", f"{_num(b['halt_rate'])} ({b['halted']})"),
        *([row("not finished (interrupted)", a["not_finished"], b["not_finished"])] if a["not_finished"] or b["not_finished"] else []),
        "",
        f"**{t['shared']} shared scenario(s)**: {t['worse']} worse, {t['better']} better, {t['same']} the same"
        + (f", {t['unscored']} unscored" if t["unscored"] else "") + f"; {t['outcome_changed']} changed outcome. "
        f"Mean dynsteer score over them {_num(t['mean_before'])} \u2192 {_num(t['mean_after'])} (change {_signed(t['mean_change'])}); {test}. "
        f"Only before: {t['only_in_a']}; only after: {t['only_in_b']}.",
        *_gate_lines(doc["gates"]),
        "", "## Shared scenarios, worst regression first", "",
    ]
    if doc["per_scenario"]:
        lines += ["| scenario | change | before | after | change | outcome | stop before | stop after | first error before | first error after |",
                  "| --- | --- | ---: | ---: | ---: | --- | --- | --- | --- | --- |"]
        lines += [row(p["name"], p["change"], _num(p["before"]["score"]), _num(p["after"]["score"]), _signed(p["delta"]), _outcome(p),
                      _stop(p["before"]), _stop(p["after"]), p["before"]["first_error"], p["after"]["first_error"], limit=160)
                  for p in doc["per_scenario"]]
    else:
        lines.append("None: the two runs share no scenario.")
    lines += _alone("Only before", doc["only_in_a"]) + _alone("Only after", doc["only_in_b"])
    if doc["skipped_entries"]:
        lines += ["", f"## Entries that could not be read ({len(doc['skipped_entries'])})", "", "| side | entry | scenario | why |",
                  "| --- | ---: | --- | --- |"]
        lines += [row("before" if s["side"] == "a" else "after", s["entry"], s["name"], s["reason"]) for s in doc["skipped_entries"]]
    return "\n".join(lines) + "\n"
