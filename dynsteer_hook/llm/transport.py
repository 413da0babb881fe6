"""How one model call travels: a deadline over the whole answer, bounded retries with backoff and
jitter, the kinds of provider failure that retrying can help, and litellm's price map.

``classify`` tells timeouts, 429, 5xx and connection errors (retried) from every other answer
(not retried); ``Backoff`` waits exponentially with jitter, honouring ``Retry-After`` up to its
cap; ``run_with_deadline`` bounds an attempt from connecting to the last byte of the answer,
which the HTTP client's own timeouts (one read at a time) do not; ``warm_up`` runs litellm's
lazy imports before the first deadline starts.
"""

from __future__ import annotations

import contextvars
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from tenacity import RetryCallState, wait_exponential, wait_random
from tenacity.wait import wait_base

from dynsteer_hook.llm._litellm import litellm, llm_errors
from dynsteer_hook.llm.output import excerpt


def price_known(model: str) -> bool:
    """Whether litellm's price map has ``model`` (else its cost is counted as 0)."""
    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises for models it has never heard of
        return False
    return bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))


class Backoff(wait_base):
    """How long to wait before the next attempt: exponential with jitter, capped; a server's Retry-After wins up to the cap.

    Before retry n (1-based) the wait is ``base * 2**(n - 1)`` plus a random share of up to one
    ``base`` (so that clients failing together do not retry together), never more than ``cap``.
    """

    def __init__(self, base: float, cap: float) -> None:
        self.base, self.cap = base, cap
        self._exponential = wait_exponential(multiplier=base, max=cap) + wait_random(0, base)

    def __call__(self, retry_state: RetryCallState) -> float:
        delay = min(self.cap, float(self._exponential(retry_state)))
        failure = retry_state.outcome.exception() if retry_state.outcome is not None else None
        after = _retry_after(failure) if failure is not None else None
        if after is not None and after > delay:
            delay = min(self.cap, after)
        return max(0.0, delay)


class _AttemptTimeoutError(Exception):
    """One attempt outlived the client's ``timeout`` while the answer was still arriving (or not)."""


def run_with_deadline(fn: Callable[[], Any], seconds: float) -> Any:
    """``fn()`` in a daemon thread; its result, or its exception, if it ends within ``seconds``.

    On expiry the attempt is abandoned, not stopped (Python cannot stop a thread blocked in a
    read): the thread is a daemon, so it never holds up the exit of the process, and it ends by
    itself when the server finishes or goes silent for the HTTP client's read timeout.

    Raises:
        _AttemptTimeoutError: ``fn`` did not end within ``seconds``.
    """
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()
    context = contextvars.copy_context()  # litellm keeps per-call state in context variables

    def attempt() -> None:
        try:
            outcome.append((True, context.run(fn)))
        except BaseException as exc:  # handed to the waiting thread, which re-raises it
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=attempt, name="dynsteer-llm-attempt", daemon=True).start()
    if not wait_in_slices(done, seconds):
        raise _AttemptTimeoutError(f"no complete answer within {seconds:g} s")
    ok, value = outcome[0]
    if ok:
        return value
    raise value


SIGNAL_SLICE = 0.25
"""Seconds a waiting thread waits at a time before it looks at its signals again (``wait_in_slices``)."""


def wait_in_slices(done: threading.Event, seconds: float) -> bool:
    """``done.wait(seconds)``, waited a quarter of a second at a time.

    A signal (Ctrl-C, SIGTERM) runs its Python handler in the main thread only, and only when that thread runs: the
    kernel may hand it to another thread (the attempt's own, blocked in a read), and then a main thread asleep in one
    long wait on a lock would sleep through it for as long as the wait lasts (minutes, for a model call).
    """
    end = time.monotonic() + seconds
    while True:
        remaining = end - time.monotonic()
        if remaining <= 0:
            return done.is_set()
        if done.wait(min(SIGNAL_SLICE, remaining)):
            return True


_warmed: set[str] = set()
_warm_lock = threading.Lock()


def warm_up(model: str) -> None:
    """Run litellm's lazy imports for ``model`` once per process, before any deadline starts.

    litellm imports its HTTP stack and much of itself on the first real request; on a busy
    machine that takes seconds, which are not the provider's and must not eat a short
    ``timeout``. An offline mock completion and the HTTP stack's import do that work up front.
    """
    with _warm_lock:
        if model in _warmed:
            return
        _warmed.add(model)
        try:
            import httpcore  # noqa: F401  # what litellm's HTTP client imports on its first request

            litellm.completion(model=model, messages=[{"role": "user", "content": "ping"}], mock_response="ok")
        except Exception:  # a warm-up that fails changes nothing: the real call reports the problem
            pass


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _connection_refused(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or "connection refused" in str(seen).lower() or type(seen).__name__ == "ConnectError":
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def rejected_key(exc: BaseException) -> bool:
    """The provider refused the key (401, 403): the user's to fix, never retried."""
    return isinstance(exc, (llm_errors.AuthenticationError, llm_errors.PermissionDeniedError)) or _status(exc) in (401, 403)


def classify(exc: BaseException) -> str | None:
    """The retryable kind of a provider error (``timeout``, ``connection``, ``rate-limit``, ``server``), or None if retrying cannot help."""
    if isinstance(exc, (llm_errors.Timeout, _AttemptTimeoutError)):
        return "timeout"
    status = _status(exc)
    if isinstance(exc, llm_errors.RateLimitError) or status == 429:
        return "rate-limit"
    if _connection_refused(exc):
        return "connection"
    if isinstance(exc, llm_errors.APIConnectionError):
        return "connection"
    if status is not None and status >= 500:
        return "server"
    if status is None and isinstance(exc, llm_errors.APIError):
        return "server"
    return None


_REPEATED_PREFIX = re.compile(r"\b(\w+): \1: ")


def short_error(exc: BaseException | None) -> str:
    text = _REPEATED_PREFIX.sub(r"\1: ", str(exc).replace("litellm.", "")).replace("OpenAIException - ", "")
    return excerpt(text, 200)
