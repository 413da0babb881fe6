"""`dynsteer evaluate --otel`: the event file's rollout exported, to a file or a collector; flag mistakes are one sentence."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from builders import call, family, settle_events
from otel_receiver import attributes, otlp_receiver, trickling_port

from dynsteer_hook.cli import EXIT_USAGE, main
from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.model.events import Event, event_to_record
from dynsteer_hook.otel.export import FLUSH_DEADLINE

pytestmark = pytest.mark.usefixtures("core_cli")

CHAIN = family("chain").blueprint()
MINES = family("minefield_off_path").blueprint()


def _evaluate(tmp_path: Path, events: list[Event], *extra: str, bp: object = CHAIN) -> int:
    save_blueprint(bp, tmp_path / "bp.json")  # type: ignore[arg-type]
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(event_to_record(e)) + "\n" for e in events), encoding="utf-8")
    return main(["evaluate", "--blueprint", str(tmp_path / "bp.json"), "--events", str(tmp_path / "trace.jsonl"),
                 "--report", str(tmp_path / "out"), *extra])


def test_evaluate_exports_the_event_files_rollout_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The rollout span (source evaluate, no agent name known) with a span per call and an evaluation per stage."""
    path = tmp_path / "otel.jsonl"
    assert _evaluate(tmp_path, settle_events(["a", "b", "c"]), "--otel", str(path)) == 0
    assert "completed" in capsys.readouterr().out
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    spans = [s for x in lines for rs in x.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]]
    logs = [r for x in lines for rl in x.get("resourceLogs", []) for sl in rl["scopeLogs"] for r in sl["logRecords"]]
    [root] = [s for s in spans if s["name"] == "invoke_agent"]
    assert {a["key"]: a["value"] for a in root["attributes"]}["dynsteer.source"] == {"stringValue": "evaluate"}
    assert len([s for s in spans if s["name"].startswith("execute_tool")]) == 3 and len(logs) == 3


def test_evaluate_exports_a_halt_to_a_collector(tmp_path: Path) -> None:
    """A halted event file reaches the collector with the intercepted call and the halt as the status."""
    with otlp_receiver() as (url, got):
        assert _evaluate(tmp_path, [call("1", "delete_all")], "--otel", url, bp=MINES) == 0
    spans = {s.name: s for s in got.spans()}
    assert spans["invoke_agent"].status.code == 2
    assert attributes(spans["execute_tool delete_all"])["dynsteer.intercepted"] is True


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--otel-content"], "--otel-content is for --otel"),
    (["--otel", "ftp://host/x"], "not an OTLP/HTTP endpoint"),
])
def test_otel_flag_mistakes_are_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], fragment: str) -> None:
    """A bad --otel value or --otel-content alone exits 2 with one sentence, before any report is written."""
    assert _evaluate(tmp_path, settle_events(["a"]), *extra) == EXIT_USAGE
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("target", ["trace.jsonl", "bp.json"])
def test_telemetry_is_never_appended_to_an_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str) -> None:
    """--otel naming the event file or the blueprint is refused in one sentence, and that input keeps its bytes."""
    save_blueprint(CHAIN, tmp_path / "bp.json")
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(event_to_record(e)) + "\n" for e in settle_events(["a"])), encoding="utf-8")
    before = (tmp_path / target).read_bytes()
    assert main(["evaluate", "--blueprint", str(tmp_path / "bp.json"), "--events", str(tmp_path / "trace.jsonl"),
                 "--report", str(tmp_path / "out"), "--otel", str(tmp_path / target)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"--otel {tmp_path / target} is the input" in err and err.count("\n") == 1
    assert (tmp_path / target).read_bytes() == before and not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["trickling", "pipe"])
def test_evaluate_writes_its_report_and_exits_whatever_the_telemetry_does(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                          kind: str) -> None:
    """--otel to a collector that answers one byte every half second, or to a pipe nobody reads: the report is written, the
    exit status is 0 within the flush deadline, and one warning names the target."""
    def timed(target: str) -> float:
        start = time.perf_counter()
        assert _evaluate(tmp_path, settle_events(["a", "b", "c"]), "--otel", target) == 0
        return time.perf_counter() - start

    if kind == "trickling":
        with trickling_port() as port:
            target = f"http://127.0.0.1:{port}"
            took = timed(target)
    else:
        target = str(tmp_path / "pipe")
        os.mkfifo(target)
        took = timed(target)
    assert took < FLUSH_DEADLINE + 2.0, took
    assert json.loads((tmp_path / "out" / "dynsteer_report.json").read_text())["outcome"] == "completed"
    warnings = [line for line in capsys.readouterr().err.splitlines() if "OpenTelemetry" in line]
    assert len(warnings) == 1 and target in warnings[0], warnings
