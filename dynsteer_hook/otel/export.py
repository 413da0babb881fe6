"""This process's own OpenTelemetry providers and exporters: OTLP over HTTP or JSON lines in a file, batched, never blocking.

The providers are private instances (``TracerProvider``, ``LoggerProvider``), never the global
ones, so an application's own OpenTelemetry set-up is left as it was. Spans and evaluation
events are exported in the background (a ``BatchSpanProcessor`` and a ``BatchLogRecordProcessor``
with bounded queues). A collector that is down or slow costs one export of at most ``timeout``
seconds: the first failure opens a breaker (``Breaker``) that drops what follows at once, with
one warning in the log, and tries again after a while. An export runs in a thread of its own
(``Sender``) and is given up when it has not returned after ``STALL_MARGIN`` more seconds: the
exporter's timeout bounds each wait on the socket, not a collector that trickles its answer a
byte at a time, and a file that is a pipe nobody reads blocks its writer for good. The SDK's
own messages about that export are kept out of the log (the warning says it). Each process
keeps one ``Telemetry`` per settings (``telemetry_for``) and flushes it when it ends (worker
processes too); ``shutdown_all`` does it earlier, all of it within one deadline (``FLUSH_DEADLINE``).
"""

from __future__ import annotations

import atexit
import base64
import errno
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import structlog
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from opentelemetry._logs import Logger
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    LogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import Tracer

from dynsteer_hook.otel.settings import OtelSettings

log = structlog.get_logger(__name__)

SCOPE = "dynsteer_hook"
QUEUE = 4096  # spans (and evaluation events) held while the exporter catches up; older ones are dropped past it
BATCH = 512
DELAY_MS = 500  # how long a finished span waits before it is sent
COOLDOWN = 60.0  # seconds a failed collector is left alone before one batch tries it again
SHUTDOWN_MS = 2000  # the longest a flush waits for the last export
STALL_MARGIN = 0.5  # seconds past the exporter's own timeout before an export that has not returned counts as stalled
FLUSH_DEADLINE = 1.6  # seconds the end of a command waits for all of its telemetry together (an export and its margin)

_SDK_LOGGERS = ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "opentelemetry.exporter.otlp.proto.http._log_exporter",
                "opentelemetry.exporter.otlp.proto.http._common", "opentelemetry.exporter.otlp.common.http")


class _Quiet(threading.local):
    exporting = False
    said: str | None = None  # the SDK's first message during the export (it names the cause)


_quiet = _Quiet()


class _DuringExport(logging.Filter):
    """Holds back the SDK exporter's own records while a guarded export runs in this thread (the breaker reports)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _quiet.exporting:
            if _quiet.said is None:
                _quiet.said = record.getMessage()[:300]
            return False
        return True


_FILTER = _DuringExport()
for _name in _SDK_LOGGERS:
    logging.getLogger(_name).addFilter(_FILTER)


class Breaker:
    """Opens on a failed export, so that a dead collector costs one export; one warning per process and target.

    Args:
        target: Where the exports go (for the warning).
        cooldown: Seconds before an open breaker lets one batch try again.
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(self, target: str, cooldown: float = COOLDOWN, clock: Callable[[], float] = time.monotonic) -> None:
        self.target = target
        self.cooldown = cooldown
        self.failures = 0
        self.dropped = 0
        self._clock = clock
        self._until = 0.0
        self._lock = threading.Lock()
        self.quiet = False  # set once the end of the process stopped waiting for this target: its warning was given

    def allows(self, items: int) -> bool:
        """Whether a batch may go out now (else it is counted as dropped)."""
        with self._lock:
            if self._clock() >= self._until:
                return True
            self.dropped += items
            return False

    def failed(self, items: int, why: str | None) -> None:
        with self._lock:
            self.failures += 1
            self.dropped += items
            self._until = self._clock() + self.cooldown
            first = self.failures == 1
        if first and not self.quiet:
            log.warning("OpenTelemetry export failed; telemetry is dropped for a while, the run goes on", target=self.target,
                        reason=why or "the collector did not accept it", retry_in_s=self.cooldown)

    def succeeded(self) -> None:
        with self._lock:
            self._until = 0.0


T = TypeVar("T")

