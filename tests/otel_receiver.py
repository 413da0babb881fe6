"""A small OTLP/HTTP receiver on 127.0.0.1, started by the tests: it decodes each export request (protobuf) and keeps it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from needs import need_module

need_module("opentelemetry.proto", "the otel extra is not installed (pip install 'dynsteer-hook[otel]')")

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (  # noqa: E402 - after the check above
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Received:
    """What the receiver decoded, by signal."""

    traces: list[ExportTraceServiceRequest] = field(default_factory=list)
    logs: list[ExportLogsServiceRequest] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    content_types: set[str] = field(default_factory=set)

    def spans(self) -> list[Any]:
        return [s for r in self.traces for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]

    def records(self) -> list[Any]:
        return [rec for r in self.logs for rl in r.resource_logs for sl in rl.scope_logs for rec in sl.log_records]

    def services(self) -> set[str]:
        found = set()
        for r in self.traces:
            for rs in r.resource_spans:
                found |= {a.value.string_value for a in rs.resource.attributes if a.key == "service.name"}
        return found


def attributes(item: Any) -> dict[str, Any]:
    """A protobuf span's, event's or log record's attributes as plain values."""
    out: dict[str, Any] = {}
    for kv in item.attributes:
        kind = kv.value.WhichOneof("value")
        value = getattr(kv.value, kind) if kind else None
        out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in value.values] if kind == "array_value" else value
    return out


def _handler(received: Received) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            received.paths.append(self.path)
            received.content_types.add(self.headers.get("Content-Type", ""))
            answer: Any
            if self.path == "/v1/traces":
                received.traces.append(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse()
            elif self.path == "/v1/logs":
                received.logs.append(ExportLogsServiceRequest.FromString(body))
                answer = ExportLogsServiceResponse()
            else:
                self.send_response(404)
                self.end_headers()
                return
            data = answer.SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, Received]]:
    """The base URL of a running receiver, and what it received."""
    received = Received()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(received))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@contextmanager
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers (a collector that hangs)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield s.getsockname()[1]


@contextmanager
def trickling_port(interval: float = 0.5) -> Iterator[int]:
    """A collector that reads each request whole and answers 200 one byte every ``interval`` seconds (each read of the
    socket then ends within any per-read timeout, and the answer never seems to end)."""
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n"
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(10)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, body = data.split(b"\r\n\r\n", 1)
                size = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
                while len(body) < size:
                    body += conn.recv(65536)
                for byte in answer:
                    if stop.wait(interval):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                pass

    def accept(server: socket.socket) -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        threading.Thread(target=accept, args=(server,), daemon=True).start()
        try:
            yield server.getsockname()[1]
        finally:
            stop.set()
