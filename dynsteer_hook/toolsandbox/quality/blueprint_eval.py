"""Blueprint compilation quality against the expert reference (paper Table 2).

For each scenario a blueprint (compiled from its public view, or read from a directory)
is compared with the reference graph of ``reference`` (derived from ToolSandbox's hidden
milestones and minefields, which only this metric code reads). Metrics, overall and per
ToolSandbox scenario category (an augmented variant is not counted again under
THREE_DISTRACTION_TOOLS, as in ToolSandbox's own summaries):

* **Tool operation precision / recall / F1** (``op_*``). Each blueprint milestone and each
  reference node naming a tool is one tool operation, named by its agent-facing tool; roles
  are not compared because the reference has none. Messages to the user
  (``@agent_message``) are not tool operations and are left out on both sides: ToolSandbox
  names one only where a milestone checks the agent's reply, and names none for
  insufficient-information tasks, which it checks by minefields alone. Per scenario,
  operations are matched as multisets: TP = sum over tools of min(#blueprint, #reference),
  FP and FN the surpluses. *Micro* pools TP/FP/FN over all scenarios; *macro* averages
  per-class precision, recall and F1 over tool-operation classes (execution-facing tool
  names, so the eight variants of a tool form one class), a class's counts being pooled
  over the group's scenarios (an undefined ratio counts as 0). ``op_all_*`` is the same
  micro measure with ``@agent_message`` counted as one more operation (the former headline).
* **Ask-or-decline precision / recall / F1** (``ask_*``), pooled over scenarios: a blueprint
  *asks* when it requires a message to the user with a ``content`` predicate and no tool
  operation (the shape the generator gives a task it cannot carry out); the truth is
  ToolSandbox's INSUFFICIENT_INFORMATION category.
* **Split**: every metric is also reported per part of ``split.split_of`` (``dev``, the part
  the generator's rules were written against, and ``held-out``).
* **Fatal minefield precision / recall / F1**, pooled over (scenario, tool) pairs of
  fatal minefields in the blueprint and in the reference.
* **Graph-edit-distance similarity** 1 - GED(B, R) / (|V_B| + |E_B| + |V_R| + |E_R|), where
  both graphs are transitively reduced, nodes carry their tool name (substituting nodes
  of different tools costs 1), every insertion or deletion costs 1, and an empty pair
  scores 1. GED is networkx's exact search, bounded by ``timeout`` seconds and by the
  denominator; on timeout the best distance found so far is used.
* **Valid DAG rate**: blueprints that pass contract validation (eq. 2: schema, acyclicity,
  binding consistency).

F1 is 2TP / (2TP + FP + FN); a ratio with a zero denominator is reported as null.
"""

from __future__ import annotations

import csv
import io
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL, Blueprint
from dynsteer_hook.model.contract import validate_blueprint
from dynsteer_hook.toolsandbox.quality.reference import ReferenceGraph
from dynsteer_hook.toolsandbox.quality.split import in_split, split_of

ALL = "ALL_CATEGORIES"
INSUFFICIENT = "INSUFFICIENT_INFORMATION"
_AUGMENTED = {
    "TOOL_NAME_SCRAMBLED", "TOOL_DESCRIPTION_SCRAMBLED", "ARG_DESCRIPTION_SCRAMBLED", "ARG_TYPE_SCRAMBLED", "ARG_NAME_SCRAMBLED",
}


