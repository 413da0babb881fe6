"""The LLM client: retries and backoff, timeouts, usage versus unavailability errors, tokens and cost, JSON mode.

Quick cases use litellm's offline hooks (``mock_response``, ``mock_timeout``); faults that need
the real HTTP client go through the scripted server on 127.0.0.1 (``llm_server``).
"""

from __future__ import annotations

import socket
import time
from types import SimpleNamespace
from typing import Any

import pytest
import structlog
from fake_llm import PRICE_IN, PRICE_OUT, FakeLLMServer, Reply, call
from pydantic import BaseModel
from tenacity import RetryCallState, Retrying

from dynsteer_hook.llm.client import LLMClient
from dynsteer_hook.llm.completion import ModelToolCall
from dynsteer_hook.llm.transport import Backoff, price_known
from dynsteer_hook.model.errors import LLMOutputError, LLMUnavailableError, LLMUsageError

MESSAGES = [{"role": "user", "content": "Answer in JSON."}]


class Answer(BaseModel):
    ok: bool


class Sleeps(list[float]):
    """Records the waits between retries instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _client(server: FakeLLMServer, **kw: Any) -> LLMClient:
    opts: dict[str, Any] = {"api_base": server.url, "timeout": 5.0, "max_retries": 2, "sleep": Sleeps()}
    opts.update(kw)
    return LLMClient("openai/gpt-4o-mini", **opts)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- pure pieces ------------------------------------------------------------------------


class _RefusedError(Exception):
    """A provider error carrying a response, as the OpenAI client's errors do."""

    def __init__(self, retry_after: str | None = None) -> None:
        super().__init__("429")
        self.response = SimpleNamespace(headers={} if retry_after is None else {"retry-after": retry_after})


def _waits(backoff: Backoff, attempt: int, failure: BaseException, samples: int = 200) -> list[float]:
    """What ``backoff`` asks to wait after attempt number ``attempt`` failed with ``failure``, sampled."""
    state = RetryCallState(Retrying(), fn=None, args=(), kwargs={})
    state.attempt_number = attempt
    state.set_exception((type(failure), failure, None))
    return [backoff(state) for _ in range(samples)]


@pytest.mark.parametrize(("attempt", "low", "high"), [(1, 0.5, 1.0), (2, 1.0, 1.5), (3, 2.0, 2.5), (4, 4.0, 4.5), (5, 5.0, 5.0), (11, 5.0, 5.0)])
def test_backoff_doubles_with_jitter_up_to_the_cap(attempt: int, low: float, high: float) -> None:
    """The wait after attempt n is base * 2**(n-1) plus up to one base of jitter, never past the cap."""
    assert all(low <= w <= high for w in _waits(Backoff(0.5, 5.0), attempt, _RefusedError()))


def test_jitter_spreads_the_waits_of_clients_failing_together() -> None:
    """Waits after the same failure differ from call to call, over most of the jitter's range."""
    waits = _waits(Backoff(0.5, 5.0), 1, _RefusedError())
    assert len(set(waits)) > 100 and max(waits) - min(waits) > 0.3


@pytest.mark.parametrize(("retry_after", "attempt", "low", "high"), [("3", 1, 3.0, 3.0), ("60", 1, 5.0, 5.0), ("0.1", 3, 2.0, 2.5), ("soon", 1, 0.5, 1.0)])
def test_retry_after_wins_but_stays_capped(retry_after: str, attempt: int, low: float, high: float) -> None:
    """A server's Retry-After lengthens the wait, up to the cap; a shorter or unreadable one changes nothing."""
    assert all(low <= w <= high for w in _waits(Backoff(0.5, 5.0), attempt, _RefusedError(retry_after)))


def test_each_retry_is_logged_before_its_wait(llm_server: FakeLLMServer) -> None:
    """Every wait between attempts is one llm.retry warning with the kind, the attempt and the delay."""
    llm_server.script(Reply(status=503), Reply(status=429, headers={"retry-after": "2"}), Reply(content='{"ok": true}'))
    with structlog.testing.capture_logs() as logs:
        _client(llm_server, backoff_base=0.1).complete(MESSAGES)
    retries = [e for e in logs if e["event"] == "llm.retry"]
    assert [(e["kind"], e["attempt"], e["log_level"]) for e in retries] == [("server", 1, "warning"), ("rate-limit", 2, "warning")]
    assert 0.1 <= retries[0]["delay_s"] <= 0.2 and retries[1]["delay_s"] == 2.0


