"""The comparison you can drill into: one row per scenario across agents, each cell linking to that agent's
replayed report, the scenarios where the two evaluators disagree first.

``scenario_table`` makes the rows from the replayed trajectories of every agent; ``markdown_rows``
is the table for ``compare.md`` (every cell escaped by ``md_cell``, so a name holding ``|``, a
newline or a tag stays one cell of text); ``render_compare_page`` is ``index.html`` of the
comparison's folder. Pure: values in, text out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from dynsteer_hook.report.html import REPORT_HTML

_MD_SPECIAL = re.compile(r"([\\|*\[\]`~])")


def md_cell(value: Any) -> str:
    """Any value as the text of one Markdown table cell: ``|`` and Markdown's markers escaped, tags as entities,
    line breaks as spaces."""
    text = html.escape(str(value), quote=False)
    text = re.sub(r"\r\n|[\r\n\u2028\u2029\x0b\x0c\x85]", " ", text)
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_row(cells: Iterable[Any]) -> str:
    """One Markdown table row of escaped cells."""
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def replay_href(agent_folder: str, repeat: int, folder: str) -> str:
    """The replayed report of one trajectory, relative to the comparison's folder: the agent's folder (the safe form of its
    name, as compare writes it), the repeat, and the report folder the replay recorded (every part percent-encoded)."""
    parts = ("replays", agent_folder, f"repeat_{repeat}", *PurePosixPath(folder).parts, REPORT_HTML)
    return "/".join(quote(p, safe="") for p in parts)


def replay_index_href(agent_folder: str, repeat: int) -> str:
    """The run page of one agent's replayed repeat, relative to the comparison's folder."""
    return "/".join(quote(p, safe="") for p in ("replays", agent_folder, f"repeat_{repeat}")) + "/index.html"


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def scenario_table(cells: Iterable[Mapping[str, Any]], agents: Sequence[str], eps: float) -> list[dict[str, Any]]:
    """Rows per scenario from trajectory cells (agent, repeat, scenario, score, native, stop, href).

    Two agents are ranked in opposite orders when one evaluator puts the first ahead by more than
    ``eps`` and the other puts the second ahead by more than ``eps``; such a scenario is one where
    the evaluators disagree. Rows: those first, then by the widest gap between an agent's two
    mean scores, then by name.
    """
    by: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for c in cells:
        by.setdefault(str(c["scenario"]), {}).setdefault(str(c["agent"]), []).append(c)
    rows: list[dict[str, Any]] = []
    for scenario, per in by.items():
        means: dict[str, dict[str, float | None]] = {}
        entry: dict[str, Any] = {}
        for agent in agents:
            runs = sorted(per.get(agent, []), key=lambda c: int(c["repeat"]))
            d = _mean([float(c["score"]) for c in runs])
            n = _mean([float(c["native"]) for c in runs if c["native"] is not None])
            means[agent] = {"dynsteer": d, "native": n}
            entry[agent] = {"dynsteer": d, "native": n, "stops": sum(1 for c in runs if c["stop"]),
                            "trajectories": [{k: c[k] for k in ("repeat", "score", "native", "stop", "href")} for c in runs]}
        pairs = []
        for a, b in combinations([x for x in agents if None not in means[x].values()], 2):
            ds = float(means[a]["dynsteer"] or 0) - float(means[b]["dynsteer"] or 0)
            dn = float(means[a]["native"] or 0) - float(means[b]["native"] or 0)
            if (ds > eps and dn < -eps) or (ds < -eps and dn > eps):
                pairs.append([a, b])
        gaps = [abs(d - n) for m in means.values() if (d := m["dynsteer"]) is not None and (n := m["native"]) is not None]
        rows.append({"scenario": scenario, "disagree": bool(pairs), "opposite_pairs": pairs,
                     "gap": round(max(gaps), 6) if gaps else None, "agents": entry})
    rows.sort(key=lambda r: (not r["disagree"], -(r["gap"] or 0.0), r["scenario"]))
    return rows


def _score(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def markdown_rows(rows: Sequence[Mapping[str, Any]], agents: Sequence[str]) -> list[str]:
    """The per-scenario table of ``compare.md``: per agent the DynSTEER and native mean, the stops, and a link per
    repeat to its replayed report."""
    head = ["scenario", "evaluators disagree"] + [f"{a} {what}" for a in agents for what in ("DynSTEER", "native", "stops", "reports")]
    lines = [md_row(head), "|" + "---|" * len(head)]
    for r in rows:
        cells = [md_cell(r["scenario"]), "yes" if r["disagree"] else "no"]
        for a in agents:
            e = r["agents"][a]
            links = " ".join(f"[{t['repeat']}]({t['href']})" for t in e["trajectories"]) or "-"
            cells += [_score(e["dynsteer"]), _score(e["native"]), str(e["stops"]), links]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_compare_page(result: Mapping[str, Any]) -> str:
    """``index.html`` of a comparison: the agents' means, then the per-scenario table with a link per trajectory."""
    from dynsteer_hook.report.templating import environment

    agents = list(result["agents"])
    return str(environment(keep_trailing_newline=True).get_template("compare_page.html.j2").render(
        result=result, agents=agents, rows=result.get("per_scenario", []), score=_score, index_href=replay_index_href,
        disagreeing=sum(1 for r in result.get("per_scenario", []) if r["disagree"]),
    ))
