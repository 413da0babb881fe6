"""--otel's value and the OTEL_* variables: an endpoint, a file, or the variables; every mistake one sentence."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.otel import settings as otel
from dynsteer_hook.otel.settings import EXTRA_MISSING, OtelSettings, otel_settings


def test_a_url_is_the_base_of_both_signal_endpoints() -> None:
    """http(s) URLs are collectors: /v1/traces and /v1/logs go under them, as under OTEL_EXPORTER_OTLP_ENDPOINT."""
    s = otel_settings("http://127.0.0.1:4318/", environ={})
    assert (s.endpoint, s.file) == ("http://127.0.0.1:4318/", None)
    assert s.signal_endpoint("traces") == "http://127.0.0.1:4318/v1/traces" and s.signal_endpoint("logs") == "http://127.0.0.1:4318/v1/logs"


def test_alone_the_flag_leaves_the_endpoint_to_the_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """--otel without a value: no endpoint of ours, so the SDK reads OTEL_EXPORTER_OTLP_*; the target says which."""
    s = otel_settings("", environ={})
    assert (s.endpoint, s.file, s.signal_endpoint("traces")) == (None, None, None)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert OtelSettings().target == "http://localhost:4318"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert OtelSettings().target == "http://collector:4318"


def test_anything_else_is_a_file(tmp_path: Path) -> None:
    """A path is a file the telemetry is appended to."""
    s = otel_settings(str(tmp_path / "t.jsonl"), environ={})
    assert (s.endpoint, s.file, s.target) == (None, tmp_path / "t.jsonl", str(tmp_path / "t.jsonl"))


def test_service_name_and_content_come_from_the_standard_variables() -> None:
    """OTEL_SERVICE_NAME names the service (default dynsteer); the GenAI content variable turns content on."""
    assert otel_settings("", environ={}).service_name == "dynsteer"
    env = {"OTEL_SERVICE_NAME": "agents-ci", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "True"}
    s = otel_settings("", environ=env)
    assert (s.service_name, s.capture_content) == ("agents-ci", True)
    assert otel_settings("", environ={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"}).capture_content is False
    assert otel_settings("", content=True, environ={}).capture_content is True


@pytest.mark.parametrize(("value", "fragment"), [
    ("grpc://127.0.0.1:4317", "not an OTLP/HTTP endpoint"),
    ("http://", "not an OTLP/HTTP endpoint"),
    ("http://127.0.0.1:port", "not a number"),
    ("{tmp}", "is a folder"),
    ("{tmp}/no/such/folder/t.jsonl", "does not exist"),
])
def test_a_bad_value_is_one_sentence(value: str, fragment: str, tmp_path: Path) -> None:
    """Each mistake names the value and what to pass instead."""
    with pytest.raises(DynsteerError) as exc:
        otel_settings(value.format(tmp=tmp_path), environ={})
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_without_the_extra_the_flag_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OpenTelemetry installed: one sentence naming the extra."""
    monkeypatch.setattr(otel.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DynsteerError, match="dynsteer-hook\\[otel\\]") as exc:
        otel_settings("", environ={})
    assert str(exc.value) == EXTRA_MISSING
    assert importlib.util is otel.importlib.util
