"""Export: OTLP over HTTP to a collector the test starts (the protobuf decoded), OTLP JSON lines to a file, and a
collector that is down or hangs, which costs one bounded export and one warning, never the run."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import structlog
from builders import UserMessage, act, call, family, settle_events
from otel_receiver import attributes, closed_port, otlp_receiver, silent_port, trickling_port
from otel_support import feed

from dynsteer_hook.otel import export
from dynsteer_hook.otel.export import Breaker, Telemetry, exporters, telemetry_for
from dynsteer_hook.otel.observer import EVALUATION_EVENT, OtelObserver
from dynsteer_hook.otel.settings import OtelSettings

CHAIN = family("chain").blueprint()
MINES = family("minefield_off_path").blueprint()
HALTING = [UserMessage("go"), *act("c1", "op_a", {"x": "a"}), call("c2", "delete_all", {"target": "all"})]
STATUS_ERROR = 2  # OTLP's Status.STATUS_CODE_ERROR


def _exporting(settings: OtelSettings) -> tuple[Telemetry, OtelObserver]:
    telemetry = Telemetry.build(settings, *exporters(settings))
    return telemetry, OtelObserver(settings, telemetry=telemetry)


def test_spans_and_evaluation_events_reach_an_otlp_http_collector() -> None:
    """The collector decodes one trace: the rollout span with its calls, the halt as its status, the evaluation events
    parented to the call that closed the stage, under the configured service name."""
    with otlp_receiver() as (url, got):
        settings = OtelSettings(endpoint=url, service_name="dynsteer-test")
        telemetry, watcher = _exporting(settings)
        report = feed(MINES, HALTING, watcher)
        telemetry.shutdown()
    assert {"/v1/traces", "/v1/logs"} <= set(got.paths) and got.content_types == {"application/x-protobuf"}
    assert got.services() == {"dynsteer-test"}
    spans = {s.name: s for s in got.spans()}
    assert set(spans) == {"invoke_agent Scripted", "execute_tool op_a", "execute_tool delete_all"}
    root = spans["invoke_agent Scripted"]
    assert root.status.code == STATUS_ERROR and root.status.message.startswith("halted: fatal_minefield")
    assert [e.name for e in root.events] == ["dynsteer.stop", "dynsteer.first_error"]
    for name in ("execute_tool op_a", "execute_tool delete_all"):
        assert spans[name].parent_span_id == root.span_id and spans[name].trace_id == root.trace_id
    fatal = attributes(spans["execute_tool delete_all"])
    assert fatal["dynsteer.intercepted"] is True and fatal["dynsteer.tool_call.executed"] is False
    [record] = got.records()
    assert record.event_name == EVALUATION_EVENT and record.span_id == spans["execute_tool op_a"].span_id
    assert record.trace_id == root.trace_id
    values = attributes(record)
    assert values["gen_ai.evaluation.score.value"] == report.stages[0].composite and values["dynsteer.milestone"] == "a"


def test_telemetry_goes_to_a_file_as_otlp_json_lines(tmp_path: Path) -> None:
    """--otel FILE appends one OTLP/JSON request per line, ids in hex, the evaluation event naming its span."""
    path = tmp_path / "telemetry.jsonl"
    path.write_text("", encoding="utf-8")
    telemetry, watcher = _exporting(OtelSettings(file=path))
    feed(CHAIN, settle_events(["a", "b"]), watcher)
    telemetry.shutdown()
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    spans = [s for line in lines for rs in line.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]]
    logs = [r for line in lines for rl in line.get("resourceLogs", []) for sl in rl["scopeLogs"] for r in sl["logRecords"]]
    assert sorted(s["name"] for s in spans) == ["execute_tool op_a", "execute_tool op_b", "invoke_agent Scripted"]
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    by_id = {s["spanId"]: s["name"] for s in spans}
    assert [by_id[r["spanId"]] for r in logs] == ["execute_tool op_a", "execute_tool op_b"]
    assert {r["eventName"] for r in logs} == {EVALUATION_EVENT}


def _played(rollouts: int, watcher: OtelObserver | None) -> float:
    start = time.perf_counter()
    for _ in range(rollouts):
        feed(CHAIN, settle_events(["a", "b", "c"]), *([watcher] if watcher else []))
    return time.perf_counter() - start


def _dead_collector_run(url: str, rollouts: int) -> tuple[float, float, float, list[dict[str, object]]]:
    """Seconds of the rollouts without telemetry, with it against ``url``, of the flush at the end, and the warnings."""
    plain = _played(rollouts, None)
    settings = OtelSettings(endpoint=url)
    with structlog.testing.capture_logs() as logs:
        telemetry, watcher = _exporting(settings)
        played = _played(rollouts, watcher)
        start = time.perf_counter()
        telemetry.shutdown()
        flush = time.perf_counter() - start
    return plain, played, flush, [e for e in logs if e["log_level"] == "warning"]


@pytest.mark.parametrize("collector", ["refusing", "hanging"])
def test_a_dead_collector_costs_one_bounded_export_and_one_warning(collector: str) -> None:
    """Rollouts against a closed port (or one that never answers) play as fast as without telemetry; the end waits
    for one export of at most the timeout; one warning names the target."""
    if collector == "refusing":
        url = f"http://127.0.0.1:{closed_port()}"
        plain, played, flush, warnings = _dead_collector_run(url, 20)
    else:
        with silent_port() as port:
            url = f"http://127.0.0.1:{port}"
            plain, played, flush, warnings = _dead_collector_run(url, 20)
    assert played < 2 * plain + 1.0, (plain, played)  # the rollouts never wait for the collector (waiting, each would take 1 s)
    assert flush < 2.5, flush  # one export of at most 1 s (and its one quick retry); the breaker dropped the rest
    assert len(warnings) == 1 and warnings[0]["target"] == url, warnings


@contextmanager
def _stalling(kind: str, tmp_path: Path) -> Iterator[OtelSettings]:
    """Settings whose exports stall: a collector that answers one byte every half second, or a pipe nobody reads."""
    if kind == "trickling":
        with trickling_port() as port:
            yield OtelSettings(endpoint=f"http://127.0.0.1:{port}")
    else:
        os.mkfifo(tmp_path / "pipe")
        yield OtelSettings(file=tmp_path / "pipe")


def _timed(action: Callable[[], None], bound: float = 20.0) -> float:
    """Seconds ``action`` took, run in a thread given up after ``bound`` (a stalled flush fails the test, never hangs it)."""
    thread = threading.Thread(target=action, daemon=True)
    start = time.perf_counter()
    thread.start()
    thread.join(bound)
    assert not thread.is_alive(), f"still waiting after {bound} s"
    return time.perf_counter() - start


@pytest.mark.parametrize("kind", ["trickling", "pipe"])
def test_a_stalled_export_costs_the_end_one_bounded_wait_and_one_warning(kind: str, tmp_path: Path) -> None:
    """A collector that trickles its answer (each read of the socket within the timeout) or a pipe nobody reads: the
    rollouts never wait, the flush at the end waits at most its deadline, and one warning names the target and the stall."""
    with _stalling(kind, tmp_path) as settings, structlog.testing.capture_logs() as logs:
        plain = _played(20, None)
        telemetry, watcher = _exporting(settings)
        played = _played(20, watcher)
        time.sleep(0.6)  # the batch's first export starts (and stalls) while the run goes on
        flush = _timed(telemetry.shutdown)
    assert played < 2 * plain + 1.0, (plain, played)
    assert flush < export.FLUSH_DEADLINE + 0.5, flush
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert len(warnings) == 1 and warnings[0]["target"] == settings.target, warnings
    assert ("no complete answer" if kind == "trickling" else "nothing reads the pipe") in warnings[0]["reason"], warnings


def test_the_end_has_one_deadline_for_every_telemetry_together(tmp_path: Path) -> None:
    """Two telemetries whose exports stall (a trickling collector, a pipe nobody reads) are stopped within one deadline,
    not one each (the SDK alone gives each of their four processors 30 s)."""
    with _stalling("trickling", tmp_path) as slow, _stalling("pipe", tmp_path) as pipe, structlog.testing.capture_logs() as logs:
        for settings in (slow, pipe):
            watcher = OtelObserver(settings, telemetry=telemetry_for(settings))
            feed(CHAIN, settle_events(["a", "b", "c"]), watcher)
        flush = _timed(export.shutdown_all)
    assert flush < export.FLUSH_DEADLINE + 0.5, flush
    targets = sorted(e["target"] for e in logs if e["log_level"] == "warning")
    assert targets == sorted([slow.target, pipe.target]), logs


def test_the_breaker_drops_while_open_and_tries_again_after_the_cooldown() -> None:
    """A failure opens it (one warning); batches are dropped and counted until the cooldown ends; a success closes it."""
    now = [0.0]
    breaker = Breaker("http://collector", cooldown=10.0, clock=lambda: now[0])
    with structlog.testing.capture_logs() as logs:
        assert breaker.allows(3)
        breaker.failed(3, "refused")
        assert not breaker.allows(5) and breaker.dropped == 8
        now[0] = 11.0
        assert breaker.allows(2)
        breaker.failed(2, "refused again")
        assert not breaker.allows(1)
        now[0] = 22.0
        assert breaker.allows(1)
        breaker.succeeded()
        assert breaker.allows(1)
    assert [e["reason"] for e in logs] == ["refused"] and breaker.failures == 2


def test_a_process_keeps_one_telemetry_per_settings_until_shut_down(tmp_path: Path) -> None:
    """The same settings give the same providers; shutdown_all flushes them and forgets them."""
    settings = OtelSettings(file=tmp_path / "t.jsonl")
    first = telemetry_for(settings)
    assert telemetry_for(settings) is first and telemetry_for(OtelSettings(file=tmp_path / "u.jsonl")) is not first
    export.shutdown_all()
    assert telemetry_for(settings) is not first
    export.shutdown_all()
