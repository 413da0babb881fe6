"""The rollout as GenAI telemetry, in memory: the spans, their parents and attributes, the evaluation events on the
span of the call that closed each stage, the stop and the first error, an intercepted call, content only when asked."""

from __future__ import annotations

import pickle

import pytest
import structlog
from builders import DELETE_ALL, UserMessage, act, call, family, result, settle_events
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from otel_support import feed, memory, observer

from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.otel.observer import EVALUATION_EVENT, EVALUATION_NAME, OtelObserver
from dynsteer_hook.otel.settings import OtelSettings

CHAIN = family("chain").blueprint()
MINES = family("minefield_off_path").blueprint()


def test_a_rollout_is_an_invoke_agent_span_with_an_execute_tool_child_per_call() -> None:
    """Three calls make three execute_tool spans under one invoke_agent span, in one trace, with the semconv attributes."""
    mem = memory()
    report = feed(CHAIN, settle_events(["a", "b", "c"]), observer(mem))
    root = mem.one("invoke_agent Scripted")
    tools = [s for s in mem.finished() if s.name.startswith("execute_tool")]
    assert [s.name for s in tools] == ["execute_tool op_a", "execute_tool op_b", "execute_tool op_c"]
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in tools)
    assert {s.context.trace_id for s in tools} == {root.context.trace_id}
    assert root.attributes is not None and root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "Scripted" and root.attributes["dynsteer.scenario"] == "chain"
    assert root.attributes["dynsteer.outcome"] == report.outcome == "completed" and root.attributes["dynsteer.score"] == report.score
    assert root.status.status_code == StatusCode.UNSET
    first = tools[0].attributes
    assert first is not None and first["gen_ai.operation.name"] == "execute_tool" and first["gen_ai.tool.name"] == "op_a"
    assert first["gen_ai.tool.call.id"] == "c1" and first["dynsteer.tool.resolved"] == "op_a" and first["dynsteer.tool_call.executed"] is True
    assert all(s.start_time is not None and s.end_time is not None and s.start_time <= s.end_time for s in tools)


def test_each_judged_stage_is_an_evaluation_event_on_the_span_of_the_call_that_closed_it() -> None:
    """One gen_ai.evaluation.result per stage, in the trace of the call that settled it, with its score, label and rationale."""
    mem = memory()
    report = feed(CHAIN, settle_events(["a", "b", "c"]), observer(mem))
    spans = {s.attributes["gen_ai.tool.name"]: s for s in mem.finished() if s.attributes and "gen_ai.tool.name" in s.attributes}
    events = mem.events()
    assert [e.log_record.event_name for e in events] == [EVALUATION_EVENT] * 3
    for stage, event in zip(report.stages, events, strict=True):
        attrs = event.log_record.attributes
        assert attrs is not None
        assert attrs["gen_ai.evaluation.name"] == EVALUATION_NAME and attrs["dynsteer.milestone"] == stage.milestone
        assert attrs["gen_ai.evaluation.score.value"] == stage.composite
        assert attrs["gen_ai.evaluation.score.label"] == ("pass" if stage.composite >= 0.7 else "fail")
        assert isinstance(attrs["gen_ai.evaluation.explanation"], str) and attrs["gen_ai.evaluation.explanation"]
        closing = spans[stage.tool]
        assert (event.log_record.trace_id, event.log_record.span_id) == (closing.context.trace_id, closing.context.span_id)


def test_the_label_follows_the_configured_pass_threshold() -> None:
    """A stage under theta_pass is labelled fail: with theta_pass 1.0 a stage short of a perfect score fails."""
    mem = memory()
    config = EvaluatorConfig(theta_pass=1.0)
    report = feed(CHAIN, [UserMessage("go"), *act("c1", "op_a", {"x": "wrong"}), *act("c2", "op_a", {"x": "a"})],
                  observer(mem, theta_pass=config.theta_pass), config=config)
    labels = [e.log_record.attributes["gen_ai.evaluation.score.label"] for e in mem.events() if e.log_record.attributes]
    assert labels == ["pass" if s.composite >= 1.0 else "fail" for s in report.stages] and "fail" in labels


def test_a_fatal_call_is_a_span_never_executed_and_the_halt_is_the_rollout_status() -> None:
    """The intercepted call gets its span (never executed, an error), the stop is an event, the rollout span's status an error."""
    mem = memory()
    report = feed(MINES, [UserMessage("go"), *act("c1", "op_a", {"x": "a"}), call("c2", "delete_all", {"target": "all"})], observer(mem))
    assert report.halted and report.stop is not None
    root = mem.one("invoke_agent Scripted")
    assert root.status.status_code == StatusCode.ERROR and root.status.description is not None
    assert root.status.description.startswith("halted: fatal_minefield")
    assert root.attributes is not None and root.attributes["error.type"] == "dynsteer.halt.fatal_minefield"
    [stop] = [e for e in root.events if e.name == "dynsteer.stop"]
    assert stop.attributes is not None and stop.attributes["dynsteer.stop.reason"] == "fatal_minefield"
    assert stop.attributes["dynsteer.stop.minefield"] == DELETE_ALL.id and stop.attributes["dynsteer.stop.k"] == report.stop.k
    fatal = mem.one("execute_tool delete_all")
    assert fatal.attributes is not None and fatal.attributes["dynsteer.intercepted"] is True
    assert fatal.attributes["dynsteer.tool_call.executed"] is False and fatal.status.status_code == StatusCode.ERROR
    assert fatal.attributes["dynsteer.k"] == report.stop.k and [e.name for e in fatal.events] == ["dynsteer.stop"]
    assert [s.name for s in mem.finished()].count("execute_tool op_a") == 1