class Sender:
    """Runs one export at a time in a daemon thread of its own and waits for it at most ``limit`` seconds.

    An export that has not returned by then is stalled (a collector that answers a byte at a time, a pipe nobody
    reads): it is left to finish or hang on its own, and every export that comes while it is still running fails at
    once, so the processor's thread, and the end of the process, never wait on it.
    """

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._stalled: threading.Thread | None = None
        self._since = 0.0

    def send(self, export: Callable[[], bool]) -> tuple[bool, str | None]:
        """Whether ``export()`` succeeded in time, and why not (the SDK's first message, the exception, or the stall)."""
        if self._stalled is not None:
            if self._stalled.is_alive():
                return False, f"an earlier export has had no answer for {time.monotonic() - self._since:.0f} s"
            self._stalled = None
        outcome: list[tuple[bool, str | None]] = []

        def work() -> None:
            _quiet.exporting, _quiet.said = True, None
            try:
                ok = export()
                why = _quiet.said
            except Exception as exc:  # an exporter must never take the run down
                ok, why = False, f"{type(exc).__name__}: {exc}"[:300]
            finally:
                _quiet.exporting = False
            outcome.append((ok, why))

        thread = threading.Thread(target=work, name="dynsteer-otel-export", daemon=True)
        thread.start()
        thread.join(self.limit)
        if outcome:
            return outcome[0]
        self._stalled, self._since = thread, time.monotonic() - self.limit
        return False, (f"the export had no complete answer after {self.limit:g} s (a collector that answers too slowly, "
                       "or a pipe nobody reads); it is left behind")


def _guarded(breaker: Breaker, sender: Sender, export: Callable[[Sequence[T]], bool], batch: Sequence[T]) -> bool:
    if not breaker.allows(len(batch)):
        return False
    ok, why = sender.send(lambda: export(batch))
    if ok:
        breaker.succeeded()
    else:
        breaker.failed(len(batch), why)
    return ok


class GuardedSpans(SpanExporter):
    """A span exporter behind a breaker, each export bounded in time (``Sender``)."""

    def __init__(self, inner: SpanExporter, breaker: Breaker, limit: float) -> None:
        self.inner = inner
        self.breaker = breaker
        self.sender = Sender(limit)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ok = _guarded(self.breaker, self.sender, lambda b: self.inner.export(b) == SpanExportResult.SUCCESS, spans)
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class GuardedLogs(LogRecordExporter):
    """A log record exporter behind a breaker, each export bounded in time (``Sender``)."""

    def __init__(self, inner: LogRecordExporter, breaker: Breaker, limit: float) -> None:
        self.inner = inner
        self.breaker = breaker
        self.sender = Sender(limit)

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        ok = _guarded(self.breaker, self.sender, lambda b: self.inner.export(b) == LogRecordExportResult.SUCCESS, batch)
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE

    def shutdown(self) -> None:
        self.inner.shutdown()  # type: ignore[no-untyped-call]  # the SDK's base method has no annotations

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