@dataclass
class Tally:
    """True positives, false positives and false negatives."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: Tally) -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn

    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    def f1(self) -> float | None:
        denom = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denom if denom else None


@dataclass
class ScenarioScore:
    """The comparison of one blueprint with its reference."""

    name: str
    categories: tuple[str, ...]
    ops: Tally  # tool operations only
    ops_by_class: dict[str, Tally]
    mines: Tally
    ged_similarity: float
    valid: bool
    compile_ms: float | None = None
    stale: bool = False
    ops_all: Tally = field(default_factory=Tally)  # @agent_message counted as an operation
    asks: Tally = field(default_factory=Tally)  # ask-or-decline shape against INSUFFICIENT_INFORMATION
    split: str = "dev"
    predicted: list[str] = field(default_factory=list)
    reference: list[str] = field(default_factory=list)
    predicted_mines: list[str] = field(default_factory=list)
    reference_mines: list[str] = field(default_factory=list)


def _multiset_tally(pred: Counter[str], ref: Counter[str]) -> Tally:
    tp = sum((pred & ref).values())
    return Tally(tp, sum(pred.values()) - tp, sum(ref.values()) - tp)


def _reduced(nodes: Iterable[tuple[str, str]], edges: Iterable[tuple[str, str]]) -> nx.DiGraph:
    g = nx.DiGraph()
    for node, label in nodes:
        g.add_node(node, label=label)
    g.add_edges_from(edges)
    if nx.is_directed_acyclic_graph(g):
        reduced = nx.transitive_reduction(g)
        reduced.add_nodes_from(g.nodes(data=True))
        return reduced
    return g


def ged_similarity(a: nx.DiGraph, b: nx.DiGraph, timeout: float = 2.0) -> float:
    """1 - GED / (|V_a| + |E_a| + |V_b| + |E_b|), exact GED bounded by ``timeout`` seconds."""
    size: int = a.number_of_nodes() + a.number_of_edges() + b.number_of_nodes() + b.number_of_edges()
    if size == 0:
        return 1.0
    ged: float | None = nx.graph_edit_distance(a, b, node_match=lambda x, y: x["label"] == y["label"], timeout=timeout, upper_bound=size)
    distance = float(size) if ged is None else float(ged)
    return 1.0 - distance / size


def asks_or_declines(bp: Blueprint) -> bool:
    """Whether the blueprint only requires a message to the user that its ``content`` predicate constrains."""
    tools = [m for m in bp.milestones if m.tool != AGENT_MESSAGE_TOOL]
    return not tools and any(p.arg == "content" for m in bp.milestones for p in m.args)


def score_scenario(bp: Blueprint, ref: ReferenceGraph, *, ged_timeout: float = 2.0, compile_ms: float | None = None,
                   view_hash: str | None = None) -> ScenarioScore:
    """Compare one blueprint with the reference of the same scenario."""
    pred_all = Counter(m.tool for m in bp.milestones)
    gold_all = Counter(n.tool for n in ref.nodes)
    pred = Counter({t: n for t, n in pred_all.items() if t != AGENT_MESSAGE_TOOL})
    gold = Counter({t: n for t, n in gold_all.items() if t != AGENT_MESSAGE_TOOL})
    asks = asks_or_declines(bp)
    insufficient = INSUFFICIENT in ref.categories
    by_class: dict[str, Tally] = {}
    for tool in set(pred) | set(gold):
        by_class[ref.canonical_name(tool)] = _multiset_tally(Counter({tool: pred[tool]}), Counter({tool: gold[tool]}))
    pred_mines = {f.tool for f in bp.minefields if f.fatal}
    gold_mines = set(ref.fatal_minefields)
    mines = Tally(len(pred_mines & gold_mines), len(pred_mines - gold_mines), len(gold_mines - pred_mines))
    g_pred = _reduced(((m.id, m.tool) for m in bp.milestones), ((e.source, e.target) for e in bp.edges))
    g_ref = _reduced(((n.id, n.tool) for n in ref.nodes), ref.edges)
    return ScenarioScore(
        name=ref.scenario,
        categories=ref.categories,
        ops=_multiset_tally(pred, gold),
        ops_by_class=by_class,
        mines=mines,
        ops_all=_multiset_tally(pred_all, gold_all),
        asks=Tally(int(asks and insufficient), int(asks and not insufficient), int(insufficient and not asks)),
        split=split_of(ref.scenario),
        ged_similarity=ged_similarity(g_pred, g_ref, ged_timeout),
        valid=not validate_blueprint(bp, None, bp.task or ref.scenario),
        compile_ms=compile_ms,
        stale=bool(view_hash and bp.provenance and bp.provenance.public_view_hash not in (None, view_hash)),
        predicted=sorted(pred_all.elements()),
        reference=sorted(gold_all.elements()),
        predicted_mines=sorted(pred_mines),
        reference_mines=sorted(gold_mines),
    )


def _groups(score: ScenarioScore) -> list[str]:
    cats = set(score.categories)
    out = [ALL]
    for cat in score.categories:
        if cat == "THREE_DISTRACTION_TOOLS" and cats & _AUGMENTED:
            continue
        out.append(cat)
    return out


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def summarize(scores: Iterable[ScenarioScore]) -> dict[str, Any]:
    """Metrics of one group of scenarios."""
    scores = list(scores)
    ops, mines, ops_all, asks = Tally(), Tally(), Tally(), Tally()
    classes: dict[str, Tally] = defaultdict(Tally)
    for s in scores:
        ops.add(s.ops)
        mines.add(s.mines)
        ops_all.add(s.ops_all)
        asks.add(s.asks)
        for c, t in s.ops_by_class.items():
            classes[c].add(t)
    per_class = list(classes.values())

    def macro(fn: Callable[[Tally], float | None]) -> float | None:
        return sum(fn(t) or 0.0 for t in per_class) / len(per_class) if per_class else None

    times = sorted(s.compile_ms for s in scores if s.compile_ms is not None)
    return {
        "scenarios": len(scores),
        "op_micro_precision": _r(ops.precision()),
        "op_micro_recall": _r(ops.recall()),
        "op_micro_f1": _r(ops.f1()),
        "op_macro_precision": _r(macro(Tally.precision)),
        "op_macro_recall": _r(macro(Tally.recall)),
        "op_macro_f1": _r(macro(Tally.f1)),
        "op_all_micro_f1": _r(ops_all.f1()),
        "ask_precision": _r(asks.precision()),
        "ask_recall": _r(asks.recall()),
        "ask_f1": _r(asks.f1()),
        "fatal_precision": _r(mines.precision()),
        "fatal_recall": _r(mines.recall()),
        "fatal_f1": _r(mines.f1()),
        "ged_similarity": _r(statistics.fmean(s.ged_similarity for s in scores)) if scores else None,
        "valid_dag_rate": _r(sum(s.valid for s in scores) / len(scores)) if scores else None,
        "op_tp": ops.tp, "op_fp": ops.fp, "op_fn": ops.fn,
        "fatal_tp": mines.tp, "fatal_fp": mines.fp, "fatal_fn": mines.fn,
        "ask_tp": asks.tp, "ask_fp": asks.fp, "ask_fn": asks.fn,
        "compile_ms_median": _r(statistics.median(times)) if times else None,
        "compile_ms_p99": _r(times[min(len(times) - 1, int(0.99 * len(times)))]) if times else None,
        "compile_ms_max": _r(times[-1]) if times else None,
    }


def summarize_by_category(scores: Iterable[ScenarioScore]) -> dict[str, dict[str, Any]]:
    """``summarize`` overall (``ALL_CATEGORIES``) and per scenario category."""
    groups: dict[str, list[ScenarioScore]] = defaultdict(list)
    for s in scores:
        for g in _groups(s):
            groups[g].append(s)
    return {g: summarize(groups[g]) for g in [ALL, *sorted(k for k in groups if k != ALL)]}


def summarize_by_split(scores: Iterable[ScenarioScore]) -> dict[str, dict[str, dict[str, Any]]]:
    """``summarize_by_category`` for each split part (``dev``, ``held-out``) and for ``all`` the scores hold."""
    scores = list(scores)
    return {part: summarize_by_category([s for s in scores if part == "all" or s.split == part]) for part in ("all", "dev", "held-out")}


_COLUMNS = [
    ("group", "category"), ("scenarios", "n"),
    ("op_micro_precision", "opP"), ("op_micro_recall", "opR"), ("op_micro_f1", "opF1"),
    ("op_macro_precision", "maP"), ("op_macro_recall", "maR"), ("op_macro_f1", "maF1"),
    ("fatal_precision", "mfP"), ("fatal_recall", "mfR"), ("fatal_f1", "mfF1"), ("ask_f1", "askF1"),
    ("ged_similarity", "GED"), ("valid_dag_rate", "valid"),
]


def render_table(summary: Mapping[str, Mapping[str, Any]]) -> str:
    """A fixed-width text table of a by-category summary."""
    width = max(len(g) for g in summary) + 2
    head = f"{'category':<{width}}" + "".join(f"{label:>7}" for key, label in _COLUMNS[1:])
    lines = [head, "-" * len(head)]
    for group, row in summary.items():
        cells = []
        for key, _ in _COLUMNS[1:]:
            v = row.get(key)
            cells.append(f"{'-' if v is None else (v if isinstance(v, int) else f'{v:.3f}'):>7}")
        lines.append(f"{group:<{width}}" + "".join(cells))
    return "\n".join(lines)


def render_csv(summary: Mapping[str, Mapping[str, Any]]) -> str:
    """CSV of a by-category summary, one row per group."""
    keys = ["group", *next(iter(summary.values())).keys()] if summary else ["group"]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    for group, row in summary.items():
        writer.writerow({"group": group, **{k: "" if v is None else v for k, v in row.items()}})
    return buf.getvalue()


def scenario_record(s: ScenarioScore) -> dict[str, Any]:
    """JSON-ready per-scenario detail."""
    return {
        "name": s.name,
        "split": s.split,
        "categories": list(s.categories),
        "predicted": s.predicted,
        "reference": s.reference,
        "op_tp": s.ops.tp, "op_fp": s.ops.fp, "op_fn": s.ops.fn,
        "asks_or_declines": bool(s.asks.tp or s.asks.fp),
        "predicted_fatal": s.predicted_mines,
        "reference_fatal": s.reference_mines,
        "ged_similarity": round(s.ged_similarity, 4),
        "valid": s.valid,
        "stale": s.stale,
        "compile_ms": None if s.compile_ms is None else round(s.compile_ms, 3),
    }


def render_split_lines(by_split: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """One line of the headline metrics per split part that holds scenarios."""
    keys = [("op_micro_f1", "tool-op micro-F1"), ("op_macro_f1", "macro-F1"), ("op_all_micro_f1", "with messages"),
            ("fatal_f1", "fatal F1"), ("ask_f1", "ask-or-decline F1"), ("ged_similarity", "GED"), ("valid_dag_rate", "valid")]
    lines = []
    for part, summary in by_split.items():
        row = summary.get(ALL, {})
        if not row.get("scenarios"):
            continue
        cells = ", ".join(f"{label} {'-' if row.get(k) is None else format(row[k], '.3f')}" for k, label in keys)
        lines.append(f"{part:<9} n={row['scenarios']:<5} {cells}")
    return "\n".join(lines)


def render_split_csv(by_split: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """CSV of every split part's by-category summary, one row per (split, group)."""
    rows = [{"split": part, "group": group, **row} for part, summary in by_split.items() for group, row in summary.items() if row.get("scenarios")]
    keys = ["split", "group", *(k for k in (rows[0] if rows else {}) if k not in ("split", "group"))]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return buf.getvalue()


