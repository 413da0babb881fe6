"""Diagnosis in live runs on real ToolSandbox scenarios: agents of known quality (scripts/known_agents.py) played
with dynsteer in the loop. The first error is the injected faulty call on both clocks, recovered or not; the
clean and repeat agents are never halted; a loop of failing calls is; the Markdown report lists the faulty steps.

The scenarios here carry distraction tools or scrambled names, unlike the plain bases the diagnosis benchmark
measures on. Every script is generated right before it is played, as ToolSandbox builds some targets from the
wall clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import known_agents as ka
import pytest
from known_quality.turns import TurnVariant, fresh_turn_variant
from ts_support import FAULT_SAMPLE

from dynsteer_hook.toolsandbox.live.runner import RunOptions

pytestmark = pytest.mark.toolsandbox

LIVE = RunOptions(agent="Scripted", user="Scripted", evaluator="dynsteer", write_events=True)

CASES = FAULT_SAMPLE


def _play(kind: str, name: str, scenario: Any, out: Path) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    if kind == "clean":
        made, result = ka.play_fresh(lambda now: ka.clean_solver(name, scenario, now), scenario, out, LIVE)
    else:
        made, result = ka.play_fresh(lambda now: ka.fresh_variant(kind, name, scenario, now), scenario, out, LIVE)
    assert result is not None and not isinstance(made, ka.Skip), made
    report = json.loads((out / "trajectories" / name / "dynsteer_report.json").read_text())
    return made, result, report


@pytest.mark.parametrize(("kind", "name"), CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_first_error_is_the_injected_fault(scenarios: dict[str, Any], tmp_path: Path, kind: str, name: str) -> None:
    """The report's first error is the faulty call itself on both clocks, with a fault record, whatever the stage did."""
    v, _, report = _play(kind, name, scenarios[name], tmp_path)
    truth = ka.call_clock(tmp_path / "trajectories" / name / "dynsteer_events.jsonl", v.fault.step, v.fault.call)
    fe = report["first_error"]
    assert fe is not None and (fe["k"], fe["t"]) == (truth.k, truth.t)
    assert report["faults"][0]["k"] == truth.k and report["fault_count"] >= 1
    markdown = (tmp_path / "trajectories" / name / "dynsteer_report.md").read_text()
    assert "## Faulty steps" in markdown and f"| {truth.k} | {truth.t} |" in markdown
    if kind in ("repeat", "malformed", "wrong_tool"):
        assert not report["halted"] and fe["recovered"] is True
    if kind == "loop":  # a loop of one failing call is stopped, as a loop or as malformed calls
        assert report["halted"] and report["stop"]["reason"] in ("repeated_failure", "structural_failure")
        assert (report["stop"]["blamed_k"], report["stop"]["blamed_t"]) == (truth.k, truth.t)
    if kind == "minefield":
        assert report["stop"]["reason"] == "fatal_minefield" and fe["cause"] == "fatal_minefield"


@pytest.mark.parametrize("name", ["send_message_with_contact_content_cellular_off_multiple_user_turn",
                                  "find_days_till_holiday_3_distraction_tools_tool_name_scrambled"])
def test_clean_runs_have_no_fault_and_a_repeat_costs_score(scenarios: dict[str, Any], tmp_path: Path, name: str) -> None:
    """A clean solver is neither halted nor blamed; its repeat variant is not halted but scores lower."""
    _, result, clean = _play("clean", name, scenarios[name], tmp_path / "clean")
    assert ka.scores_one(result)
    assert (clean["halted"], clean["first_error"], clean["faults"]) == (False, None, [])
    _, _, repeat = _play("repeat", name, scenarios[name], tmp_path / "repeat")
    assert not repeat["halted"] and repeat["score"] < clean["score"]


@pytest.mark.parametrize(("kind", "name"), [
    ("later_turn", "update_contact_relationship_with_relationship_twice_multiple_user_turn"),
    ("later_turn", "find_days_till_holiday_wifi_off_multiple_user_turn_10_distraction_tools"),
    ("status_turn", "send_message_with_contact_content_cellular_off_multiple_user_turn_all_tools"),
])
def test_a_look_up_used_only_after_a_later_user_turn_is_no_fault(scenarios: dict[str, Any], tmp_path: Path, kind: str, name: str) -> None:
    """A clean agent whose user answers between a look-up and its use (the result passed on once the user gave the
    request, or the status read before switching the setting on once the user agreed, where no milestone writes it):
    ToolSandbox scores it 1.0, and dynsteer neither halts nor blames it."""
    made, result = ka.play_fresh(lambda now: fresh_turn_variant(kind, name, scenarios[name], now), scenarios[name], tmp_path, LIVE)
    assert isinstance(made, TurnVariant) and result is not None and ka.scores_one(result), made
    assert made.lookup < made.use and any(s.say is not None for s in made.script.steps[made.lookup + 1 : made.use])
    report = json.loads((tmp_path / "trajectories" / name / "dynsteer_report.json").read_text())
    assert (report["halted"], report["first_error"], report["faults"]) == (False, None, [])
