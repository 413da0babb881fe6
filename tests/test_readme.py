"""The README's Python example runs as written: its code block is taken from README.md and executed
against a real blueprint file, once with events that complete the blueprint and once with a fatal call."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import call, family, settle_events

from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.model.events import Event
from dynsteer_hook.model.records import Report

README = Path(__file__).resolve().parents[1] / "README.md"


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    [code] = [b for b in blocks if "evaluator.observe(event)" in b]
    return code


def _run(blueprint_family: str, events: list[Event], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    save_blueprint(family(blueprint_family).blueprint(), tmp_path / "BP.json")
    monkeypatch.chdir(tmp_path)

    def my_agent_loop_events() -> Iterator[Event]:
        yield from events

    namespace: dict[str, object] = {"my_agent_loop_events": my_agent_loop_events}
    exec(compile(_example(), str(README), "exec"), namespace)
    return namespace


def test_readme_example_evaluates_a_completed_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Every event is observed, nothing halts, and ``finish`` gives the completed report."""
    namespace = _run("chain", settle_events(["a", "b", "c"]), tmp_path, monkeypatch)
    report = namespace["report"]
    assert isinstance(report, Report)
    assert report.outcome == "completed" and report.settled == ["a", "b", "c"] and not report.halted
    assert capsys.readouterr().out == ""


def test_readme_example_catches_the_halt_before_a_fatal_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A fatal call raises ``Halt`` out of ``observe``; the example prints the stop and still gets the report."""
    namespace = _run("minefield_off_path", [call("1", "delete_all")], tmp_path, monkeypatch)
    # The example's print is all a program embedding the evaluator sees: the package logs no unrequested line.
    assert capsys.readouterr() == ("fatal_minefield 1 0\n", "")
    report = namespace["report"]
    assert isinstance(report, Report) and report.outcome == "halted" and report.stop is not None
