"""Static HTML reports a person reads: the summary page of a comparison; the page of one evaluated run is
``scenario_page`` (from templates), whose names are also found here.

Pure rendering (values in, text out). Each page is self-contained (styles and drawings
inline, no script, no external resource), so it opens from disk anywhere. Every string an
agent, a user, a tool or a judge produced is escaped: a page shows hostile text, it never
runs it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from dynsteer_hook.report.layout import milestone_states
from dynsteer_hook.report.scenario_page import REPORT_HTML, render_run, write_html_report

__all__ = ["REPORT_HTML", "esc", "milestone_states", "render_compare", "render_run", "write_html_report"]

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
