"""The run page: ``index.html`` at the top of a run's, a replay's or a comparison's output folder.

One row per scenario (name, ToolSandbox categories, outcome, dynsteer score, ToolSandbox
similarity with its milestone and minefield parts, the stop and its clocks, the first error in
words, steps and steps saved, judge calls and cost), the totals on top, and a link from every row
to the scenario's own page (which links back). The page is static and self-contained: the rows
travel as one JSON blob in a ``<script type="application/json">`` block that a small inline
script (allowed by its hash alone) turns into a table with ``textContent``, so a hostile name
never becomes an element; sorting and the filters (outcome, stop reason, category, free text)
live in the URL's fragment. The console prints the same totals as a short table.

Rows are made from the records a run already holds (``result_summary.json``'s entries with their
``dynsteer`` block, or ``replay_summary.json``'s), so writing the page reads no report file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

from dynsteer_hook.files.outputs import write_text_atomic
from dynsteer_hook.model.json_text import finite_number
from dynsteer_hook.report.html import REPORT_HTML
from dynsteer_hook.report.static_page import embed_json, error_words, page_script
from dynsteer_hook.report.templating import environment

__all__ = ["BACK_HREF", "INDEX_HTML", "console_table", "embed_json", "error_words", "page_script", "render_run_page",
           "replay_rows", "report_href", "run_folder", "run_rows", "scenario_href", "totals", "with_back_link", "write_run_page"]

INDEX_HTML = "index.html"
"""The run page's file name, at the top of the output folder."""
BACK_HREF = "../../" + INDEX_HTML
"""Where a scenario page (``trajectories/<scenario>/``) finds its run page."""


def scenario_href(name: str, prefix: str = "") -> str:
    """The relative URL of a scenario's page under ``prefix`` (a folder path, '' or ending in '/'), percent-encoded."""
    return prefix + "trajectories/" + quote(name, safe="") + "/" + REPORT_HTML


def _num(value: Any) -> float | None:
    number = finite_number(value)  # what no number is (text, NaN, 1e400 read as infinity) shows as an empty cell
    return None if number is None else round(number, 6)


def _stop_fields(stop: Mapping[str, Any] | None) -> dict[str, Any]:
    if not stop:
        return {"stop": "", "clock": "", "cause": ""}
    return {"stop": str(stop["reason"]), "clock": f"k={stop['k']}, t={stop['t']}",
            "cause": str(stop.get("cause") or stop.get("detail") or "")}


def run_rows(results: Iterable[Mapping[str, Any]], *, prefix: str = "") -> list[dict[str, Any]]:
    """One row per result record of ``dynsteer run`` (``result_summary.json``'s entries, Ctrl-C's stopped ones too)."""
    rows: list[dict[str, Any]] = []
    for r in results:
        d: Mapping[str, Any] = r.get("dynsteer") or {}
        crash = _crash(r) or d.get("crash")
        if r.get("interrupted"):
            outcome = "interrupted"
        elif r.get("not_started"):
            outcome = "not_started"
        elif d:
            outcome = str(d["outcome"])
        else:
            outcome = "crashed" if crash else "played"
        halted = bool(d.get("halted"))
        rows.append({
            "name": str(r["name"]),
            "href": scenario_href(str(r["name"]), prefix) if d and d.get("report_written", True) else None,
            "cats": [str(c) for c in r.get("categories") or []],
            "outcome": outcome,
            "score": _num(d.get("score")) if d else None,
            "sim": _num(r.get("similarity")),
            "ms": _num(r.get("milestone_similarity")),
            "mf": _num(r.get("minefield_similarity")),
            "simwhy": str(r.get("similarity_unknown") or ""),
            **_stop_fields(d.get("stop")),
            "fe": error_words(d.get("first_error") if isinstance(d.get("first_error"), Mapping) else None),
            "crash": crash or "",
            "steps": d.get("t"),
            "saved": d.get("scripted_steps_not_played") if halted else None,
            "calls": d.get("judge_calls", 0) if d else None,
            **_cost_fields(d),
            "secs": _num(d.get("rollout_seconds")),
            **_recording_fields(r.get("recording")),
        })
    return rows