def write_outputs(out: Path, by_split: Mapping[str, Mapping[str, Mapping[str, Any]]], scores: list[ScenarioScore],
                  settings: Mapping[str, Any]) -> tuple[Path, Path]:
    """Write ``blueprint_eval.csv`` (one row per split part and group) and ``blueprint_eval.json`` into ``out``."""
    from dynsteer_hook.files.outputs import write_json_atomic, write_text_atomic

    csv_path, json_path = out / "blueprint_eval.csv", out / "blueprint_eval.json"
    write_text_atomic(csv_path, render_split_csv(by_split))
    write_json_atomic(json_path, {
        "settings": dict(settings),
        "metrics": by_split["all"],
        "metrics_by_split": {part: summary for part, summary in by_split.items() if summary.get(ALL, {}).get("scenarios")},
        "scenarios": [scenario_record(s) for s in sorted(scores, key=lambda s: s.name)],
    })
    return csv_path, json_path


def timed(fn: Callable[[], Blueprint]) -> tuple[Blueprint, float]:
    """A blueprint and the milliseconds it took to make."""
    start = time.perf_counter()
    bp = fn()
    return bp, (time.perf_counter() - start) * 1000.0


def evaluate_scenarios(
    scenarios: Mapping[str, Any],
    names: Iterable[str] | None = None,
    *,
    blueprint_dir: Path | None = None,
    candidates: int = 5,
    ged_timeout: float = 2.0,
    split: str = "all",
) -> list[ScenarioScore]:
    """Score the blueprints of ``names`` (default: every scenario) in ``split`` against their references.

    With ``blueprint_dir`` the stored ``<scenario>.json`` files are scored; otherwise each
    public view is compiled with the deterministic generator and the compile time (public
    view extraction excluded, no LLM involved) is recorded.
    """
    from dynsteer_hook.compile.compiler import compile_generator_only
    from dynsteer_hook.files.blueprints import load_blueprint
    from dynsteer_hook.toolsandbox.quality.reference import reference_graphs
    from dynsteer_hook.toolsandbox.scenario_view import public_view

    refs = reference_graphs(scenarios)
    wanted = [n for n in (list(names) if names is not None else list(scenarios)) if in_split(n, split)]
    scores: list[ScenarioScore] = []
    for name in wanted:
        ref = refs.get(name)
        if ref is None:
            continue
        view = public_view(name, scenarios[name])
        if blueprint_dir is not None:
            bp, ms = load_blueprint(blueprint_dir / f"{name}.json"), None
        else:
            bp, ms = timed(lambda view=view: compile_generator_only(view, candidates))  # type: ignore[misc]
        scores.append(score_scenario(bp, ref, ged_timeout=ged_timeout, compile_ms=ms, view_hash=view.digest()))
    return scores
