"""Where a command's telemetry goes: ``--otel`` and the standard ``OTEL_*`` variables, checked before anything runs.

``--otel URL`` sends OTLP over HTTP to a collector (``URL`` is the base, as in
``OTEL_EXPORTER_OTLP_ENDPOINT``: ``/v1/traces`` and ``/v1/logs`` are added); ``--otel FILE`` appends
OTLP JSON lines to a file; ``--otel`` alone sends to the endpoint the ``OTEL_EXPORTER_OTLP_*``
variables name (OpenTelemetry's default ``http://localhost:4318`` without them). The service
is ``OTEL_SERVICE_NAME`` or ``dynsteer``. Tool arguments and results are recorded only when
asked for (``--otel-content``, or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).

This module imports no OpenTelemetry: the settings travel to worker processes (picklable) and
each process builds its own exporters from them (``export``).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from dynsteer_hook.model.errors import DynsteerError

DEFAULT_SERVICE = "dynsteer"
EXPORT_TIMEOUT = 1.0
"""Seconds one export may take. The SDK's ``OTEL_EXPORTER_OTLP_TIMEOUT`` is not read: the Python SDK takes it
in seconds where the specification says milliseconds, and a slow collector must never hold a run."""
CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CONTENT_ON = frozenset({"true", "1", "yes", "span_only", "span_and_event"})
EXTRA_MISSING = "--otel needs OpenTelemetry, an optional extra: pip install 'dynsteer-hook[otel]'"


@dataclass(frozen=True, slots=True)
class OtelSettings:
    """Where telemetry goes and what it holds (picklable, hashable: a process keeps one exporter pair per value).

    Attributes:
        endpoint: The OTLP/HTTP base URL; None for the ``OTEL_EXPORTER_OTLP_*`` variables (with ``file`` None).
        file: A file that OTLP JSON lines are appended to, instead of a collector.
        service_name: The ``service.name`` of the telemetry.
        capture_content: Record tool arguments and results (``gen_ai.tool.call.arguments`` / ``.result``).
        timeout: Seconds one export may take.
    """

    endpoint: str | None = None
    file: Path | None = None
    service_name: str = DEFAULT_SERVICE
    capture_content: bool = False
    timeout: float = EXPORT_TIMEOUT

    @property
    def target(self) -> str:
        """Where the telemetry goes, for messages."""
        if self.file is not None:
            return str(self.file)
        return self.endpoint or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
            "OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318"

    def signal_endpoint(self, signal: str) -> str | None:
        """The URL of one signal (``traces``, ``logs``) under ``endpoint``; None leaves it to the variables."""
        if self.endpoint is None:
            return None
        return f"{self.endpoint.rstrip('/')}/v1/{signal}"


def _check_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DynsteerError(f"--otel {value!r} is not an OTLP/HTTP endpoint; pass a URL such as http://localhost:4318, or a file path")
    try:
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise DynsteerError(f"--otel {value!r} has a port that is not a number; pass a URL such as http://localhost:4318") from None
    return value


def _check_file(value: str) -> Path:
    path = Path(value).expanduser()
    if path.is_dir():
        raise DynsteerError(f"--otel {value} is a folder; pass a file to append the telemetry to, or an http:// URL")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise DynsteerError(f"--otel {value}: the folder {parent} does not exist; create it or pass another file")
    if (path.exists() and not os.access(path, os.W_OK)) or (not path.exists() and not os.access(parent, os.W_OK)):
        raise DynsteerError(f"--otel {value} cannot be written; pass a file in a writable folder")
    return path


def otel_settings(value: str | None, *, content: bool = False, environ: Mapping[str, str] | None = None) -> OtelSettings:
    """The settings of ``--otel [VALUE]`` (``VALUE`` "" when the flag came alone), checked.

    Raises:
        DynsteerError: The value is neither an http(s) URL nor a writable file, or the extra is not installed.
    """
    env = os.environ if environ is None else environ
    try:
        installed = importlib.util.find_spec("opentelemetry.sdk") is not None
    except ImportError:  # not even the opentelemetry namespace
        installed = False
    if not installed:
        raise DynsteerError(EXTRA_MISSING)
    endpoint: str | None = None
    file: Path | None = None
    text = (value or "").strip()
    if "://" in text:
        endpoint = _check_url(text)
    elif text:
        file = _check_file(text)
    service = env.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE
    capture = content or env.get(CONTENT_VARIABLE, "").strip().lower() in _CONTENT_ON
    return OtelSettings(endpoint=endpoint, file=file, service_name=service, capture_content=capture)
