"""Where the scenario page draws things: the milestone graph's boxes and arrows, the stage timeline's rows and marks.

Numbers and plain text only (the template escapes every text): each label is wrapped onto as
many lines as it needs, so no name is ever cut; the boxes grow to hold them. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.config import DIMENSIONS
from dynsteer_hook.model.records import Report

LINE = 15
"""Height of one line of label text in the drawings."""


def wrap(text: str, width: int) -> list[str]:
    """``text`` on lines of at most ``width`` characters, broken after ``_``, ``.``, ``-``, ``:`` or spaces where it can, else
    anywhere; every character is kept."""
    lines: list[str] = []
    rest = str(text)
    while len(rest) > width:
        cut = max(rest.rfind(c, 0, width) for c in "_.-: /")
        cut = cut + 1 if cut >= width // 3 else width
        lines.append(rest[:cut])
        rest = rest[cut:]
    lines.append(rest)
    return lines


@dataclass
class Box:
    """One node of the graph: its place, its label's lines, its state and its tooltip."""

    node: str
    x: int
    y: int
    w: int
    h: int
    state: str
    lines: list[str]
    sub: list[str]
    tip: str
    anchor: bool = False
    hit: bool = False


@dataclass
class Graph:
    width: int
    height: int
    boxes: list[Box]
    mines: list[Box]
    edges: list[str] = field(default_factory=list)


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


W, CHARS, GAP_X, GAP_Y = 180, 24, 44, 18


def graph(report: Report, bp: Blueprint, fail_threshold: float) -> Graph:
    """The milestone DAG: nodes by layer (columns), each box as tall as its wrapped name and tool, minefields in a last column."""
    layers = _layers(bp)
    states = milestone_states(report, bp, fail_threshold)
    anchor = report.stop.anchor if report.stop else None
    hit = report.stop.minefield if report.stop else None
    columns: dict[int, list[str]] = {0: ["<s0>"]}
    for m in bp.milestones:
        columns.setdefault(layers[m.id], []).append(m.id)
    by_id = {m.id: m for m in bp.milestones}
    boxes: dict[str, Box] = {}
    bottom = 0
    for col, ids in sorted(columns.items()):
        y = 20
        for node in ids:
            lines = ["start"] if node == "<s0>" else wrap(node, CHARS)
            sub = [] if node == "<s0>" else wrap(by_id[node].tool, CHARS + 2)
            h = 12 + LINE * (len(lines) + len(sub))
            ms = by_id.get(node)
            tip = "start" if ms is None else f"{ms.id}: {ms.tool} ({ms.role}) {ms.description}"
            state = "start" if ms is None else states[node]
            boxes[node] = Box(node, 20 + col * (W + GAP_X), y, W, h, state, lines, sub, tip, anchor=node == anchor)
            y += h + GAP_Y
        bottom = max(bottom, y)
    mines_x = 20 + (max(columns) + 1) * (W + GAP_X)
    mines: list[Box] = []
    y = 20
    for f in bp.minefields:
        lines = wrap(f.tool, CHARS - 2)
        sub = wrap(f.id, CHARS)
        h = 12 + LINE * (len(lines) + len(sub))
        mines.append(Box(f.id, mines_x, y, W, h, "mine", lines, sub, f"{f.id}: {f.tool}: {f.reason}", hit=f.id == hit))
        y += h + GAP_Y
    bottom = max(bottom, y)
    targets = {e.target for e in bp.edges}
    links = [(e.source, e.target) for e in bp.edges] + [("<s0>", m.id) for m in bp.milestones if m.id not in targets]
    edges = []
    for a, b in links:
        s, t = boxes[a], boxes[b]
        y1, y2 = s.y + s.h // 2, t.y + t.h // 2
        edges.append(f"M{s.x + s.w},{y1} C{s.x + s.w + 22},{y1} {t.x - 22},{y2} {t.x},{y2}")
    width = mines_x + (W + 20 if bp.minefields else 0)
    return Graph(width=width, height=bottom + 10, boxes=list(boxes.values()), mines=mines, edges=edges)


