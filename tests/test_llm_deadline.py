"""The whole-answer deadline of an LLM call, against a server that trickles its answer a few bytes at a time.

Every single read of such an answer returns quickly, so only a deadline on the whole attempt
stops it. The server in ``fake_llm`` sends status line, headers and body that way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import family
from fake_llm import FakeLLMServer, Reply

import dynsteer_hook
from dynsteer_hook.cli import main
from dynsteer_hook.llm.client import LLMClient
from dynsteer_hook.llm.transport import run_with_deadline
from dynsteer_hook.model.errors import LLMUnavailableError
from dynsteer_hook.model.events import ToolCall, ToolResult, UserMessage, event_to_record

MESSAGES = [{"role": "user", "content": "Answer in JSON."}]
TRICKLE = Reply(content='{"ok": true}', trickle=0.1, trickle_bytes=2)  # about 20 s for the whole answer
ATTEMPT_THREAD = "dynsteer-llm-attempt"


def _client(server: FakeLLMServer, **kw: Any) -> LLMClient:
    opts: dict[str, Any] = {"api_base": server.url, "timeout": 2.0, "max_retries": 0, "backoff_base": 0.01}
    opts.update(kw)
    return LLMClient("openai/gpt-4o-mini", **opts)


def _attempt_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == ATTEMPT_THREAD and t.is_alive()]


def _wait_for(condition: Callable[[], bool], seconds: float = 15.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_trickled_answer_is_cut_off_at_the_deadline(llm_server: FakeLLMServer) -> None:
    """Bytes keep coming, yet the attempt ends at ``timeout`` with a timeout error while the server is still sending."""
    llm_server.script(TRICKLE)
    start = time.monotonic()
    with pytest.raises(LLMUnavailableError, match=r"did not answer within 2 s after 1 attempt") as caught:
        _client(llm_server).complete(MESSAGES)
    elapsed = time.monotonic() - start
    assert caught.value.kind == "timeout"
    assert llm_server.trickling == 1  # the answer was still arriving when the call gave up
    assert elapsed < 10  # far below the 20 s the whole answer takes


def test_the_deadline_is_per_attempt_and_each_retry_gets_its_own(llm_server: FakeLLMServer) -> None:
    """With one retry two trickled attempts are made, each cut at the deadline, then the error names both."""
    llm_server.script(TRICKLE, TRICKLE)
    with pytest.raises(LLMUnavailableError, match=r"within 2 s after 2 attempts"):
        _client(llm_server, max_retries=1).complete(MESSAGES)
    assert len(llm_server.requests) == 2


def test_a_retry_after_a_cut_off_attempt_can_succeed(llm_server: FakeLLMServer) -> None:
    """A trickled first attempt times out; the retry answers at once and the note records the timeout."""
    llm_server.script(TRICKLE, Reply(content='{"ok": true}'))
    done = _client(llm_server, max_retries=1).complete(MESSAGES)
    assert done.text == '{"ok": true}' and done.attempts == 2
    assert "timeout" in done.notes[0]


def test_a_slow_answer_that_ends_within_the_deadline_is_kept(llm_server: FakeLLMServer) -> None:
    """Trickling is not an error in itself: a whole answer that arrives in time is returned."""
    llm_server.script(Reply(content='{"ok": true}', trickle=0.005, trickle_bytes=16))
    assert _client(llm_server, timeout=10.0).complete(MESSAGES).text == '{"ok": true}'


def test_an_abandoned_attempt_is_a_daemon_thread_that_ends_when_the_server_hangs_up(llm_server: FakeLLMServer) -> None:
    """The attempt left behind at the deadline cannot hold up exit, and it ends once the server stops sending."""
    llm_server.script(TRICKLE)
    with pytest.raises(LLMUnavailableError):
        _client(llm_server).complete(MESSAGES)
    left = _attempt_threads()
    assert left and all(t.daemon for t in left)
    llm_server.stop_trickles()
    assert _wait_for(lambda: not _attempt_threads())


def test_an_abandoned_attempt_does_not_delay_process_exit(llm_server: FakeLLMServer) -> None:
    """A process whose call timed out exits at once while the server would still trickle for many minutes: the exit
    hangs up mid-answer. The whole answer takes longer than the generous limit on the process (the interpreter's start
    and litellm's import alone can take a minute on a loaded machine), so a process that waited for it fails."""
    llm_server.script(Reply(content='{"ok": true}', trickle=2.0, trickle_bytes=1))  # about 15 minutes for the whole answer
    code = (
        "import sys\n"
        "from dynsteer_hook.model.errors import LLMUnavailableError\n"
        "from dynsteer_hook.llm.client import LLMClient\n"
        "client = LLMClient('openai/gpt-4o-mini', api_base=sys.argv[1], timeout=2.0, max_retries=0)\n"
        "try:\n"
        "    client.complete([{'role': 'user', 'content': 'hi'}])\n"
        "except LLMUnavailableError as exc:\n"
        "    print('unavailable:', exc)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(dynsteer_hook.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code, llm_server.url], capture_output=True, text=True, timeout=600, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "unavailable:" in done.stdout and "within 2 s" in done.stdout
    assert _wait_for(lambda: llm_server.trickles_cut == 1, seconds=60)  # the exit closed the socket mid-answer


def _judged_run(tmp_path: Path) -> tuple[Path, Path]:
    bp = tmp_path / "bp.json"
    bp.write_text(family("chain").blueprint().to_json())
    events = [UserMessage("go")]
    for i, bad in enumerate(("zzz", "yyy", "www"), start=1):  # a weak first stage sends the next to tier 2 (eq. 9)
        events += [ToolCall(f"f{i}", "op_a", {"x": bad}), ToolResult(f"f{i}", None, "ValueError: no")]
    for i, node in enumerate("abc", start=1):
        events += [ToolCall(f"c{i}", f"op_{node}", {"x": node}), ToolResult(f"c{i}", "ok")]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(event_to_record(e)) + "\n" for e in events))
    return bp, trace


