"""Budget benchmark: what the cost bookkeeping (and the budget stop rule) costs each model call, against none.

Plays one real ToolSandbox scenario (a multi-tool task with a state dependency) with the LiteLLM agent against a small
OpenAI-compatible server on 127.0.0.1 that answers the clean path at once, with usage: the fastest a provider can
be, so the share below is an upper bound. Rollouts alternate, with the bookkeeping (``--max-cost`` set: every model
turn tells the evaluator what the role spent and the budget rule decides) and without it (the role's spending is
never told), and the script prints side by side:

1. per model call: the seconds inside the bookkeeping against the seconds of the call itself, and their ratio
   (goal: <= 1%);
2. per rollout: the median wall seconds with and without, and the median of the pairs' ratios (noisier: a rollout
   is mostly ToolSandbox's own work).

    python scripts/bench_budget.py                 # 20 pairs
    python scripts/bench_budget.py --pairs 5 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from dynsteer_hook.llm.client import LLMClient
from dynsteer_hook.logs import configure_logging
from dynsteer_hook.toolsandbox.live import adapter
from dynsteer_hook.toolsandbox.live.limits import RolloutLimits
from dynsteer_hook.toolsandbox.live.runner import RunOptions, load_scenarios, run_scenario
from dynsteer_hook.toolsandbox.roles.named import AGENT_MODEL, LITELLM

GOAL = 0.01
SCENARIO = "send_message_with_contact_content_cellular_off"
CLEAN_PATH: list[tuple[str, dict[str, Any]] | str] = [
    ("set_cellular_service_status", {"on": True}),
    ("search_contacts", {"name": "Fredrik Thordendal"}),
    ("send_message_with_phone_number", {"phone_number": "+12453344098", "content": "How's the new album coming along"}),
    "Your message to Fredrik Thordendal has been sent.",
]


def serve() -> tuple[ThreadingHTTPServer, str]:
    """A server answering the clean path in turn, each answer with 100 prompt and 50 completion tokens."""
    turn = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            step = CLEAN_PATH[turn[0] % len(CLEAN_PATH)]
            turn[0] += 1
            message: dict[str, Any] = {"role": "assistant", "content": step if isinstance(step, str) else None}
            if not isinstance(step, str):
                message["tool_calls"] = [{"id": f"call_{turn[0]}", "type": "function",
                                          "function": {"name": step[0], "arguments": json.dumps(step[1])}}]
            body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "bench",
                               "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


class Timer:
    """Wraps a method, adding up the seconds spent inside it and counting its calls."""

    def __init__(self, owner: Any, name: str) -> None:
        self.seconds, self.calls = 0.0, 0
        self.owner, self.name, self.inner = owner, name, getattr(owner, name)
        timer = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return timer.inner(*args, **kwargs)
            finally:
                timer.seconds += time.perf_counter() - start
                timer.calls += 1

        self.timed: Callable[..., Any] = timed

    def __enter__(self) -> Timer:
        setattr(self.owner, self.name, self.timed)
        return self

    def __exit__(self, *exc: object) -> None:
        setattr(self.owner, self.name, self.inner)


def _no_bookkeeping(self: Any, role_type: Any, role: Any) -> None:
    """The baseline: the role's spending is never told."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=20, help="rollouts with and without the bookkeeping, alternating")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    configure_logging(False)
    server, url = serve()
    scenarios = load_scenarios([SCENARIO])
    with tempfile.TemporaryDirectory() as tmp:
        users = Path(tmp) / "users.json"
        users.write_text(json.dumps({SCENARIO: {"agent": [], "user": []}}))
        base = RunOptions(agent=LITELLM, user="Scripted", script=users, write_events=False, write_reports=False,
                          agent_model=replace(AGENT_MODEL, model="openai/bench", api_base=url))
        budgeted = replace(base, limits=RolloutLimits(max_cost_usd=1000.0, max_tokens=10**9))
        walls: dict[str, list[float]] = {"with": [], "without": []}
        real_spent = adapter.RolloutSession.spent
        with Timer(adapter.RolloutSession, "spent") as kept, Timer(LLMClient, "complete") as calls:
            for i in range(args.pairs + 1):  # the first pair warms up and is not counted
                for mode in (("with", "without") if i % 2 else ("without", "with")):
                    adapter.RolloutSession.spent = kept.timed if mode == "with" else _no_bookkeeping  # type: ignore[method-assign]
                    before = (kept.seconds, kept.calls, calls.seconds, calls.calls)
                    start = time.perf_counter()
                    result = run_scenario((SCENARIO, scenarios[SCENARIO]), options=budgeted if mode == "with" else base,
                                          output_directory=Path(tmp) / "out")
                    wall = time.perf_counter() - start
                    assert result["exception_type"] is None and result["dynsteer"]["outcome"] == "completed", result
                    if i == 0:
                        kept.seconds, kept.calls, calls.seconds, calls.calls = before
                    else:
                        walls[mode].append(wall)
        adapter.RolloutSession.spent = real_spent  # type: ignore[method-assign]
    server.shutdown()
    per_call = kept.seconds / max(1, kept.calls)
    model_call = calls.seconds / max(1, calls.calls)
    ratios = [a / b for a, b in zip(walls["with"], walls["without"], strict=True)]
    out = {
        "pairs": args.pairs,
        "model_calls": calls.calls,
        "bookkeeping_us_per_call": round(per_call * 1e6, 2),
        "model_call_ms": round(model_call * 1e3, 3),
        "share_per_call": round(per_call / model_call, 5),
        "rollout_s_with": round(statistics.median(walls["with"]), 4),
        "rollout_s_without": round(statistics.median(walls["without"]), 4),
        "rollout_ratio_median": round(statistics.median(ratios), 4),
        "goal": GOAL,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{'':28}{'with bookkeeping':>18}{'without':>12}")
    print(f"{'per model call':28}{out['bookkeeping_us_per_call']:>15.1f} us{out['model_call_ms']:>9.3f} ms  "
          f"(the call itself; share {100 * out['share_per_call']:.3f}%, goal <= {100 * GOAL:.0f}%)")
    print(f"{'per rollout (median)':28}{out['rollout_s_with']:>16.4f} s{out['rollout_s_without']:>10.4f} s  "
          f"(ratio of pairs, median {out['rollout_ratio_median']:.4f})")
    print(f"{args.pairs} pairs, {calls.calls} model calls counted", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