@dataclass
class Row:
    """One stage of the timeline: its label lines, its evidence window and its four dimension bars."""

    milestone: str
    y: int
    h: int
    lines: list[str]
    x0: float
    x1: float
    tip: str
    bars: list[dict[str, object]]


@dataclass
class Timeline:
    width: int
    height: int
    left: int
    step_w: int
    axis_y: int
    rows: list[Row]
    steps: list[dict[str, object]]
    marks: list[dict[str, object]]


def _step_state(report: Report, t: int, failed: int, structural: int, settled: list[str], repeated: set[int]) -> str:
    if structural or failed:
        return "failed"
    if settled:
        return "settled"
    return "repeat" if t in repeated else "idle"


def timeline(report: Report, fail_threshold: float) -> Timeline:
    """Closed actions along t (with their k span): each step coloured by what it did, stage windows, dimension bars, marks."""
    stop_t = report.stop.t if report.stop else 0
    t_max = max([report.t, stop_t, *(s.t for s in report.steps), 1])
    step_w = max(26, min(60, 900 // t_max))
    left, top = 190, 18
    repeated = {t for r in (report.transcript.repeats if report.transcript else []) for t in range(r.t_first, r.t_last + 1)}
    rows: list[Row] = []
    y = top
    for st in report.stages:
        lines = wrap(st.milestone, 24)
        h = max(22, LINE * len(lines) + 6)
        x0 = left + max(st.window.t_start - 1, 0) * step_w
        x1 = left + st.t * step_w
        tip = (f"{st.milestone}: S={st.composite:.3f}, window t=[{st.window.t_start},{st.window.t_end}] "
               f"k=[{st.window.k_start},{st.window.k_end}], anchor {st.window.anchor}")
        bars = []
        for j, d in enumerate(DIMENSIONS):
            v = st.scores.get(d, 0.0)
            bh = max(1.0, (h - 6) * v)
            bars.append({"x": x1 - 20 + j * 5, "y": round(y + h - 4 - bh, 1), "h": round(bh, 1), "low": v < fail_threshold,
                         "tip": f"{d}: {v:.3f} (tier {st.tiers[d].used})"})
        rows.append(Row(st.milestone, y, h, lines, x0, max(x1 - x0, 4), tip, bars))
        y += h + 4
    axis_y = y + 30
    steps: list[dict[str, object]] = []
    for sp in report.steps:
        state = _step_state(report, sp.t, sp.failed, sp.structural, sp.settled, repeated)
        what = ", ".join(sp.tools) if sp.tools else "message to the user"
        steps.append({"t": sp.t, "k": sp.k_start, "x": left + (sp.t - 1) * step_w, "state": state,
                      "tip": f"t={sp.t}, k={sp.k_start}-{sp.k_end}: {what}" + (f"; settled {', '.join(sp.settled)}" if sp.settled else "")})
    if report.stop is not None and report.stop.reason == "fatal_minefield":
        s = report.stop
        steps.append({"t": s.t, "k": s.k, "x": left + (s.t - 1) * step_w, "state": "blocked",
                      "tip": f"t={s.t}, k={s.k}: {s.tool} blocked before it executed ({s.minefield})"})
    marks: list[dict[str, object]] = []
    if report.first_error is not None:
        f = report.first_error
        marks.append({"kind": "first-error", "x": left + (f.t - 0.5) * step_w, "tip": f"first error at t={f.t}, k={f.k}"})
    if report.stop is not None:
        s = report.stop
        x = left + (s.t - 0.5) * step_w if s.reason == "fatal_minefield" else left + s.t * step_w
        marks.append({"kind": "stop", "x": x, "tip": f"stop {s.reason} at t={s.t}, k={s.k}"})
    return Timeline(width=left + t_max * step_w + 40, height=axis_y + 44, left=left, step_w=step_w, axis_y=axis_y, rows=rows,
                    steps=steps, marks=marks)