@pytest.mark.parametrize("model", ["", "   ", "nonsense-model-without-provider"])
def test_a_bad_model_string_is_a_usage_error(model: str) -> None:
    """No provider in the model string: one sentence saying how to write it."""
    with pytest.raises(LLMUsageError, match="model"):
        LLMClient(model).check()


def test_a_missing_api_key_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hosted provider without its key fails before any call, naming the variable."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMUsageError, match="ANTHROPIC_API_KEY"):
        LLMClient("anthropic/claude-3-5-haiku-latest").check()
    LLMClient("anthropic/claude-3-5-haiku-latest", api_key="sk-test").check()


def test_a_local_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """With --api-base and no key, the check passes (local servers ignore keys)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    LLMClient("openai/anything", api_base="http://127.0.0.1:9/v1").check()


@pytest.mark.parametrize(("kw", "needle"), [({"max_retries": -1}, "max_retries"), ({"timeout": 0}, "timeout")])
def test_bad_settings_are_usage_errors(kw: dict[str, Any], needle: str) -> None:
    """Negative retries or a non-positive timeout are refused at construction."""
    with pytest.raises(LLMUsageError, match=needle):
        LLMClient("openai/gpt-4o-mini", **kw)


def test_price_knowledge(priced_model: str) -> None:
    """A model with a price in litellm's map is known; a local model without one is not."""
    assert price_known(f"openai/{priced_model}") and not price_known("openai/SmolLM2-135M")


# -- litellm offline hooks ----------------------------------------------------------------


def test_mock_answer_is_validated_and_accounted(priced_model: str) -> None:
    """A fenced JSON answer validates; tokens and the cost at the model's price are recorded."""
    client = LLMClient(f"openai/{priced_model}", extra={"mock_response": 'Here:\n```json\n{"ok": true}\n```'})
    reply = client.complete_json(MESSAGES, Answer)
    assert reply.value == Answer(ok=True) and reply.rule is None
    usage = reply.completion.usage
    assert usage.total_tokens > 0 and usage.cost_known
    assert usage.cost_usd == pytest.approx(usage.prompt_tokens * PRICE_IN + usage.completion_tokens * PRICE_OUT)
    assert reply.completion.attempts == 1


def test_mock_garbage_is_returned_not_raised_and_unwrap_keeps_the_raw_text() -> None:
    """A non-JSON answer comes back with its rule; unwrap raises LLMOutputError holding the raw body."""
    client = LLMClient("gpt-4o-mini", extra={"mock_response": "I'd rather not."})
    reply = client.complete_json(MESSAGES, Answer)
    assert reply.value is None and reply.rule == "json"
    with pytest.raises(LLMOutputError) as info:
        reply.unwrap()
    assert info.value.raw == "I'd rather not." and info.value.rule == "json"


def test_unknown_price_counts_as_zero_with_a_note() -> None:
    """A model litellm cannot price costs 0, and the completion says why."""
    reply = LLMClient("openai/my-local-model", extra={"mock_response": '{"ok": false}'}).complete_json(MESSAGES, Answer)
    assert reply.completion.usage.cost_usd == 0.0 and not reply.completion.usage.cost_known
    assert any("cost unknown" in n for n in reply.completion.notes)


def test_mock_rate_limit_is_retried_with_backoff_then_gives_up() -> None:
    """litellm.RateLimitError on every call: max_retries waits, doubling, then LLMUnavailableError."""
    sleeps = Sleeps()
    client = LLMClient("gpt-4o-mini", extra={"mock_response": "litellm.RateLimitError"}, max_retries=3, backoff_base=0.25, sleep=sleeps)
    with pytest.raises(LLMUnavailableError, match="429") as info:
        client.complete(MESSAGES)
    assert info.value.attempts == 4
    assert len(sleeps) == 3 and all(0.25 * 2**i <= s <= 0.25 * 2**i + 0.25 for i, s in enumerate(sleeps))


def test_mock_timeout_is_retried_then_reported_with_the_limit() -> None:
    """litellm's mock timeout is a retryable timeout; the error names the limit and the fix."""
    sleeps = Sleeps()
    client = LLMClient("gpt-4o-mini", extra={"mock_timeout": True}, timeout=0.2, max_retries=1, sleep=sleeps)
    with pytest.raises(LLMUnavailableError, match=r"within 0\.2 s after 2 attempts.*--timeout"):
        client.complete(MESSAGES)
    assert len(sleeps) == 1


