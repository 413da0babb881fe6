"""A scripted OpenAI-compatible chat server on 127.0.0.1, for LLM tests that must not reach the network.

Each request takes the next scripted ``Reply`` (a status, a delay, an answer text and a
usage block); every request body is recorded. The real HTTP client, its timeouts and
the package's retries run against it. A reply with ``trickle`` sends its whole response,
status line and headers included, a few bytes at a time, so that no single read of the
client ever waits long: only a deadline on the whole answer cuts it off.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PRICE_IN, PRICE_OUT = 1e-6, 2e-6
"""USD per prompt and per answer token of the ``priced_model`` fixture's model (see conftest)."""

@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    content: str | None = "{}"
    status: int = 200
    delay: float = 0.0
    prompt_tokens: int = 100
    completion_tokens: int = 50
    finish_reason: str = "stop"
    headers: dict[str, str] = field(default_factory=dict)
    tool_calls: tuple[tuple[str, ...], ...] = ()  # (function name, arguments text[, call id]) per call
    error_message: str | None = None  # the error text of a non-200 answer (default: "scripted status N")
    trickle: float = 0.0  # seconds between pieces of the response (0: send it at once)
    trickle_bytes: int = 4  # bytes per piece
    usage: bool = True  # false: the answer has no usage block (a provider that does not say what it spent)


def call(name: str, arguments: object = None) -> tuple[str, str]:
    """One scripted tool call; ``arguments`` is sent as JSON unless it is already a string."""
    return name, arguments if isinstance(arguments, str) else json.dumps(arguments or {})


class FakeLLMServer:
    """The server; ``script`` queues replies, ``requests`` and ``headers`` hold what each request sent,
    ``peak_in_flight`` the most requests it was answering at once, ``trickles_cut`` how many trickled
    responses the client hung up on and ``trickling`` how many are being sent now."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self.trickling = 0
        self.trickles_cut = 0
        self._hang_ups = 0  # stop_trickles() calls so far: a trickle started before one is hung up on
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]}, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:
                    outer.requests.append(body)
                    number = len(outer.requests)
                    outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                    reply = outer.replies.popleft() if outer.replies else Reply(content=None, status=500)
                    outer.in_flight += 1
                    outer.peak_in_flight = max(outer.peak_in_flight, outer.in_flight)
                try:
                    if reply.delay:
                        time.sleep(reply.delay)
                    self._answer(body, reply, number)
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

            def _answer(self, body: dict[str, Any], reply: Reply, number: int) -> None:
                if reply.status != 200:
                    payload = {"error": {"message": reply.error_message or f"scripted status {reply.status}", "type": "server_error", "code": reply.status}}
                    self._send(reply.status, payload, reply.headers, reply)
                    return
                message: dict[str, Any] = {"role": "assistant", "content": reply.content}
                if reply.tool_calls:
                    message["tool_calls"] = [
                        {"id": c[2] if len(c) > 2 else f"call-{number}-{i}", "type": "function", "function": {"name": c[0], "arguments": c[1]}}
                        for i, c in enumerate(reply.tool_calls)
                    ]
                payload = {
                    "id": f"chatcmpl-{number}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
                    "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                              "total_tokens": reply.prompt_tokens + reply.completion_tokens},
                }
                if not reply.usage:
                    del payload["usage"]
                self._send(200, payload, reply.headers, reply)

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str], reply: Reply | None = None) -> None:
                data = json.dumps(payload).encode()
                if reply is not None and reply.trickle > 0:
                    self._trickle(status, data, headers, reply)
                    return
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def _trickle(self, status: int, data: bytes, headers: dict[str, str], reply: Reply) -> None:
                head = [f"HTTP/1.0 {status} {self.responses.get(status, ('',))[0]}", "content-type: application/json",
                        f"content-length: {len(data)}", *(f"{k}: {v}" for k, v in headers.items())]
                raw = ("\r\n".join(head) + "\r\n\r\n").encode() + data
                self.close_connection = True
                with outer._lock:
                    outer.trickling += 1
                    started = outer._hang_ups
                try:
                    for i in range(0, len(raw), reply.trickle_bytes):
                        if outer._hang_ups != started:
                            return  # hang up mid-answer: the client sees the connection close
                        self.wfile.write(raw[i : i + reply.trickle_bytes])
                        time.sleep(reply.trickle)
                except (BrokenPipeError, ConnectionResetError):
                    with outer._lock:
                        outer.trickles_cut += 1
                finally:
                    with outer._lock:
                        outer.trickling -= 1

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False  # a handler still sleeping past a client's timeout must not hold up the test

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        """The ``api_base`` to give the client."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order."""
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop_trickles(self) -> None:
        """Hang up on every response being trickled now."""
        with self._lock:
            self._hang_ups += 1

    def stop(self) -> None:
        self.stop_trickles()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