def _cost_fields(d: Mapping[str, Any]) -> dict[str, Any]:
    """The rollout's cost (every role's models: null and ``costunk`` when a provider did not say) and its judges' part."""
    if not d:
        return {"cost": None, "costunk": False, "jcost": None}
    judges = _num(d.get("judge_cost_usd", 0.0))
    cost = d.get("cost")
    if not isinstance(cost, Mapping) or not isinstance(cost.get("total"), Mapping):  # older files: the judges' cost alone
        return {"cost": judges, "costunk": False, "jcost": judges}
    total = _num(cost["total"].get("cost_usd"))
    return {"cost": total, "costunk": total is None, "jcost": judges}


def _recording_fields(rec: Any) -> dict[str, Any]:
    """A re-executed recording's similarity as recorded and whether it reproduced (``dynsteer rerun``), else nothing."""
    if not isinstance(rec, Mapping):
        return {}
    return {"rec": _num(rec.get("recorded_similarity")), "repro": rec.get("reproduced") if isinstance(rec.get("reproduced"), bool) else None}


def _crash(r: Mapping[str, Any]) -> str | None:
    if not r.get("exception_type"):
        return None
    last = str(r.get("traceback") or "").strip().splitlines()[-1:]
    return last[0] if last else str(r["exception_type"])


def run_folder(run: Path) -> str:
    """The name of the folder a replay writes one recorded run into: the run folder's name, or an Inspect log's name without
    ``.eval`` (the folder is its safe form, ``files.names``)."""
    return run.stem if run.suffix == ".eval" else run.name


def report_href(folder: str, base: str = "") -> str | None:
    """The relative URL of the scenario page in ``folder`` (its report folder below the replay's, as ``replay_summary.json``
    records it), seen from ``base`` (a folder below the replay's, '' for the replay's own); None when it is not below it."""
    parts = PurePosixPath(folder).parts
    above = PurePosixPath(base).parts if base else ()
    if parts[: len(above)] != above:
        return None
    return "/".join(quote(p, safe="") for p in parts[len(above):]) + "/" + REPORT_HTML


def replay_rows(per_scenario: Iterable[Mapping[str, Any]], base: Path, out: Path) -> list[dict[str, Any]]:
    """One row per replayed scenario (``replay_summary.json``'s ``per_scenario``); ``out`` is the replay's folder and
    ``base`` the folder the page is written in (``out`` or one run's folder below it). A row links to the report folder
    its record names (``folder``: the safe names the replay wrote, not the recorded names)."""
    rows: list[dict[str, Any]] = []
    below = "" if base == out else base.relative_to(out).as_posix()
    for r in per_scenario:
        folder = r.get("folder")
        usage = r.get("judge_usage") or {}
        vstop = r.get("virtual_stop")
        rows.append({
            "name": str(r["scenario"]),
            "href": report_href(folder, below) if isinstance(folder, str) else None,
            "cats": [str(c) for c in r.get("categories") or []],
            "outcome": str(r["outcome"]),
            "score": _num(r["score"]),
            "sim": _num(r.get("native_similarity")),
            "ms": _num(r.get("native_milestone_similarity")),
            "mf": _num(r.get("native_minefield_similarity")),
            **_stop_fields(r.get("stop")),
            "fe": error_words(r.get("first_error")),
            "crash": "",
            "steps": r.get("t"),
            "saved": None if vstop is None else vstop.get("saved_batches"),
            "calls": sum((usage.get("calls_by_tier") or {}).values()),
            "cost": _num(usage.get("cost_usd", 0.0)),
            "costunk": False,
            "jcost": _num(usage.get("cost_usd", 0.0)),
            "secs": _num(r.get("seconds")),
        })
    return rows