# -- the scripted server: the real HTTP client -----------------------------------------------


def test_server_answer_is_accounted_from_its_usage_block(llm_server: FakeLLMServer, priced_model: str) -> None:
    """Tokens come from the server's usage; the cost from litellm's price for the named model."""
    llm_server.script(Reply(content='{"ok": true}', prompt_tokens=1000, completion_tokens=200))
    reply = LLMClient(f"openai/{priced_model}", api_base=llm_server.url, timeout=5.0).complete_json(MESSAGES, Answer)
    assert reply.value == Answer(ok=True)
    usage = reply.completion.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (1000, 200, 1200)
    assert usage.cost_usd == pytest.approx(1000 * PRICE_IN + 200 * PRICE_OUT)


def test_tool_calls_are_offered_and_returned_unparsed(llm_server: FakeLLMServer) -> None:
    """``tools`` reach the server; parallel tool calls come back in order with their arguments as sent."""
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
    llm_server.script(Reply(content=None, tool_calls=(call("lookup", {"q": "a"}), call("lookup", '{"q": '))))
    reply = _client(llm_server).complete(MESSAGES, tools=[tool])
    assert llm_server.requests[0]["tools"] == [tool]
    assert reply.text == ""
    assert reply.tool_calls == (ModelToolCall("call-1-0", "lookup", '{"q": "a"}'), ModelToolCall("call-1-1", "lookup", '{"q": '))


def test_without_tools_no_tools_are_sent(llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply(content="hi"))
    reply = _client(llm_server).complete(MESSAGES)
    assert "tools" not in llm_server.requests[0] and reply.tool_calls == () and reply.text == "hi"


def test_json_mode_for_a_server_is_json_object_with_schema(llm_server: FakeLLMServer) -> None:
    """Against an api_base the request asks json_object with the schema (what llama.cpp accepts), at the set temperature."""
    llm_server.script(Reply(content='{"ok": true}'))
    _client(llm_server, temperature=0.9, max_tokens=123).complete_json(MESSAGES, Answer)
    body = llm_server.requests[0]
    assert body["response_format"]["type"] == "json_object"
    assert body["response_format"]["schema"]["properties"]["ok"]["type"] == "boolean"
    assert body["temperature"] == 0.9 and body["max_tokens"] == 123


def test_json_mode_off_sends_no_response_format(llm_server: FakeLLMServer) -> None:
    """json_mode='off' leaves the request plain; the answer is still validated."""
    llm_server.script(Reply(content='{"ok": true}'))
    assert _client(llm_server, json_mode="off").complete_json(MESSAGES, Answer).value == Answer(ok=True)
    assert "response_format" not in llm_server.requests[0]


def test_a_provider_rejecting_json_mode_is_asked_again_without_it(llm_server: FakeLLMServer) -> None:
    """A 400 to a request with response_format is retried once without it, and noted."""
    llm_server.script(Reply(status=400), Reply(content='{"ok": true}'))
    reply = _client(llm_server).complete_json(MESSAGES, Answer)
    assert reply.value == Answer(ok=True)
    assert "response_format" in llm_server.requests[0] and "response_format" not in llm_server.requests[1]
    assert any("rejected response_format" in n for n in reply.completion.notes)


def test_timeout_then_success(llm_server: FakeLLMServer) -> None:
    """The server sleeps past the client's timeout once; the retry succeeds."""
    sleeps = Sleeps()
    llm_server.script(Reply(content='{"ok": true}', delay=2.0), Reply(content='{"ok": false}'))
    reply = _client(llm_server, timeout=0.5, sleep=sleeps, backoff_base=0.1).complete_json(MESSAGES, Answer)
    assert reply.value == Answer(ok=False)
    assert reply.completion.attempts == 2 and len(llm_server.requests) == 2
    assert len(sleeps) == 1 and 0.1 <= sleeps[0] <= 0.2 and "timeout" in reply.completion.notes[0]


def test_rate_limit_then_success_honours_retry_after(llm_server: FakeLLMServer) -> None:
    """A 429 with Retry-After: 3 waits 3 s (not the 0.1 s base), then succeeds."""
    sleeps = Sleeps()
    llm_server.script(Reply(status=429, headers={"retry-after": "3"}), Reply(content='{"ok": true}'))
    reply = _client(llm_server, sleep=sleeps, backoff_base=0.1).complete_json(MESSAGES, Answer)
    assert reply.value == Answer(ok=True) and reply.completion.attempts == 2
    assert sleeps == [3.0]


