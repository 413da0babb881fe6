"""Table 2 metrics: definitions on small cases, the CLI's outputs, and the goals over all 1032 scenarios."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from ts_support import A, B, D, E

from dynsteer_hook.cli import main as cli_main
from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL, Blueprint, Edge, Milestone, Minefield
from dynsteer_hook.toolsandbox.live import runner
from dynsteer_hook.toolsandbox.quality.blueprint_eval import (
    ALL,
    Tally,
    evaluate_scenarios,
    ged_similarity,
    render_table,
    score_scenario,
    summarize,
    summarize_by_category,
    summarize_by_split,
)
from dynsteer_hook.toolsandbox.quality.reference import ReferenceGraph, reference_graphs

pytestmark = pytest.mark.toolsandbox


@pytest.fixture(scope="module")
def refs(scenarios: dict[str, Any]) -> dict[str, ReferenceGraph]:
    return reference_graphs(scenarios)


def as_blueprint(ref: ReferenceGraph) -> Blueprint:
    """The reference itself written as a blueprint."""
    return Blueprint(
        task=ref.scenario,
        milestones=tuple(Milestone(id=n.id, tool=n.tool) for n in ref.nodes),
        edges=tuple(Edge(source=u, target=v) for u, v in ref.edges),
        minefields=tuple(Minefield(id=f"mf:{t}", tool=t) for t in ref.fatal_minefields),
    )


def test_tally_ratios_and_undefined_cases() -> None:
    """F1 is 2TP/(2TP+FP+FN); a zero denominator gives None, not zero."""
    t = Tally(3, 1, 2)
    assert (t.precision(), t.recall(), t.f1()) == (0.75, 0.6, 6 / 9)
    assert (Tally().precision(), Tally().recall(), Tally().f1()) == (None, None, None)
    assert Tally(0, 2, 0).recall() is None and Tally(0, 2, 0).f1() == 0.0


def _graph(labels: list[str], edges: list[tuple[int, int]]) -> nx.DiGraph:
    g = nx.DiGraph()
    for i, label in enumerate(labels):
        g.add_node(i, label=label)
    g.add_edges_from(edges)
    return g


def test_ged_similarity_bounds() -> None:
    """Identical graphs score 1, two empty graphs score 1, graphs sharing nothing score 0."""
    chain = _graph(["a", "b", "c"], [(0, 1), (1, 2)])
    assert ged_similarity(chain, _graph(["a", "b", "c"], [(0, 1), (1, 2)])) == 1.0
    assert ged_similarity(nx.DiGraph(), nx.DiGraph()) == 1.0
    assert ged_similarity(_graph(["a"], []), nx.DiGraph()) == 0.0
    # one node relabelled: one substitution over 3+2+3+2
    assert ged_similarity(chain, _graph(["a", "x", "c"], [(0, 1), (1, 2)])) == pytest.approx(1 - 1 / 10)


@pytest.mark.parametrize("name", [A, B, D, E])
def test_the_reference_scores_perfectly_against_itself(refs: dict[str, ReferenceGraph], name: str) -> None:
    """A blueprint equal to the reference has P = R = F1 = 1 on operations and minefields, GED similarity 1.

    The reference of an insufficient-information scenario (D) has no milestone at all, so as a
    blueprint it breaks the non-empty contract: it would let any run that avoids the minefield complete.
    """
    ref = refs[name]
    s = score_scenario(as_blueprint(ref), ref)
    assert s.ops.fp == s.ops.fn == 0 and s.mines.fp == s.mines.fn == 0
    assert s.ged_similarity == 1.0
    assert s.valid is (name != D)


def test_operations_are_compared_as_multisets(refs: dict[str, ReferenceGraph]) -> None:
    """A repeated operation counts once per occurrence; an extra one is a false positive."""
    ref = refs[A]
    bp = Blueprint(milestones=(Milestone(id="x", tool="set_cellular_service_status"), Milestone(id="y", tool="set_cellular_service_status")))
    s = score_scenario(bp, ref)
    assert (s.ops.tp, s.ops.fp, s.ops.fn) == (1, 1, 0)
    assert (s.ops_all.tp, s.ops_all.fp, s.ops_all.fn) == (1, 1, 1)  # the message is missing


def test_macro_averages_over_tool_classes_pooling_variants(refs: dict[str, ReferenceGraph]) -> None:
    """Scrambled names of one tool fall into the class of its execution-facing name."""
    scores = [score_scenario(as_blueprint(refs[n]), refs[n]) for n in (B, E)]
    classes = set().union(*(s.ops_by_class for s in scores))
    assert classes == {"set_cellular_service_status", "search_contacts", "send_message_with_phone_number"}
    row = summarize(scores)
    assert row["op_macro_f1"] == row["op_micro_f1"] == 1.0


def test_categories_follow_toolsandbox_and_skip_three_distraction_for_augmented(refs: dict[str, ReferenceGraph]) -> None:
    """An augmented variant is not counted a second time under THREE_DISTRACTION_TOOLS."""
    scores = [score_scenario(as_blueprint(refs[n]), refs[n]) for n in (B, B + "_3_distraction_tools", E)]
    summary = summarize_by_category(scores)
    assert summary[ALL]["scenarios"] == 3
    assert summary["THREE_DISTRACTION_TOOLS"]["scenarios"] == 1
    assert summary["TOOL_NAME_SCRAMBLED"]["scenarios"] == 1
    assert "category" in render_table(summary).splitlines()[0]


def test_cli_prints_the_table_and_writes_csv_and_json(scenarios: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`dynsteer blueprint-eval` on a few scenarios: table on stdout, CSV and JSON with every metric."""
    monkeypatch.setattr(runner, "load_scenarios", lambda names, backend="DEFAULT": scenarios if names is None else {n: scenarios[n] for n in names})
    code = cli_main(["blueprint-eval", "-s", A, B, D, E, "-o", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].split()[:4] == ["category", "n", "opP", "opR"]
    assert "compile time per scenario" in out
    rows = list(csv.DictReader((tmp_path / "blueprint_eval.csv").open()))
    assert rows[0]["group"] == ALL and rows[0]["scenarios"] == "4"
    assert {"op_micro_f1", "op_macro_f1", "fatal_f1", "ged_similarity", "valid_dag_rate", "compile_ms_median"} <= set(rows[0])
    data = json.loads((tmp_path / "blueprint_eval.json").read_text())
    assert data["metrics"][ALL]["fatal_f1"] == 1.0
    assert {s["name"] for s in data["scenarios"]} == {A, B, D, E}


def test_cli_reports_every_metric_per_split_and_scores_one_part(scenarios: dict[str, Any], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """--split held-out scores only held-out scenarios; the JSON and CSV carry the metrics of each part scored."""
    monkeypatch.setattr(runner, "load_scenarios", lambda names, backend="DEFAULT": scenarios if names is None else {n: scenarios[n] for n in names})
    assert cli_main(["blueprint-eval", "-s", A, B, D, E, "-o", str(tmp_path / "all")]) == 0
    out = capsys.readouterr().out
    assert "held-out  n=3" in out and "dev       n=1" in out and "all       n=4" in out
    data = json.loads((tmp_path / "all" / "blueprint_eval.json").read_text())
    assert set(data["metrics_by_split"]) == {"dev", "held-out", "all"}
    assert {s["name"]: s["split"] for s in data["scenarios"]} == {A: "held-out", B: "held-out", D: "dev", E: "held-out"}
    dev = data["metrics_by_split"]["dev"][ALL]
    # D is insufficient: its blueprint asks or declines, and asks nothing else
    assert (dev["ask_tp"], dev["ask_fp"], dev["ask_fn"], dev["op_tp"], dev["op_fp"]) == (1, 0, 0, 0, 0)
    rows = list(csv.DictReader((tmp_path / "all" / "blueprint_eval.csv").open()))
    assert {(r["split"], r["group"]) for r in rows} >= {("all", ALL), ("dev", ALL), ("held-out", ALL)}

    assert cli_main(["blueprint-eval", "-s", A, B, D, E, "--split", "held-out", "-o", str(tmp_path / "held")]) == 0
    data = json.loads((tmp_path / "held" / "blueprint_eval.json").read_text())
    assert {s["name"] for s in data["scenarios"]} == {A, B, E}
    assert set(data["metrics_by_split"]) == {"held-out", "all"} and data["settings"]["split"] == "held-out"
    capsys.readouterr()
    assert cli_main(["blueprint-eval", "-s", A, "--split", "dev", "-o", str(tmp_path / "none")]) == 2
    assert "no scenario of the split 'dev' was selected" in capsys.readouterr().err


def test_messages_are_not_tool_operations(refs: dict[str, ReferenceGraph]) -> None:
    """A message to the user is left out of tool-operation F1 on both sides and counted in op_all."""
    ref = refs[B]
    bp = as_blueprint(ref)
    extra = bp.model_copy(update={"milestones": (*bp.milestones, Milestone(id="msg2", tool=AGENT_MESSAGE_TOOL))})
    s = score_scenario(extra, ref)
    assert s.ops.fp == 0 and s.ops_all.fp == 1
    assert AGENT_MESSAGE_TOOL not in {t for t in s.ops_by_class}


def test_cli_rejects_unknown_scenario_names(scenarios: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(runner, "load_scenarios", lambda names, backend="DEFAULT": scenarios)
    code = cli_main(["blueprint-eval", "-s", "no_such_scenario"])
    assert code == 2 and "unknown scenario name(s) ['no_such_scenario']" in capsys.readouterr().err


def test_stored_blueprints_of_another_public_view_are_flagged_stale(refs: dict[str, ReferenceGraph], scenarios: dict[str, Any]) -> None:
    """A blueprint whose recorded public-view hash differs from the scenario's view is scored but marked stale."""
    from dynsteer_hook.model.blueprint import Provenance

    bp = as_blueprint(refs[A]).model_copy(update={"provenance": Provenance(public_view_hash="0" * 64)})
    assert score_scenario(bp, refs[A], view_hash="1" * 64).stale
    assert not score_scenario(bp, refs[A], view_hash="0" * 64).stale


def test_cli_rejects_a_missing_blueprint_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["blueprint-eval", "--blueprints", str(tmp_path / "nope")])
    assert code == 2 and "is not a directory" in capsys.readouterr().err


@pytest.mark.slow
def test_deterministic_generator_meets_the_table_2_goals(scenarios: dict[str, Any]) -> None:
    """Over all 1032 scenarios, judged on the held-out part the rules were not written against: tool-operation
    micro-F1 >= 0.90, fatal-minefield F1 >= 0.95, every DAG valid, and the development part no more than 0.03 above
    it; compile <= 50 ms median.

    The references of 208 insufficient-information scenarios name no operation at all (ToolSandbox checks those by
    minefields alone); their blueprints ask only for the message that asks or declines, which is scored on its own
    (ask-or-decline F1) and adds nothing to tool-operation F1.
    """
    scores = evaluate_scenarios(scenarios, ged_timeout=0.5)
    by_split = summarize_by_split(scores)
    overall, dev, held = by_split["all"][ALL], by_split["dev"][ALL], by_split["held-out"][ALL]
    assert overall["scenarios"] == 1032 and dev["scenarios"] + held["scenarios"] == 1032
    assert held["op_micro_f1"] >= 0.90
    assert dev["op_micro_f1"] - held["op_micro_f1"] <= 0.03
    assert held["fatal_f1"] >= 0.95 and overall["fatal_f1"] >= 0.95
    assert overall["valid_dag_rate"] == 1.0
    assert overall["compile_ms_median"] <= 50
    unnamed = [s for s in scores if not s.reference]
    assert len(unnamed) == 208 and all("INSUFFICIENT_INFORMATION" in s.categories for s in unnamed)
    assert all(s.predicted == [AGENT_MESSAGE_TOOL] and s.mines.fn == 0 and s.ops.fp == 0 for s in unnamed)
    assert overall["ask_recall"] >= 0.95 and overall["ask_precision"] >= 0.95
