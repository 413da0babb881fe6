"""Two runs of the same scenarios side by side: which scenarios got worse, which better, and whether the change is real.

``pair_runs`` pairs the scenarios both sides hold by name, classes each by its dynsteer score (worse, better, the
same, or unscored when a side has no score), orders them worst regression first, and keeps the scenarios only one
side holds apart. ``diff_document`` is what ``diff.json`` holds and what the page and the Markdown are made from:
per scenario the score, outcome, stop and first error before and after, and the totals with a paired Wilcoxon
signed-rank test over the shared, scored scenarios. Pure but for the links, which are paths relative to the
output folder.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from dynsteer_hook.files.outputs import json_text
from dynsteer_hook.report.gates import Measures, measure
from dynsteer_hook.toolsandbox.offline.run_records import RunRecords, ScenarioRecord
from dynsteer_hook.toolsandbox.offline.signed_rank import signed_rank_p

__all__ = ["DIFF_FILES", "TOLERANCE", "Change", "PairedScenario", "RunDiff", "diff_document", "document_text", "pair_runs", "side_measures",
           "totals"]

DIFF_FILES = ("diff.html", "diff.md", "diff.json")
"""The files ``dynsteer diff`` writes into its output folder."""
TOLERANCE = 1e-6
"""A score change this small is no change: the summaries write scores rounded to six decimals."""
SEVERITY = {"completed": 0, "incomplete": 1, "played": 1, "halted": 2, "crashed": 3}
"""How bad an outcome is, to order scenarios whose scores changed alike (an unknown outcome ranks as incomplete)."""

Change = Literal["worse", "better", "same", "unscored"]


@dataclass(frozen=True, slots=True)
class PairedScenario:
    """A scenario both sides hold.

    Attributes:
        name: Its name.
        before: RUN_A's record.
        after: RUN_B's record.
        change: Its class by score.
        delta: The score after minus before, None when a side has none.
    """

    name: str
    before: ScenarioRecord
    after: ScenarioRecord
    change: Change
    delta: float | None


@dataclass(frozen=True, slots=True)
class RunDiff:
    """Two sides paired.

    Attributes:
        a: RUN_A, the run before.
        b: RUN_B, the run after.
        paired: The shared scenarios, worst regression first.
        only_a: Scenarios only RUN_A holds, by name.
        only_b: Scenarios only RUN_B holds, by name.
    """

    a: RunRecords
    b: RunRecords
    paired: tuple[PairedScenario, ...]
    only_a: tuple[ScenarioRecord, ...]
    only_b: tuple[ScenarioRecord, ...]

    @property
    def worse(self) -> list[PairedScenario]:
        """The shared scenarios that score lower after, worst first."""
        return [p for p in self.paired if p.change == "worse"]


def _change(before: ScenarioRecord, after: ScenarioRecord) -> tuple[Change, float | None]:
    if before.score is None or after.score is None:
        return "unscored", None
    delta = after.score - before.score
    if delta < -TOLERANCE:
        return "worse", delta
    return ("better", delta) if delta > TOLERANCE else ("same", delta)


def _order(p: PairedScenario) -> tuple[bool, float, int, str]:
    """Worst regression first: the largest drop in score, then the outcome that got worst, then the name; unscored last."""
    worsened = SEVERITY.get(p.after.outcome, 1) - SEVERITY.get(p.before.outcome, 1)
    return p.delta is None, p.delta if p.delta is not None else 0.0, -worsened, p.name


def pair_runs(a: RunRecords, b: RunRecords) -> RunDiff:
    """Pair the scenarios of ``a`` (before) and ``b`` (after) by name."""
    after = {r.name: r for r in b.records}
    before = {r.name: r for r in a.records}
    paired = [PairedScenario(r.name, r, after[r.name], *_change(r, after[r.name])) for r in a.records if r.name in after]
    return RunDiff(a, b, tuple(sorted(paired, key=_order)), tuple(sorted((r for r in a.records if r.name not in after), key=lambda r: r.name)),
                   tuple(sorted((r for r in b.records if r.name not in before), key=lambda r: r.name)))


def side_measures(side: RunRecords) -> Measures:
    """The measures the gates judge, over every scenario of one side."""
    return measure((r.outcome, r.score, r.halted) for r in side.records)


def _base(folder: Path, out: Path) -> tuple[str, ...]:
    """The path parts that lead from the output folder to ``folder``, each percent-encoded (no part can be read as a
    scheme, a query or a fragment)."""
    rel = os.path.relpath(os.path.abspath(folder), os.path.abspath(out))
    return tuple(part if part == ".." else quote(part, safe="") for part in Path(rel).parts)


def _href(base: tuple[str, ...], parts: tuple[str, ...] | None) -> str | None:
    """The relative URL of a page (its path parts below a side's root) seen from the output folder."""
    return None if parts is None else "/".join((*base, *(quote(p, safe="") for p in parts)))


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, digits)