def test_server_error_then_success(llm_server: FakeLLMServer) -> None:
    """A 500 is retried once; the answer of the second call counts."""
    llm_server.script(Reply(status=500), Reply(content='{"ok": true}', prompt_tokens=7, completion_tokens=3))
    reply = _client(llm_server).complete_json(MESSAGES, Answer)
    assert reply.value == Answer(ok=True) and reply.completion.attempts == 2
    assert reply.completion.usage.total_tokens == 10


@pytest.mark.parametrize("status", [500, 502, 503])
def test_persistent_server_errors_exhaust_the_retries(llm_server: FakeLLMServer, status: int) -> None:
    """5xx on every call: exactly max_retries + 1 requests (the OpenAI client adds none), then LLMUnavailableError."""
    sleeps = Sleeps()
    llm_server.script(*[Reply(status=status)] * 10)
    with pytest.raises(LLMUnavailableError, match="after 3 attempts") as info:
        _client(llm_server, max_retries=2, sleep=sleeps, backoff_base=0.5).complete(MESSAGES)
    assert info.value.attempts == 3 and len(llm_server.requests) == 3
    assert len(sleeps) == 2 and 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 1.5


def test_persistent_timeouts_exhaust_the_retries(llm_server: FakeLLMServer) -> None:
    """A server that never answers in time: bounded attempts, then a sentence naming the timeout. Each attempt's
    request reaches the server, if late: an attempt abandoned at its deadline goes on in its own thread (on a loaded
    machine the server may read the second request only after the client gave it up)."""
    llm_server.script(*[Reply(delay=1.5)] * 3)
    with pytest.raises(LLMUnavailableError, match=r"did not answer within 0\.3 s after 2 attempts"):
        _client(llm_server, timeout=0.3, max_retries=1).complete(MESSAGES)
    deadline = time.monotonic() + 60
    while len(llm_server.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(llm_server.requests) == 2


def test_connection_refused_is_unavailable_after_retries() -> None:
    """Nothing listens on the port: retried, then 'could not be reached' with the address."""
    sleeps = Sleeps()
    base = f"http://127.0.0.1:{_free_port()}/v1"
    client = LLMClient("openai/gpt-4o-mini", api_base=base, max_retries=2, sleep=sleeps, timeout=5.0)
    with pytest.raises(LLMUnavailableError, match="could not be reached after 3 attempts") as info:
        client.complete(MESSAGES)
    assert base in str(info.value) and "--api-base" in str(info.value)
    assert len(sleeps) == 2


@pytest.mark.parametrize("status", [401, 403])
def test_a_rejected_key_is_a_usage_error_and_not_retried(llm_server: FakeLLMServer, status: int) -> None:
    """401/403: one request, LLMUsageError naming the key."""
    llm_server.script(*[Reply(status=status)] * 3)
    with pytest.raises(LLMUsageError, match="API key"):
        _client(llm_server).complete(MESSAGES)
    assert len(llm_server.requests) == 1


def test_a_bad_request_is_a_usage_error_and_not_retried(llm_server: FakeLLMServer) -> None:
    """A 404 (unknown model on the server) is the user's to fix: one request, no retry."""
    llm_server.script(*[Reply(status=404)] * 3)
    with pytest.raises(LLMUsageError, match="refused the request"):
        _client(llm_server).complete(MESSAGES)
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize(
    ("model", "api_base", "mode", "expected"),
    [
        ("openai/anything", "http://127.0.0.1:9/v1", "auto", "json_object+schema"),
        ("gpt-4o-mini", None, "auto", "json_schema"),
        ("openai/unknown-hosted-model", None, "auto", "json_object"),
        ("gpt-4o-mini", None, "object", "json_object+schema"),
        ("openai/anything", "http://127.0.0.1:9/v1", "schema", "json_schema"),
        ("gpt-4o-mini", None, "off", None),
    ],
)
def test_json_mode_choice(model: str, api_base: str | None, mode: Any, expected: str | None) -> None:
    """Servers get json_object with the schema (llama.cpp rejects json_schema); schema-capable hosted models get json_schema."""
    fmt = LLMClient(model, api_base=api_base, json_mode=mode)._response_format({"type": "object"})
    if expected is None:
        assert fmt is None
        return
    assert fmt is not None
    shown = fmt["type"] + ("+schema" if "schema" in fmt else "")
    assert shown == expected
