"""An exception that is not a halt, raised inside the evaluator while ToolSandbox plays a real scenario.

The evaluator is dynsteer's own code running inside ToolSandbox's loop; a bug there must not turn
into a traceback for the person running the benchmark. The rollout ends as a crash of that
scenario with the exception as its reason, the report is written (outcome ``crashed``, the
steps evaluated before the fault), the event log holds the rollout up to the fault, the other
scenarios of the run play on, and the command exits as a run with a crashed scenario does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ts_support import BLUEPRINTS, SCRIPTS, A, B

from dynsteer_hook.cli import main
from dynsteer_hook.model.events import event_to_record
from dynsteer_hook.runtime.evaluator import Evaluator

pytestmark = pytest.mark.toolsandbox

@pytest.mark.parametrize("kind", ["system_message", "user_message", "tool_call", "tool_result", "agent_message"])
def test_an_evaluator_bug_ends_the_rollout_as_a_crash_with_its_reason_and_trajectory(
    kind: str, scenarios: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The evaluator fails on the first event of each kind in turn: before a call runs (minefield screening), after its
    result, on the agent's and the user's messages."""
    real = Evaluator.observe
    observed: list[str] = []

    def faulty(self: Evaluator, event: Any) -> Any:
        if self.blueprint.task == B:
            seen = event_to_record(event)["kind"]
            if seen == kind:
                raise ZeroDivisionError("evaluator bug: division by zero in a stage score")
            observed.append(seen)
        return real(self, event)

    monkeypatch.setattr(Evaluator, "observe", faulty)
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"),
                 "-s", A, B, "-p", "1", "-o", str(tmp_path), "--blueprints", str(BLUEPRINTS)])
    captured = capsys.readouterr()
    assert code == 1, captured.err  # a crashed scenario fails the run; the others are played and written
    assert "Traceback" not in captured.err
    verdicts = {line.split(":", 1)[0]: line for line in captured.out.splitlines() if line.startswith((A + ":", B + ":"))}
    assert verdicts[B].startswith(f"{B}: crashed (ZeroDivisionError: evaluator bug: division by zero in a stage score)")
    assert "crashed" not in verdicts[A] and "ToolSandbox similarity 1.000" in verdicts[A]

    [out] = [p for p in tmp_path.iterdir() if p.is_dir()]
    results = {r["name"]: r for r in json.loads((out / "result_summary.json").read_text())["per_scenario_results"]}
    crashed = results[B]
    assert crashed["exception_type"] == "ZeroDivisionError" and crashed["similarity"] == 0
    assert "faulty" in crashed["traceback"] and crashed["traceback"].rstrip().endswith("division by zero in a stage score")
    block = crashed["dynsteer"]
    assert block["outcome"] == "crashed" and block["crash"] == "ZeroDivisionError: evaluator bug: division by zero in a stage score"
    assert block["score"] == 0 and not block["halted"] and block["report_written"]
    assert results[A]["exception_type"] is None and results[A]["dynsteer"]["outcome"] == "completed"

    trajectory = out / "trajectories" / B
    report = json.loads((trajectory / "dynsteer_report.json").read_text())
    assert report["outcome"] == "crashed" and report["crash"] == block["crash"] and report["score"] == 0
    assert report["k"] == len(observed)  # the events before the fault were evaluated, the faulty one was not
    events = [json.loads(line) for line in (trajectory / "dynsteer_events.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in events if e.get("kind") != "meta"] == [*observed, kind]  # logged before it was observed
    assert "crashed" in (trajectory / "dynsteer_report.md").read_text()

    summary = json.loads((out / "dynsteer_summary.json").read_text())
    assert summary["crashed"] == 1 and summary["outcomes"] == {"completed": 1, "crashed": 1}
    assert summary["mean_score"] == results[A]["dynsteer"]["score"]  # a crash is not judged


@pytest.mark.parametrize("where", ["finish", "build"])
def test_an_evaluator_that_cannot_be_built_or_cannot_finish_makes_that_scenario_a_crash(
    where: str, scenarios: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report builder (``finish``) or the evaluator's construction raises for one scenario: that scenario is a crash
    with the error as its reason and a ``crashed`` dynsteer block without a report; the run and the other scenario go on."""
    if where == "finish":
        real_finish = Evaluator.finish

        def finish(self: Evaluator, *args: Any, **kwargs: Any) -> Any:
            if self.blueprint.task == B:
                raise KeyError("evaluator bug: a stage without its window")
            return real_finish(self, *args, **kwargs)

        monkeypatch.setattr(Evaluator, "finish", finish)
    else:
        real_init = Evaluator.__init__

        def init(self: Evaluator, blueprint: Any, *args: Any, **kwargs: Any) -> None:
            if blueprint.task == B:
                raise KeyError("evaluator bug: a stage without its window")
            real_init(self, blueprint, *args, **kwargs)

        monkeypatch.setattr(Evaluator, "__init__", init)
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"),
                 "-s", A, B, "-p", "1", "-o", str(tmp_path), "--blueprints", str(BLUEPRINTS)])
    captured = capsys.readouterr()
    assert code == 1, captured.err  # a crashed scenario fails the run; the others are played and written
    assert "Traceback" not in captured.err and "free some space" not in captured.err
    verdicts = {line.split(":", 1)[0]: line for line in captured.out.splitlines() if line.startswith((A + ":", B + ":"))}
    assert verdicts[B].startswith(f"{B}: crashed (KeyError: 'evaluator bug: a stage without its window')"), verdicts[B]
    assert "report not written" in verdicts[B]
    assert "crashed" not in verdicts[A] and "ToolSandbox similarity 1.000" in verdicts[A]

    [out] = [p for p in tmp_path.iterdir() if p.is_dir()]
    results = {r["name"]: r for r in json.loads((out / "result_summary.json").read_text())["per_scenario_results"]}
    assert results[B]["exception_type"] == "KeyError" and results[B]["similarity"] == 0
    assert "evaluator bug" in results[B]["traceback"]
    block = results[B]["dynsteer"]
    assert block["outcome"] == "crashed" and block["crash"] == "KeyError: 'evaluator bug: a stage without its window'"
    assert block["score"] == 0 and not block["report_written"] and block["report_error"] is None
    assert not (out / "trajectories" / B / "dynsteer_report.json").exists()
    assert results[A]["dynsteer"]["outcome"] == "completed" and results[A]["dynsteer"]["report_written"]
    summary = json.loads((out / "dynsteer_summary.json").read_text())
    assert summary["crashed"] == 1 and summary["outcomes"] == {"completed": 1, "crashed": 1}