def test_the_first_error_is_an_event_with_dynsteer_attributes() -> None:
    """A failing call makes the run's first error: an event on the rollout span naming it on both clocks."""
    mem = memory()
    report = feed(CHAIN, [UserMessage("go"), *act("c1", "op_a", {"x": "a"}, exception="PermissionError: no network"),
                          *act("c2", "op_a", {"x": "a"})], observer(mem))
    assert report.first_error is not None
    [event] = [e for e in mem.one("invoke_agent Scripted").events if e.name == "dynsteer.first_error"]
    assert event.attributes is not None
    assert (event.attributes["dynsteer.first_error.k"], event.attributes["dynsteer.first_error.t"]) == (report.first_error.k, report.first_error.t)
    failed = next(s for s in mem.finished() if s.attributes and s.attributes.get("gen_ai.tool.call.id") == "c1")
    assert failed.status.status_code == StatusCode.ERROR and failed.attributes is not None
    assert failed.attributes["error.type"] == "PermissionError" and failed.status.description == "PermissionError: no network"


def test_calls_left_without_a_result_still_get_their_spans() -> None:
    """A call the run ended before answering is a span marked unanswered."""
    mem = memory()
    feed(CHAIN, [UserMessage("go"), call("c1", "op_a", {"x": "a"})], observer(mem))
    span = mem.one("execute_tool op_a")
    assert span.attributes is not None and span.attributes["dynsteer.tool_call.answered"] is False
    assert span.status.status_code == StatusCode.ERROR


def test_arguments_and_results_are_recorded_only_when_asked_for() -> None:
    """By default no gen_ai.tool.call.arguments or .result; with capture_content both, as JSON."""
    events = [UserMessage("go"), *act("c1", "op_a", {"x": "a"}, value={"rows": 3})]
    plain = memory()
    feed(CHAIN, events, observer(plain))
    attrs = plain.one("execute_tool op_a").attributes
    assert attrs is not None and "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs
    content = OtelSettings(capture_content=True)
    full = memory(content)
    feed(CHAIN, events, observer(full, content))
    attrs = full.one("execute_tool op_a").attributes
    assert attrs is not None and attrs["gen_ai.tool.call.arguments"] == '{"x": "a"}' and attrs["gen_ai.tool.call.result"] == '{"rows": 3}'


def test_hostile_names_and_results_are_cut_to_a_bounded_length() -> None:
    """A tool name of 100,000 characters and a result of a megabyte become bounded attributes."""
    content = OtelSettings(capture_content=True)
    mem = memory(content)
    feed(CHAIN, [UserMessage("go"), call("c1", "x" * 100_000, {"x": "a"}), result("c1", "y" * 1_000_000)], observer(mem, content))
    [span] = [s for s in mem.finished() if s.name.startswith("execute_tool")]
    assert len(span.name) < 200 and span.attributes is not None
    assert len(str(span.attributes["gen_ai.tool.name"])) <= 128 and len(str(span.attributes["gen_ai.tool.call.result"])) <= 4096


def test_the_global_tracer_provider_is_left_alone() -> None:
    """The observer's providers are its own: the process's global tracer provider stays what it was."""
    before = trace.get_tracer_provider()
    mem = memory()
    feed(CHAIN, settle_events(["a"]), observer(mem))
    assert trace.get_tracer_provider() is before and mem.finished()


def test_each_rollout_is_its_own_trace() -> None:
    """One observer over two rollouts makes two invoke_agent spans in two traces."""
    mem = memory()
    watcher = observer(mem)
    feed(CHAIN, settle_events(["a"]), watcher)
    feed(CHAIN, settle_events(["a"]), watcher)
    roots = [s for s in mem.finished() if s.name.startswith("invoke_agent")]
    assert len(roots) == 2 and roots[0].context.trace_id != roots[1].context.trace_id


def test_a_failing_exporter_drops_the_telemetry_never_the_rollout(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the SDK raises inside the observer, the rollout goes on to its report and one warning says so."""
    mem = memory()
    watcher = observer(mem)

    def broken(*args: object, **kw: object) -> None:
        raise RuntimeError("exporter bug")

    monkeypatch.setattr(mem.telemetry.tracer, "start_span", broken)
    with structlog.testing.capture_logs() as logs:
        report = feed(CHAIN, settle_events(["a", "b"]), watcher)
        feed(CHAIN, settle_events(["a"]), watcher)
    assert report.settled == ["a", "b"] and report.outcome == feed(CHAIN, settle_events(["a", "b"])).outcome
    assert [e["event"] for e in logs] == ["OpenTelemetry: a rollout's telemetry is dropped"] and "exporter bug" in logs[0]["error"]


@pytest.mark.parametrize("used", [False, True])
def test_the_observer_pickles_for_worker_processes(used: bool) -> None:
    """Spawned workers get a copy: its settings, never the parent's providers or a rollout in flight."""
    settings = OtelSettings(endpoint="http://127.0.0.1:9", capture_content=True)
    mem = memory(settings)
    watcher = OtelObserver(settings, source="replay", theta_pass=0.5, telemetry=mem.telemetry)
    if used:
        feed(CHAIN, settle_events(["a"]), watcher)
    copy = pickle.loads(pickle.dumps(watcher))
    assert (copy.settings, copy.source, copy.theta_pass) == (settings, "replay", 0.5)
    assert copy._telemetry is None and copy._rollout is None
