"""The live hook's lifecycle: an observer attached through ``RunOptions`` sees every point of a real
rollout, in order, with what an exporter or a transcript needs, and changes nothing of the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ts_support import SCRIPTS, A, D

from dynsteer_hook.model.events import ToolCall, ToolResult
from dynsteer_hook.toolsandbox.live.hook import ActionClosed, EventSeen, Halted, RolloutEnd, RolloutHook, RolloutStart, TurnEnded
from dynsteer_hook.toolsandbox.live.playing import RunOptions, play_scenario

pytestmark = pytest.mark.toolsandbox


class Recorder(RolloutHook):
    """Keeps every payload it is handed, with the name of the point."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def on_rollout_start(self, start: RolloutStart) -> None:
        self.seen.append(("start", start))

    def on_event(self, seen: EventSeen) -> None:
        self.seen.append(("event", seen))

    def on_turn_end(self, turn: TurnEnded) -> None:
        self.seen.append(("turn", turn))

    def on_action_closed(self, closed: ActionClosed) -> None:
        self.seen.append(("closed", closed))

    def on_halt(self, halted: Halted) -> None:
        self.seen.append(("halt", halted))

    def on_rollout_end(self, end: RolloutEnd) -> None:
        self.seen.append(("end", end))

    def of(self, kind: str) -> list[Any]:
        return [p for k, p in self.seen if k == kind]


def _play(scenarios: dict[str, Any], name: str, script: str, out: Path, *observers: RolloutHook) -> Any:
    options = RunOptions(agent="Scripted", user="Scripted", script=SCRIPTS / f"{script}.json", observers=observers)
    return play_scenario((name, scenarios[name]), options=options, output_directory=out)


def test_an_observer_sees_the_rollout_from_start_to_report(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """Start, every raw event numbered on the k clock, each agent turn, each closed action with the stages it
    settled, and the end with the finished report, in that order."""
    rec = Recorder()
    result = _play(scenarios, A, "clean_solver", tmp_path, rec)
    kinds = [k for k, _ in rec.seen]
    assert kinds[0] == "start" and kinds[-1] == "end" and "halt" not in kinds and "turn" in kinds
    start = rec.of("start")[0]
    assert (start.scenario, start.agent, start.agent_model, start.user, start.blueprint) == (A, "Scripted", None, "Scripted", f"{A}.json")
    events = rec.of("event")
    end = rec.of("end")[0]
    assert end.report is not None and end.report.outcome == "completed" and end.report_error is None
    assert [e.k for e in events] == list(range(1, end.report.k + 1))
    closed = rec.of("closed")
    assert [c.action.t for c in closed] == list(range(1, end.report.t + 1))
    assert [s.milestone for c in closed for s in c.stages] == [s.milestone for s in end.report.stages]
    assert all(s.t == c.action.t for c in closed for s in c.stages)
    assert result.dynsteer.outcome == "completed"


def test_each_call_reaches_the_observer_with_both_names_its_arguments_and_its_result(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """A tool call carries its id, the name the agent used and its arguments; its result follows with the same id."""
    rec = Recorder()
    _play(scenarios, A, "clean_solver", tmp_path, rec)
    events = [e.event for e in rec.of("event")]
    calls = [e for e in events if isinstance(e, ToolCall) and e.actor == "agent"]
    assert calls and all(c.call_id and c.tool and c.arguments is not None and c.rejected is None for c in calls)
    answered = {e.call_id for e in events if isinstance(e, ToolResult)}
    assert {c.call_id for c in calls} <= answered


def test_a_halt_names_the_call_it_kept_from_running(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """On a fatal minefield the observer sees the call, then the halt naming it, and never a result of it."""
    rec = Recorder()
    result = _play(scenarios, D, "minefield_agent", tmp_path, rec)
    [halted] = rec.of("halt")
    assert halted.stop.reason == "fatal_minefield" and isinstance(halted.call, ToolCall)
    events = rec.of("event")
    assert events[-1].event == halted.call and events[-1].k == halted.stop.k
    assert not any(isinstance(e.event, ToolResult) and e.event.call_id == halted.call.call_id for e in events)
    end = rec.of("end")[0]
    assert end.report is not None and end.report.stop == halted.stop and result.dynsteer.halted


def test_observers_change_nothing_of_the_run(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """The same rollout with and without an observer writes the same report and the same dynsteer block."""
    plain = _play(scenarios, D, "minefield_agent", tmp_path / "plain")
    watched = _play(scenarios, D, "minefield_agent", tmp_path / "watched", Recorder())

    def report(out: Path) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((out / "trajectories" / D / "dynsteer_report.json").read_text())
        return data

    assert report(tmp_path / "plain") == report(tmp_path / "watched")
    timings = {"rollout_seconds", "evaluator_seconds"}
    assert plain.dynsteer.model_dump(exclude=timings) == watched.dynsteer.model_dump(exclude=timings)
