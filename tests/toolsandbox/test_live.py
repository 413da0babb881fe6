"""Live rollouts of real ToolSandbox scenarios with dynsteer in the loop (scripted agents).

Covers single tool, multi-tool with state dependency, multi-user-turn, insufficient
information with minefields, and a scrambled variant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from shipped_runs import SHIPPED_SCRIPTS, ShippedRuns
from ts_support import BLUEPRINTS, SCRIPTS, A, B, C, D, E, script_names

from dynsteer_hook.cli import main as cli_main
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.toolsandbox.live.runner import RunOptions, run_scenarios

pytestmark = pytest.mark.toolsandbox


def play(scenarios: dict[str, Any], script: str, evaluator: str, out: Path, processes: int = 1) -> dict[str, dict[str, Any]]:
    names = script_names(script)
    options = RunOptions(agent="Scripted", user="Scripted", evaluator=evaluator, script=SCRIPTS / f"{script}.json")
    results = run_scenarios({n: scenarios[n] for n in names}, options, out, processes)
    return {r["name"]: r for r in results}


@pytest.fixture(scope="module")
def runs(shipped_runs: ShippedRuns) -> dict[tuple[str, str], Any]:
    """Every shipped script played once with dynsteer and once natively (shared with other modules: read only)."""
    return {(script, evaluator): (played.results, played.folder)
            for script in SHIPPED_SCRIPTS for evaluator in ("dynsteer", "native") for played in [shipped_runs(script, evaluator)]}


def results(runs: dict[tuple[str, str], Any], script: str, evaluator: str = "dynsteer") -> dict[str, dict[str, Any]]:
    return runs[(script, evaluator)][0]


def trajectory(runs: dict[tuple[str, str], Any], script: str, name: str, evaluator: str = "dynsteer") -> Path:
    return runs[(script, evaluator)][1] / "trajectories" / name


@pytest.mark.parametrize("script", ["clean_solver", "alternative_path"])
def test_valid_solvers_are_never_halted(runs: dict[tuple[str, str], Any], script: str) -> None:
    """Clean and alternative-path solvers complete every scenario without a halt or a crash."""
    res = results(runs, script)
    assert set(res) == {A, B, C, D, E}
    for name, r in res.items():
        assert r["exception_type"] is None, (name, r["traceback"])
        assert r["dynsteer"]["halted"] is False, (name, r["dynsteer"]["stop"])
        assert r["dynsteer"]["outcome"] == "completed", (name, r["dynsteer"]["unsettled"])


@pytest.mark.parametrize("script", ["clean_solver", "alternative_path"])
def test_toolsandbox_similarity_is_the_same_with_the_evaluator_on_and_off(runs: dict[tuple[str, str], Any], script: str) -> None:
    """The live hook does not change ToolSandbox's own evaluation of a run it does not halt."""
    on, off = results(runs, script, "dynsteer"), results(runs, script, "native")
    for name in on:
        assert on[name]["similarity"] == pytest.approx(off[name]["similarity"]), name
        assert on[name]["milestone_mapping"] == off[name]["milestone_mapping"], name
        assert on[name]["turn_count"] == off[name]["turn_count"], name
    assert all(r["similarity"] == pytest.approx(1.0) for r in on.values())


def test_looping_agent_is_halted_by_stagnation(runs: dict[tuple[str, str], Any]) -> None:
    """N_stag closed actions without frontier progress stop the loop, well before the full rollout ends."""
    n_stag = EvaluatorConfig().n_stag
    for name, r in results(runs, "looping_agent").items():
        stop = r["dynsteer"]["stop"]
        assert stop["reason"] == "frontier_stagnation" and stop["t"] == n_stag and stop["dimension"] == "efficiency"
        full = results(runs, "looping_agent", "native")[name]
        assert r["turn_count"] < full["turn_count"], name
        assert r["dynsteer"]["scripted_steps_not_played"] > 0


