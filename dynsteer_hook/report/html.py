"""Static HTML reports a person reads: one page per evaluated run, one summary page per comparison.

Pure rendering (values in, text out). Each page is self-contained (styles and drawings
inline, no script, no external resource), so it opens from disk anywhere. Every string an
agent, a user, a tool or a judge produced is escaped: a page shows hostile text, it never
runs it.

The run page draws the milestone graph (settled, failed, on the frontier, pending; the
minefields, the one that stopped the run, and the dominator anchor of the stop), the stage
timeline on both clocks (each stage's evidence window, its four dimension scores and tiers,
the first error and the stop marked), and the rationale of every stage.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.config import DIMENSIONS
from dynsteer_hook.model.records import Report

REPORT_HTML = "dynsteer_report.html"
"""The run page's file name, beside ``dynsteer_report.json`` and ``.md``."""

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px auto;max-width:1180px;color:#1d232a;padding:0 16px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde3ea;padding-bottom:4px}
.verdict{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;color:#fff}
.v-completed{background:#2e8540}.v-halted{background:#c0392b}.v-incomplete{background:#b7791f}.v-crashed,.v-interrupted{background:#555}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{border:1px solid #dde3ea;padding:4px 7px;text-align:left;vertical-align:top}
th{background:#f3f6f9}td.num{text-align:right;font-variant-numeric:tabular-nums}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px}.facts dt{color:#5b6672}.facts dd{margin:0}
svg text{font:12px system-ui,sans-serif}.node rect{stroke-width:1.5}.node text{pointer-events:none}
.settled rect{fill:#d9f2df;stroke:#2e8540}.failed rect{fill:#fbdcd8;stroke:#c0392b}.frontier rect{fill:#dce9fb;stroke:#2b6cb0}
.pending rect{fill:#f1f3f5;stroke:#8a96a3}.start rect{fill:#fff;stroke:#1d232a}.anchor rect{stroke-width:4;stroke-dasharray:5 3}
.mine polygon{fill:#fff3f2;stroke:#c0392b}.mine.hit polygon{fill:#c0392b}.mine.hit text{fill:#fff}
.edge{stroke:#8a96a3;stroke-width:1.4;fill:none}.legend span{display:inline-block;margin-right:14px}
.sw{display:inline-block;width:12px;height:12px;border:1.5px solid;vertical-align:-2px;margin-right:4px;border-radius:3px}
.bar{fill:#2b6cb0}.bar.low{fill:#c0392b}.win{fill:#2b6cb0;opacity:.13}.err{stroke:#b7791f;stroke-width:2}.stop{stroke:#c0392b;stroke-width:2.5}
details{margin:4px 0}summary{cursor:pointer}.muted{color:#5b6672}code{background:#f3f6f9;padding:0 3px;border-radius:3px}
"""


def esc(value: Any) -> str:
    """Any value as escaped text (untrusted by default)."""
    return html.escape(str(value), quote=True)


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">'
            f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; img-src data:">'
            f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>{body}</body></html>\n")


def _clip(text: Any, limit: int = 60) -> str:
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


# -- the milestone graph ------------------------------------------------------------


def _layers(bp: Blueprint) -> dict[str, int]:
    """Longest-path layer of each milestone from the start node (layer 0)."""
    preds: dict[str, list[str]] = {m.id: [] for m in bp.milestones}
    for e in bp.edges:
        preds[e.target].append(e.source)
    layer: dict[str, int] = {}

    def depth(node: str, seen: frozenset[str] = frozenset()) -> int:
        if node in layer:
            return layer[node]
        if node in seen:  # a cycle cannot pass validation; guard anyway
            return 1
        layer[node] = 1 + max((depth(p, seen | {node}) for p in preds[node]), default=0)
        return layer[node]

    for m in bp.milestones:
        depth(m.id)
    return layer


def milestone_states(report: Report, bp: Blueprint, fail_threshold: float) -> dict[str, str]:
    """Each milestone's state on the page: settled, failed (settled by a failing stage), frontier or pending."""
    failed = {s.milestone for s in report.stages if s.composite < fail_threshold}
    out: dict[str, str] = {}
    for m in bp.milestones:
        if m.id in failed:
            out[m.id] = "failed"
        elif m.id in report.settled:
            out[m.id] = "settled"
        elif m.id in report.frontier:
            out[m.id] = "frontier"
        else:
            out[m.id] = "pending"
    return out


def render_graph(report: Report, bp: Blueprint, fail_threshold: float) -> str:
    """The milestone DAG as inline SVG: nodes by layer, edges, minefields beside, the stop's anchor outlined."""
    layers = _layers(bp)
    states = milestone_states(report, bp, fail_threshold)
    anchor = report.stop.anchor if report.stop else None
    columns: dict[int, list[str]] = {0: ["<s0>"]}
    for m in bp.milestones:
        columns.setdefault(layers[m.id], []).append(m.id)
    w, h, dx, dy = 170, 38, 215, 60
    pos: dict[str, tuple[int, int]] = {}
    for col, ids in sorted(columns.items()):
        for row, node in enumerate(ids):
            pos[node] = (20 + col * dx, 20 + row * dy)
    mines_x = 20 + (max(columns) + 1) * dx
    rows = max(len(ids) for ids in columns.values())
    height = 40 + max(rows, len(bp.minefields)) * dy
    width = mines_x + (w + 20 if bp.minefields else 0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="dag" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="milestone graph"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             f'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#8a96a3"/></marker></defs>']
    targets = {e.target for e in bp.edges}
    links = [(e.source, e.target) for e in bp.edges] + [("<s0>", m.id) for m in bp.milestones if m.id not in targets]
    for a, b in links:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        parts.append(f'<path class="edge" marker-end="url(#arrow)" d="M{x1 + w},{y1 + h // 2} C{x1 + w + 30},{y1 + h // 2} {x2 - 30},{y2 + h // 2} {x2},{y2 + h // 2}"/>')
    by_id = {m.id: m for m in bp.milestones}
    for node, (x, y) in pos.items():
        state = "start" if node == "<s0>" else states[node]
        cls = f"node {state}" + (" anchor" if node == anchor else "")
        label = node if node == "<s0>" else f"{node}"
        sub = "" if node == "<s0>" else by_id[node].tool
        tip = "start" if node == "<s0>" else f"{node}: {by_id[node].tool} ({by_id[node].role}) {by_id[node].description}"
        parts.append(f'<g class="{cls}" data-node="{esc(node)}" data-state="{state}"><title>{esc(tip)}</title>'
                     f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="7"/>'
                     f'<text x="{x + 8}" y="{y + 15}">{esc(_clip(label, 24))}</text>'
                     f'<text x="{x + 8}" y="{y + 30}" class="muted" fill="#5b6672">{esc(_clip(sub, 26))}</text></g>')
    hit = report.stop.minefield if report.stop else None
    for i, f in enumerate(bp.minefields):
        x, y = mines_x, 20 + i * dy
        cls = "mine hit" if f.id == hit else "mine"
        points = f"{x},{y + h // 2} {x + 14},{y} {x + w - 14},{y} {x + w},{y + h // 2} {x + w - 14},{y + h} {x + 14},{y + h}"
        parts.append(f'<g class="{cls}" data-minefield="{esc(f.id)}"><title>{esc(f"{f.id}: {f.tool}: {f.reason}")}</title>'
                     f'<polygon points="{points}"/><text x="{x + 18}" y="{y + 23}">{esc(_clip(f.tool, 24))}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


# -- the stage timeline --------------------------------------------------------------


def render_timeline(report: Report, fail_threshold: float) -> str:
    """Closed actions along t (with their k span): stage windows, dimension scores, first error and stop."""
    t_max = max([report.t, *(s.t for s in report.steps), 1])
    step_w, left, top = max(28, min(60, 900 // t_max)), 60, 18
    band = 22
    height = top + (len(report.stages) + 2) * band + 52
    width = left + t_max * step_w + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="timeline" width="{width}" height="{height}" role="img" aria-label="stage timeline">']
    axis_y = height - 42
    for sp in report.steps:
        x = left + (sp.t - 1) * step_w
        tip = f"t={sp.t}, k={sp.k_start}-{sp.k_end}: {sp.kind} " + ", ".join(sp.tools)
        colour = "#c0392b" if sp.structural or sp.failed else "#8a96a3"
        parts.append(f'<g data-step="{sp.t}"><title>{esc(tip)}</title>'
                     f'<rect x="{x + 2}" y="{axis_y - 8}" width="{step_w - 4}" height="8" fill="{colour}"/>'
                     f'<text x="{x + 2}" y="{axis_y + 14}">{sp.t}</text>'
                     f'<text x="{x + 2}" y="{axis_y + 27}" fill="#5b6672">{sp.k_start}</text></g>')
    parts.append(f'<text x="4" y="{axis_y + 14}">t</text><text x="4" y="{axis_y + 27}" fill="#5b6672">k from</text>')
    for i, st in enumerate(report.stages):
        y = top + i * band
        x0 = left + max(st.window.t_start - 1, 0) * step_w
        x1 = left + st.t * step_w
        parts.append(f'<g class="stage" data-stage="{esc(st.milestone)}"><title>{esc(f"{st.milestone}: S={st.composite:.3f}, window t=[{st.window.t_start},{st.window.t_end}] k=[{st.window.k_start},{st.window.k_end}], anchor {st.window.anchor}")}</title>'
                     f'<rect class="win" x="{x0}" y="{y}" width="{max(x1 - x0, 4)}" height="{band - 4}"/>'
                     f'<text x="4" y="{y + 13}">{esc(_clip(st.milestone, 8))}</text>')
        for j, d in enumerate(DIMENSIONS):
            v = st.scores.get(d, 0.0)
            bh = max(1.0, (band - 6) * v)
            cls = "bar low" if v < fail_threshold else "bar"
            parts.append(f'<rect class="{cls}" x="{x1 - 4 * 5 + j * 5}" y="{y + band - 4 - bh:.1f}" width="4" height="{bh:.1f}"><title>{esc(f"{d}: {v:.3f} (tier {st.tiers[d].used})")}</title></rect>')
        parts.append("</g>")
    if report.first_error is not None:
        xe = left + (report.first_error.t - 0.5) * step_w
        parts.append(f'<line class="err" data-mark="first-error" x1="{xe}" y1="4" x2="{xe}" y2="{axis_y}"><title>{esc(f"first error at t={report.first_error.t}, k={report.first_error.k}")}</title></line>')
    if report.stop is not None:
        xs = left + report.stop.t * step_w + (step_w / 2 if report.stop.reason == "fatal_minefield" else 0)
        parts.append(f'<line class="stop" data-mark="stop" x1="{xs}" y1="4" x2="{xs}" y2="{axis_y}"><title>{esc(f"stop {report.stop.reason} at t={report.stop.t}, k={report.stop.k}")}</title></line>')
    parts.append("</svg>")
    return "".join(parts)


def _facts(report: Report) -> str:
    rows = [("Outcome", f'<span class="verdict v-{esc(report.outcome)}">{esc(report.outcome)}</span> score {report.score:.3f}'),
            ("Clocks", f"k = {report.k} raw events, t = {report.t} closed actions"),
            ("Settled", esc(", ".join(report.settled) or "none")), ("Unsettled", esc(", ".join(report.unsettled) or "none"))]
    if report.stop is not None:
        s = report.stop
        rows.append(("Stop", f"<b>{esc(s.reason)}</b> at k={s.k}, t={s.t}; anchor {esc(s.anchor)}; causal dimension {esc(s.dimension)}<br>"
                             f'<span class="muted">{esc(s.detail)}</span>'))
    if report.first_error is not None:
        f = report.first_error
        rows.append(("First error", f"k={f.k}, t={f.t} (stage {esc(f.stage or '-')}, {esc(f.dimension)}"
                                    f"{', ' + esc(f.cause) if f.cause else ''}): {esc(f.detail)}"))
    if report.faults:
        items = "".join(f"<li>k={fr.k}, t={fr.t}: {esc(fr.cause)} ({esc(fr.dimension)}, stage {esc(fr.stage or '-')}, "
                        f"{'recovered' if fr.recovered else 'not recovered'}): {esc(fr.detail)}</li>" for fr in report.faults[:50])
        rows.append(("Faulty steps", f'<ol class="faults" data-faults="{report.fault_count}">{items}</ol>'))
    u = report.judge_usage
    rows.append(("Judges", f"calls by tier {esc(u.calls_by_tier)}, tokens {u.tokens}, cost ${u.cost_usd:.6f}, degraded {u.degraded}"))
    return '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def _stage_table(report: Report) -> str:
    head = "".join(f"<th>{esc(d)}</th>" for d in DIMENSIONS)
    out = [f"<table id='stages'><tr><th>t</th><th>milestone</th><th>window t</th><th>window k</th><th>S<sub>t</sub></th>{head}<th>rationale</th></tr>"]
    for st in report.stages:
        dims = "".join(f'<td class="num">{st.scores[d]:.3f}<br><span class="muted">tier {st.tiers[d].used}</span></td>' for d in DIMENSIONS)
        why = "".join(f"<div><b>{esc(d)}</b>: {esc(st.rationale.get(d, ''))}</div>" for d in DIMENSIONS)
        out.append(f"<tr><td class='num'>{st.t}</td><td>{esc(st.milestone)}<br><span class='muted'>{esc(st.tool)}</span></td>"
                   f"<td>[{st.window.t_start}, {st.window.t_end}]</td><td>[{st.window.k_start}, {st.window.k_end}]</td>"
                   f"<td class='num'>{st.composite:.3f}</td>{dims}<td><details><summary>why</summary>{why}</details></td></tr>")
    out.append("</table>")
    return "".join(out) if report.stages else "<p>No milestone settled.</p>"


def render_run(report: Report, blueprint: Blueprint) -> str:
    """The HTML page of one evaluated run (a stage fails below the run's own ``theta_pass``)."""
    fail_threshold = float(report.config.get("theta_pass", 0.7))
    legend = ('<p class="legend"><span><i class="sw" style="background:#d9f2df;border-color:#2e8540"></i>settled</span>'
              '<span><i class="sw" style="background:#fbdcd8;border-color:#c0392b"></i>settled by a failing stage</span>'
              '<span><i class="sw" style="background:#dce9fb;border-color:#2b6cb0"></i>on the frontier</span>'
              '<span><i class="sw" style="background:#f1f3f5;border-color:#8a96a3"></i>pending</span>'
              '<span><i class="sw" style="background:#fff3f2;border-color:#c0392b"></i>minefield</span>'
              '<span>dashed outline: anchor of the stop</span></p>')
    body = (f"<h1>DynSTEER report: {esc(report.task or '(unnamed task)')}</h1>{_facts(report)}"
            f"<h2>Milestone graph</h2>{legend}<div style='overflow-x:auto'>{render_graph(report, blueprint, fail_threshold)}</div>"
            f"<h2>Stage timeline</h2><p class='muted'>Shaded: each stage's evidence window; bars: correctness, efficiency, safety, "
            f"tool compliance; amber line: first error; red line: stop.</p><div style='overflow-x:auto'>{render_timeline(report, fail_threshold)}</div>"
            f"<h2>Stages</h2>{_stage_table(report)}")
    return _page(f"DynSTEER report: {report.task}", body)


# -- the comparison summary ----------------------------------------------------------


def _strip_plot(series: Mapping[str, Sequence[float]], title: str) -> str:
    names = list(series)
    width, row, left = 640, 34, 150
    height = 30 + row * len(names) + 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" height="{height}" role="img" aria-label="{esc(title)}">']
    for k in range(0, 11, 2):
        x = left + (width - left - 20) * k / 10
        parts.append(f'<line x1="{x}" y1="20" x2="{x}" y2="{height - 20}" stroke="#eef1f4"/><text x="{x - 8}" y="{height - 6}">{k / 10:.1f}</text>')
    for i, name in enumerate(names):
        y = 30 + i * row
        parts.append(f'<text x="4" y="{y + 4}">{esc(_clip(name, 20))}</text>')
        values = series[name]
        for j, v in enumerate(values):
            x = left + (width - left - 20) * min(max(v, 0.0), 1.0)
            jitter = ((j * 7) % 11 - 5) * 1.4
            parts.append(f'<circle data-point="{esc(name)}" cx="{x:.1f}" cy="{y + jitter:.1f}" r="3" fill="#2b6cb0" fill-opacity=".45"/>')
        if values:
            mean = sum(values) / len(values)
            x = left + (width - left - 20) * min(max(mean, 0.0), 1.0)
            parts.append(f'<line x1="{x:.1f}" y1="{y - 12}" x2="{x:.1f}" y2="{y + 12}" stroke="#c0392b" stroke-width="2"><title>mean {mean:.4f}</title></line>')
    parts.append("</svg>")
    return "".join(parts)


def _histogram(values: Sequence[float], bins: int = 10) -> str:
    width, height, left = 640, 180, 40
    counts = [0] * bins
    for v in values:
        counts[min(int(min(max(v, 0.0), 1.0) * bins), bins - 1)] += 1
    top = max(counts or [1]) or 1
    bw = (width - left - 20) / bins
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" id="stop-histogram" width="{width}" height="{height}" role="img" aria-label="stop progress histogram">']
    for i, c in enumerate(counts):
        bh = (height - 50) * c / top
        x = left + i * bw
        parts.append(f'<rect data-bin="{i}" x="{x + 1:.1f}" y="{height - 30 - bh:.1f}" width="{bw - 2:.1f}" height="{bh:.1f}" fill="#2b6cb0"><title>{c} stop(s) at p in [{i / bins:.1f}, {(i + 1) / bins:.1f})</title></rect>')
        parts.append(f'<text x="{x:.1f}" y="{height - 14}">{i / bins:.1f}</text>')
    parts.append('<text x="4" y="14" class="muted">stops</text></svg>')
    return "".join(parts)


def render_compare(result: Mapping[str, Any], markdown_tables: str) -> str:
    """The HTML summary of a comparison: the tables, score distributions per agent and evaluator, stop progress."""
    plots = ""
    dist = result.get("distributions", {})
    for evaluator in ("dynsteer", "native"):
        series = {a: dist.get(a, {}).get(evaluator, []) for a in result["agents"]}
        plots += f"<h3>{esc(evaluator)} scores per agent</h3>{_strip_plot(series, evaluator + ' scores')}"
    progress = [p for a in dist.values() for p in a.get("stop_progress", [])]
    tables = _markdown_tables_to_html(markdown_tables)
    body = (f"<h1>DynSTEER comparison</h1>{tables}<h2>Score distributions</h2>{plots}"
            f"<h2>Stop progress of halted runs (p = b<sub>stop</sub> / b<sub>full</sub>)</h2>{_histogram(progress)}")
    return _page("DynSTEER comparison", body)


def _markdown_tables_to_html(markdown: str) -> str:
    """The comparison's Markdown (headings, paragraphs, pipe tables) as escaped HTML."""
    out: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if table:
            head, *rows = table
            out.append("<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows) + "</table>")
            table.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            # Cells are escaped Markdown (a literal | is \|, a tag's < is &lt;): split on the bare pipes, then unescape.
            cells = [html.unescape(re.sub(r"\\(.)", r"\1", c.strip())) for c in re.findall(r"((?:\\.|[^|\\])*)\|", line.strip()[1:])]
            if not all(set(c) <= {"-", ":"} for c in cells):
                table.append(cells)
            continue
        flush()
        if line.startswith("# "):
            continue
        if line.startswith("## "):
            out.append(f"<h2>{esc(line[3:])}</h2>")
        elif line.strip():
            out.append(f"<p>{esc(line)}</p>")
    flush()
    return "".join(out)