@pytest.mark.usefixtures("core_cli")
def test_a_trickling_judge_degrades_to_tier_1_with_the_timeout_recorded(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """``--judge-timeout 2`` bounds a trickled judge answer; the stage falls back to tier 1 and says why."""
    llm_server.script(*[TRICKLE] * 10)
    bp, trace = _judged_run(tmp_path)
    code = main(["evaluate", "--blueprint", str(bp), "--events", str(trace), "--report", str(tmp_path / "out"),
                 "--judge-model", "openai/local-judge", "--judge-api-base", llm_server.url, "--judge-max-retries", "0",
                 "--judge-samples", "1", "--judge-passes", "1", "--judge-timeout", "2"])
    assert code == 0
    report = json.loads((tmp_path / "out" / "dynsteer_report.json").read_text())
    b = next(s for s in report["stages"] if s["milestone"] == "b")
    assert b["tiers"]["efficiency"] == {"requested": 2, "used": 1}
    assert "did not answer within 2 s" in " ".join(b["degraded"])
    assert report["judge_usage"]["degraded"] >= 1 and report["outcome"] == "completed"


class _StoppedError(Exception):
    """Raised by the test's signal handler."""


def test_a_signal_the_kernel_hands_to_the_attempts_thread_still_reaches_the_waiting_thread() -> None:
    """A signal delivered to the attempt's thread (the kernel may pick any thread of the process) runs its Python handler
    in the waiting main thread within a quarter of a second, not when the attempt ends: a long wait on a lock would
    sleep through it (a SIGTERM to a run's worker then went unheard for the model call's whole timeout)."""
    started = threading.Event()
    attempt: list[int] = []

    def slow() -> None:
        attempt.append(threading.get_ident())
        started.set()
        time.sleep(30)

    def signal_the_attempt() -> None:
        started.wait(10)
        time.sleep(0.2)
        signal.pthread_kill(attempt[0], signal.SIGUSR1)

    def stopped(signum: int, frame: Any) -> None:
        raise _StoppedError

    previous = signal.signal(signal.SIGUSR1, stopped)
    try:
        threading.Thread(target=signal_the_attempt, daemon=True).start()
        start = time.monotonic()
        with pytest.raises(_StoppedError):
            run_with_deadline(slow, 20)
        assert time.monotonic() - start < 3
    finally:
        signal.signal(signal.SIGUSR1, previous)