def _hex_ids(node: Any) -> Any:
    """OTLP/JSON writes trace and span ids in hex, where protobuf's JSON mapping writes bytes in base64."""
    if isinstance(node, dict):
        return {k: base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else _hex_ids(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def otlp_json(request: Message) -> str:
    """One OTLP/JSON line of an export request (as the collector's file exporter writes them)."""
    return json.dumps(_hex_ids(MessageToDict(request, use_integers_for_enums=True)), separators=(",", ":"), ensure_ascii=False)


class JsonLines:
    """Appends each export request to a file as one OTLP/JSON line, in one write (processes may share the file).

    The file is opened without waiting for a reader: a pipe that nobody reads fails the export at once (the breaker
    then says so), where a plain open would block for good; one with a reader takes the line as fast as it reads.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, request: Message) -> bool:
        data = (otlp_json(request) + "\n").encode("utf-8")
        with self._lock:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC  # O_APPEND: each line lands whole
            try:
                fd = os.open(self.path, flags, 0o666)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # a pipe without a reader
                    raise OSError(exc.errno, f"nothing reads the pipe {self.path}") from None
                raise
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.set_blocking(fd, True)  # the reader takes the line at its own pace (the Sender bounds the wait)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        return True


class FileSpans(SpanExporter):
    """Spans as OTLP/JSON lines (``{"resourceSpans": ...}``)."""

    def __init__(self, lines: JsonLines) -> None:
        self.lines = lines

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS if self.lines.append(encode_spans(spans)) else SpanExportResult.FAILURE


class FileLogs(LogRecordExporter):
    """Log records (the evaluation events) as OTLP/JSON lines (``{"resourceLogs": ...}``)."""

    def __init__(self, lines: JsonLines) -> None:
        self.lines = lines

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        return LogRecordExportResult.SUCCESS if self.lines.append(encode_logs(batch)) else LogRecordExportResult.FAILURE

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def exporters(settings: OtelSettings) -> tuple[SpanExporter, LogRecordExporter]:
    """The span and log exporters ``settings`` name, unguarded: OTLP/HTTP, or OTLP/JSON lines in a file."""
    if settings.file is not None:
        lines = JsonLines(settings.file)
        return FileSpans(lines), FileLogs(lines)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return (OTLPSpanExporter(endpoint=settings.signal_endpoint("traces"), timeout=settings.timeout),
            OTLPLogExporter(endpoint=settings.signal_endpoint("logs"), timeout=settings.timeout))


@dataclass
class Telemetry:
    """A tracer and an event logger on private providers, and the breaker their exports share."""

    tracer: Tracer
    logger: Logger
    tracer_provider: TracerProvider
    logger_provider: LoggerProvider
    breaker: Breaker

    @classmethod
    def build(cls, settings: OtelSettings, spans: SpanExporter, logs: LogRecordExporter, *, batch: bool = True) -> Telemetry:
        """Providers exporting to ``spans`` and ``logs`` behind one breaker; ``batch`` False exports each item as it ends (tests)."""
        from dynsteer_hook import __version__

        breaker = Breaker(settings.target)
        limit = settings.timeout + STALL_MARGIN
        resource = Resource.create({"service.name": settings.service_name})
        span_processor: SpanProcessor
        log_processor: LogRecordProcessor
        if batch:
            span_processor = BatchSpanProcessor(GuardedSpans(spans, breaker, limit), max_queue_size=QUEUE, max_export_batch_size=BATCH,
                                                schedule_delay_millis=DELAY_MS)
            log_processor = BatchLogRecordProcessor(GuardedLogs(logs, breaker, limit), max_queue_size=QUEUE, max_export_batch_size=BATCH,
                                                    schedule_delay_millis=DELAY_MS)
        else:
            span_processor = SimpleSpanProcessor(GuardedSpans(spans, breaker, limit))
            log_processor = SimpleLogRecordProcessor(GuardedLogs(logs, breaker, limit))
        tracer_provider = TracerProvider(sampler=ALWAYS_ON, resource=resource, shutdown_on_exit=False)  # every rollout is kept
        tracer_provider.add_span_processor(span_processor)
        logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        logger_provider.add_log_record_processor(log_processor)
        return cls(tracer_provider.get_tracer(SCOPE, __version__), logger_provider.get_logger(SCOPE, __version__),
                   tracer_provider, logger_provider, breaker)

    def flush(self) -> None:
        """Send what is queued now (blocks for at most one export per signal)."""
        self.tracer_provider.force_flush(SHUTDOWN_MS)
        self.logger_provider.force_flush(SHUTDOWN_MS)

    def shutdown(self, deadline: float = FLUSH_DEADLINE) -> None:
        """Send what is queued and stop the exporters, waiting at most ``deadline`` seconds (see ``shutdown_all``)."""
        _shut_down([self], deadline)

    def _stop(self) -> None:
        """Send what is queued and stop the exporters, however long it takes (the SDK waits up to 30 s per provider)."""
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()


_lock = threading.Lock()
_open: dict[OtelSettings, Telemetry] = {}
_registered = False


def telemetry_for(settings: OtelSettings) -> Telemetry:
    """This process's telemetry for ``settings``, made on first use and flushed when the process ends."""
    global _registered
    with _lock:
        found = _open.get(settings)
        if found is None:
            found = _open[settings] = Telemetry.build(settings, *exporters(settings))
            if not _registered:
                _registered = True
                atexit.register(shutdown_all)
                from multiprocessing import util  # a pool's worker process ends through its finalizers, not atexit

                util.Finalize(None, shutdown_all, exitpriority=10)
        return found


def shutdown_all(deadline: float = FLUSH_DEADLINE) -> None:
    """Flush and stop every telemetry this process made, all of them within ``deadline`` seconds together (a command
    calls it when done; also run at exit). What is still exporting then is left behind, named in one warning."""
    with _lock:
        made = list(_open.values())
        _open.clear()
    _shut_down(made, deadline)


def _shut_down(made: Sequence[Telemetry], deadline: float) -> None:
    """Stop ``made`` in a daemon thread and wait for it at most ``deadline`` seconds: one deadline for every provider and
    processor, where the SDK would give each processor 30 s of its own. Past it, one warning per target that has not
    warned yet (the breaker's), and nothing more is said while the process exits."""
    if not made:
        return
    def stop_all() -> None:
        for telemetry in made:
            telemetry._stop()

    stopper = threading.Thread(target=stop_all, name="dynsteer-otel-flush", daemon=True)
    stopper.start()
    stopper.join(deadline)
    if not stopper.is_alive():
        return
    for telemetry in made:
        telemetry.breaker.failed(0, f"the telemetry still queued at the end could not be sent within {deadline:g} s (an export "
                                    "stalled: a collector that answers too slowly, or a pipe nobody reads); it is dropped")
        telemetry.breaker.quiet = True  # what is still exporting while the process exits says nothing more