def totals(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's totals over its rows: outcomes, halts by reason, mean scores, steps saved, judge calls and cost, and what
    the rollouts' models cost in all (those whose cost is unknown counted apart)."""
    judged = [r["score"] for r in rows if r["score"] is not None and r["outcome"] not in ("crashed", "interrupted")]
    sims = [r["sim"] for r in rows if r["sim"] is not None]
    return {
        "scenarios": len(rows),
        "outcomes": dict(Counter(r["outcome"] for r in rows).most_common()),
        "halts_by_reason": dict(Counter(r["stop"] for r in rows if r["stop"]).most_common()),
        "mean_score": round(sum(judged) / len(judged), 4) if judged else None,
        "mean_similarity": round(sum(sims) / len(sims), 4) if sims else None,
        "similarity_unknown": sum(1 for r in rows if r["sim"] is None and r.get("simwhy")),  # left out of the mean, never 0
        "steps_saved": sum(r["saved"] or 0 for r in rows),
        "judge_calls": sum(r["calls"] or 0 for r in rows),
        "judge_cost_usd": round(sum(r.get("jcost") or 0.0 for r in rows), 6),
        "cost_usd": round(sum(r["cost"] or 0.0 for r in rows), 6),
        "cost_unknown": sum(1 for r in rows if r.get("costunk")),  # rollouts a provider did not price: left out, never 0
    }


def console_table(t: Mapping[str, Any], page: Path | None = None) -> str:
    """The totals as a short table for the end of the console output."""
    def counts(c: Mapping[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in c.items()) or "none"

    def mean(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    lines = [
        ("scenarios", f"{t['scenarios']}: {counts(t['outcomes'])}"),
        ("halts", f"{sum(t['halts_by_reason'].values())}: {counts(t['halts_by_reason'])}" if t["halts_by_reason"] else "none"),
        ("mean score", f"dynsteer {mean(t['mean_score'])}, ToolSandbox similarity {mean(t['mean_similarity'])}"
                       + (f" ({t['similarity_unknown']} unknown, left out)" if t.get("similarity_unknown") else "")),
        ("steps saved", str(t["steps_saved"])),
        ("judge calls", f"{t['judge_calls']} (cost ${t['judge_cost_usd']:.4f})"),
    ]
    if t.get("cost_usd") or t.get("cost_unknown"):  # a run whose models cost something (scripted runs cost nothing)
        lines.append(("cost", f"${t['cost_usd']:.4f} (agent, user and judges)"
                              + (f"; {t['cost_unknown']} rollout(s) unknown, left out" if t.get("cost_unknown") else "")))
    if page is not None:
        lines.append(("run page", str(page)))
    width = max(len(k) for k, _ in lines)
    return "\n".join(f"  {k.ljust(width)}  {v}" for k, v in lines)


def render_run_page(title: str, rows: Sequence[Mapping[str, Any]], *, kind: str = "run", links: Sequence[tuple[str, str]] = ()) -> str:
    """The run page of ``rows`` (from ``run_rows`` or ``replay_rows``); ``links`` are further (label, href) pairs."""
    from markupsafe import Markup

    script, digest = page_script()
    return str(environment(keep_trailing_newline=True).get_template("run_page.html.j2").render(
        title=title, kind=kind, totals=totals(rows), links=list(links), digest=digest,
        data=Markup(embed_json({"rows": list(rows)})), script=Markup(script),
    ))


def write_run_page(out: Path, title: str, rows: Sequence[Mapping[str, Any]], *, kind: str = "run",
                   links: Sequence[tuple[str, str]] = ()) -> Path:
    """Write ``out/index.html`` atomically; its path.

    Raises:
        OSError: It could not be written (nothing else is touched).
    """
    path = out / INDEX_HTML
    # A row links to a page that is there (a scenario Ctrl-C kept from starting, or a full disk, left none).
    rows = [r if not r["href"] or (out / unquote(r["href"])).is_file() else {**r, "href": None} for r in rows]
    write_text_atomic(path, render_run_page(title, rows, kind=kind, links=links))
    return path


def with_back_link(page: str, href: str = BACK_HREF) -> str:
    """A scenario page with a link back to its run page at the top of its body."""
    link = (f'<nav style="margin:0 0 10px"><a id="run-page-link" href="{href}">&larr; all scenarios of this run</a></nav>')
    head, sep, tail = page.partition("<body>")
    return head + sep + link + tail if sep else page