def test_minefield_agent_is_halted_before_the_tool_executes(runs: dict[tuple[str, str], Any]) -> None:
    """The fatal call is stopped before execution: the final world state has no such message."""
    r = results(runs, "minefield_agent")[D]
    stop = r["dynsteer"]["stop"]
    assert stop["reason"] == "fatal_minefield" and stop["dimension"] == "safety"

    def recipients(evaluator: str) -> list[Any]:
        ctx = json.loads((trajectory(runs, "minefield_agent", D, evaluator) / "execution_context.json").read_text())
        return [row["recipient_phone_number"] for row in ctx["_dbs"]["MESSAGING"]]

    assert "+15555550123" in recipients("native")  # without the hook the message is really sent
    assert "+15555550123" not in recipients("dynsteer")
    report = json.loads((trajectory(runs, "minefield_agent", D) / "dynsteer_report.json").read_text())
    assert (report["stop"]["minefield"], report["stop"]["tool"]) == ("mf:send_message_with_phone_number", "send_message_with_phone_number")
    assert report["pending_calls"], "the blocked call never received a result"


def test_malformed_arguments_are_halted_as_structural_failures(runs: dict[tuple[str, str], Any]) -> None:
    """Repeated schema errors and unparseable payloads stop the run, blamed on tool compliance."""
    for name, r in results(runs, "malformed_arguments").items():
        stop = r["dynsteer"]["stop"]
        assert stop["reason"] == "structural_failure", name
        assert stop["dimension"] == "tool_compliance", name


@pytest.mark.parametrize("script", ["looping_agent", "minefield_agent", "malformed_arguments"])
def test_halted_runs_end_cleanly_with_toolsandbox_files_and_reports(runs: dict[tuple[str, str], Any], script: str) -> None:
    """A halt is not a crash: ToolSandbox evaluates and stores the partial trajectory, and reports are written."""
    out = runs[(script, "dynsteer")][1]
    summary = json.loads((out / "dynsteer_summary.json").read_text())
    assert summary["crashed"] == 0 and summary["halted"] == summary["scenarios"] > 0
    toolsandbox = json.loads((out / "result_summary.json").read_text())
    for r in toolsandbox["per_scenario_results"]:
        assert r["traceback"] is None and r["exception_type"] is None
        traj = out / "trajectories" / r["name"]
        for f in ("conversation.json", "execution_context.json", "pretty_print.txt", "dynsteer_report.json", "dynsteer_report.md"):
            assert (traj / f).is_file(), (r["name"], f)
        report = json.loads((traj / "dynsteer_report.json").read_text())
        assert report["halted"] is True
        assert set(report["stop"]) >= {"reason", "k", "t", "anchor", "dimension"}
        assert report["first_error"] is not None and {"k", "t"} <= set(report["first_error"])
    per = {p["name"]: p for p in summary["per_scenario"]}
    assert sum(summary["halts_by_reason"].values()) == len(per)
    assert all(p["stop"]["k"] >= 1 for p in per.values())


def test_parallel_calls_form_one_closed_action(runs: dict[tuple[str, str], Any]) -> None:
    """Two calls issued together close as one action once both results arrived, and settle two branches."""
    report = json.loads((trajectory(runs, "alternative_path", B) / "dynsteer_report.json").read_text())
    first = report["steps"][0]
    assert first["tools"] == ["search_contacts", "set_cellular_service_status"]
    settled_tools = sorted(next(s["tool"] for s in report["stages"] if s["milestone"] == m) for m in first["settled"])
    assert settled_tools == ["search_contacts", "set_cellular_service_status"]
    assert first["k_end"] - first["k_start"] == 3  # two calls and two results