def _side(r: ScenarioRecord, base: tuple[str, ...]) -> dict[str, Any]:
    return {"score": _round(r.score), "outcome": r.outcome, "halted": r.halted, "similarity": _round(r.similarity), "stop": r.stop,
            "clock": r.clock, "cause": r.cause, "first_error": r.first_error, "crash": r.crash, "href": _href(base, r.page)}


def _alone(r: ScenarioRecord, base: tuple[str, ...]) -> dict[str, Any]:
    return {"name": r.name, "categories": list(r.categories), **_side(r, base)}


def _side_totals(side: RunRecords, out: Path) -> dict[str, Any]:
    m = side_measures(side)
    index = side.path / "index.html"
    return {"path": str(side.path), "kind": side.kind, "summary": str(side.summary),
            "index_href": _href(_base(side.path, out), ("index.html",)) if os.path.isfile(index) else None, "scenarios": m.scenarios,
            "mean_score": _round(m.mean_score), "halted": m.halted, "halt_rate": _round(m.halt_rate),
            "skipped_entries": len(side.skipped), "not_finished": side.not_finished}


def totals(diff: RunDiff) -> dict[str, Any]:
    """The totals over the shared scenarios: how many got worse, better, stayed; the means before and after and the paired
    Wilcoxon signed-rank test over the scored pairs; how many changed outcome and how many only one side holds."""
    scored = [p for p in diff.paired if p.delta is not None]
    before = [p.before.score for p in scored if p.before.score is not None]
    after = [p.after.score for p in scored if p.after.score is not None]
    counts = {c: sum(1 for p in diff.paired if p.change == c) for c in ("worse", "better", "same", "unscored")}
    return {
        "shared": len(diff.paired),
        **counts,
        "mean_before": _round(math.fsum(before) / len(before)) if before else None,
        "mean_after": _round(math.fsum(after) / len(after)) if after else None,
        "mean_change": _round(math.fsum(after) / len(after) - math.fsum(before) / len(before)) if scored else None,
        "wilcoxon": {"pairs": len(scored), "p_value": signed_rank_p(before, after)},
        "outcome_changed": sum(1 for p in diff.paired if p.before.outcome != p.after.outcome),
        "only_in_a": len(diff.only_a),
        "only_in_b": len(diff.only_b),
    }


def diff_document(diff: RunDiff, out: Path, gates: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """What ``diff.json`` holds (and the page and ``diff.md`` show): both sides, the totals, every shared scenario worst
    regression first, the scenarios only one side holds, the entries that could not be read, and the gates' verdicts.
    Links are relative to ``out``, where the files are written."""
    base_a, base_b = _base(diff.a.root, out), _base(diff.b.root, out)
    return {
        "a": _side_totals(diff.a, out),
        "b": _side_totals(diff.b, out),
        "totals": totals(diff),
        "gates": list(gates),
        "per_scenario": [{"name": p.name, "categories": list(p.after.categories or p.before.categories), "change": p.change,
                          "delta": _round(p.delta), "before": _side(p.before, base_a), "after": _side(p.after, base_b)}
                         for p in diff.paired],
        "only_in_a": [_alone(r, base_a) for r in diff.only_a],
        "only_in_b": [_alone(r, base_b) for r in diff.only_b],
        "skipped_entries": [{"side": label, "entry": s.entry, "name": s.name, "reason": s.reason}
                            for label, side in (("a", diff.a), ("b", diff.b)) for s in side.skipped],
    }


def document_text(doc: Mapping[str, Any]) -> str:
    """``diff.json``'s text: the document indented, but each scenario on one line (a long diff stays easy to grep, and
    Python's JSON encoder is five times faster without indentation)."""
    def one(value: Any) -> str:
        return json_text(value, ensure_ascii=False)

    parts = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            inner = ",\n    ".join(one(v) for v in value)
            parts.append(f"  {one(key)}: [\n    {inner}\n  ]")
        else:
            parts.append(f"  {one(key)}: {json_text(value, indent=2, ensure_ascii=False).replace(chr(10), chr(10) + '  ')}")
    return "{\n" + ",\n".join(parts) + "\n}\n"