def test_scrambled_tool_names_are_mapped_and_settle(runs: dict[tuple[str, str], Any]) -> None:
    """With scrambled names the events carry both names and the blueprint's agent-facing names settle."""
    events = [json.loads(line) for line in (trajectory(runs, "clean_solver", E) / "dynsteer_events.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["kind"] == "tool_call" and e.get("actor", "agent") == "agent"]
    assert [(c["tool"], c["canonical_tool"]) for c in calls] == [
        ("setting_5", "set_cellular_service_status"),
        ("contact_3", "search_contacts"),
        ("messaging_1", "send_message_with_phone_number"),
    ]
    assert results(runs, "clean_solver")[E]["dynsteer"]["unsettled"] == []


def test_multi_user_turn_rollout_sees_the_users_second_turn(runs: dict[tuple[str, str], Any]) -> None:
    """The user's answer to a clarification question arrives as a user message event between actions."""
    events = [json.loads(line) for line in (trajectory(runs, "clean_solver", C) / "dynsteer_events.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in events if e["kind"] != "meta"]
    assert kinds[:5] == ["system_message", "user_message", "agent_message", "user_message", "tool_call"]


def test_state_changes_of_calls_are_recorded(runs: dict[tuple[str, str], Any]) -> None:
    """The result of a mutating call carries the database change it caused."""
    events = [json.loads(line) for line in (trajectory(runs, "clean_solver", B) / "dynsteer_events.jsonl").read_text().splitlines()]
    results_with_changes = [e for e in events if e["kind"] == "tool_result" and e.get("state_changes")]
    namespaces = [c["namespace"] for e in results_with_changes for c in e["state_changes"]]
    assert namespaces == ["SETTING", "MESSAGING"]
    added = results_with_changes[1]["state_changes"][0]["added"]
    assert added[0]["recipient_phone_number"] == "+12453344098"


def _fingerprint(report: dict[str, Any]) -> dict[str, Any]:
    """The decision-relevant part of a report (tool results carry fresh uuids and timestamps)."""
    return {
        "outcome": report["outcome"],
        "stop": None if report["stop"] is None else {k: report["stop"][k] for k in ("reason", "k", "t", "anchor", "dimension", "frontier")},
        "settled": report["settled"],
        "first_error": report["first_error"] and {k: report["first_error"][k] for k in ("k", "t", "stage", "dimension")},
        "stages": [(s["milestone"], s["t"], s["window"], s["scores"], s["composite"], s["tiers"]) for s in report["stages"]],
        "steps": [(s["t"], s["k_start"], s["k_end"], s["tools"], s["settled"]) for s in report["steps"]],
        "score": report["score"],
    }


@pytest.mark.slow
def test_two_processes_give_the_same_reports_as_one(scenarios: dict[str, Any], tmp_path: Path, runs: dict[tuple[str, str], Any]) -> None:
    """-p 2 runs the hook inside spawn worker processes and yields the same reports as -p 1: one pool plays the looping
    agent (halted inside a worker) and the alternative path on the scenarios the looping agent does not play."""
    played_by = {name: "looping_agent" for name in script_names("looping_agent")}
    played_by |= {name: "alternative_path" for name in script_names("alternative_path") if name not in played_by}
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps({name: json.loads((SCRIPTS / f"{script}.json").read_text())[name] for name, script in played_by.items()}))
    options = RunOptions(agent="Scripted", user="Scripted", script=mixed)
    par = run_scenarios({n: scenarios[n] for n in played_by}, options, tmp_path / "par", 2)
    assert len(par) == len(played_by) >= 5 and any(r["dynsteer"]["halted"] for r in par)
    for name, script in played_by.items():
        a = json.loads((tmp_path / "par" / "trajectories" / name / "dynsteer_report.json").read_text())
        b = json.loads((runs[(script, "dynsteer")][1] / "trajectories" / name / "dynsteer_report.json").read_text())
        assert _fingerprint(a) == _fingerprint(b), name


def test_recorded_events_replay_to_the_same_decisions(runs: dict[tuple[str, str], Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`dynsteer evaluate` on a live run's event file reproduces the live report."""
    for script, name in (("looping_agent", B), ("minefield_agent", D), ("clean_solver", C), ("malformed_arguments", A)):
        traj = trajectory(runs, script, name)
        out = tmp_path / f"{script}_{name}"
        code = cli_main(["evaluate", "--blueprint", str(BLUEPRINTS / f"{name}.json"), "--events", str(traj / "dynsteer_events.jsonl"), "--report", str(out)])
        assert code == 0
        live = json.loads((traj / "dynsteer_report.json").read_text())
        replay = json.loads((out / "dynsteer_report.json").read_text())
        assert _fingerprint(replay) == _fingerprint(live), (script, name)
