"""What the framework adapters cost per tool call: a run of 50 tool calls by a fake model, with DynSTEER and without.

For each framework, one run is a real agent loop of that framework (LangChain's ``create_agent`` with its
``GenericFakeChatModel``, the Agents SDK's ``Runner.run`` with its ``ScriptedModel``) on the address book of the
adapters' examples: 49 lookups and one email, then the agent's last words. The run with the adapter and the run
without it are timed in this process in alternating pairs (the order flips from pair to pair, a collection of
garbage before each), and the script prints the median wall and CPU seconds of each, the ratio with/without (the
median of the pairs' ratios, and their range) and DynSTEER's CPU per tool call. Building the agent is not timed;
the adapter's run includes its session, every event, the stop rules and the finished report (no files).

LangChain 1 cannot share an environment with ToolSandbox: when it is not installed here, the script measures it
in ``.venv-langchain`` (``DYNSTEER_LANGCHAIN_VENV``, made by scripts/setup.sh) and prints both frameworks side by
side at the end. A framework found nowhere is named and left out.

    python scripts/bench_adapters.py --pairs 15
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's package, wherever the interpreter's is

from dynsteer_hook.model.config import EvaluatorConfig  # noqa: E402 - after the checkout is on the path

FRAMEWORKS = {"langchain": "langchain.agents.middleware", "openai-agents": "agents"}


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float


def _timed(run: Callable[[], Any]) -> Timing:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return Timing(time.perf_counter() - wall, time.process_time() - cpu)


def _config(calls: int) -> EvaluatorConfig:
    # 49 lookups make no progress after the first: the stagnation rule would halt the run, which must run its 50 calls.
    return EvaluatorConfig(n_stag=calls + 10)


# -- LangChain -------------------------------------------------------------------------


Builders = tuple[Callable[[], Callable[[], Any]], Callable[[], Callable[[], Any]], str, list[float]]


def langchain_runs(calls: int) -> Builders:
    """Builders of one run without and one with the middleware, each returning the timed call."""
    import langchain
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage

    from dynsteer_hook.langchain import DynSteerMiddleware
    from dynsteer_hook.langchain import example as ex

    def script() -> list[AIMessage]:
        turns = [AIMessage(content="", tool_calls=[{"name": "find_contact", "args": {"name": ("Alice", "Bob")[i % 2]},
                                                    "id": f"c{i}", "type": "tool_call"}]) for i in range(calls - 1)]
        turns.append(AIMessage(content="", tool_calls=[{"name": "send_email", "id": "mail", "type": "tool_call",
                                                        "args": {"to": "alice@example.com", "body": "The meeting moved to 3pm."}}]))
        return [*turns, AIMessage(content="I emailed Alice.")]

    ask = {"messages": [{"role": "user", "content": ex.INSTRUCTION}]}
    limit = {"recursion_limit": 4 * calls + 20}

    def plain() -> Callable[[], Any]:
        agent = create_agent(ex.ScriptedChatModel(messages=iter(script())), tools=ex.tools())
        return lambda: agent.invoke(ask, limit)

    def steered() -> Callable[[], Any]:
        steer = DynSteerMiddleware(ex.blueprint(), config=_config(calls))
        agent = create_agent(ex.ScriptedChatModel(messages=iter(script())), tools=ex.tools(), middleware=[steer])

        def run() -> None:
            agent.invoke(ask, limit)
            assert steer.report is not None and steer.report.outcome == "completed", steer.report and steer.report.outcome
            assert steer.session is not None
            evaluator.append(steer.session.evaluator_seconds)

        return run

    evaluator: list[float] = []
    return plain, steered, f"langchain {langchain.__version__}", evaluator


# -- OpenAI Agents SDK -----------------------------------------------------------------


def agents_runs(calls: int) -> Builders:
    """Builders of one run without and one with the guardrails and hooks, each returning the timed call."""
    import agents
    from agents import Agent, Runner, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from dynsteer_hook.openai_agents import DynSteerAgents
    from dynsteer_hook.openai_agents import example as ex

    set_tracing_disabled(True)  # no trace leaves the machine, with DynSTEER or without

    def script() -> list[list[Any]]:
        turns = [[function_call("find_contact", {"name": ("Alice", "Bob")[i % 2]}, call_id=f"c{i}")] for i in range(calls - 1)]
        turns.append([function_call("send_email", {"to": "alice@example.com", "body": "The meeting moved to 3pm."}, call_id="mail")])
        return [*turns, [assistant_message("I emailed Alice.")]]

    def agent() -> Agent[Any]:
        return Agent(name="address_book", tools=list(ex.tools()), model=ScriptedModel(script()))

    def plain() -> Callable[[], Any]:
        a = agent()
        return lambda: asyncio.run(Runner.run(a, ex.INSTRUCTION, max_turns=calls + 5))

    def steered() -> Callable[[], Any]:
        a, steer = agent(), DynSteerAgents(ex.blueprint(), config=_config(calls))

        def run() -> None:
            report = asyncio.run(steer.run(a, ex.INSTRUCTION, max_turns=calls + 5)).report
            assert report.outcome == "completed", report.outcome
            assert steer.session is not None
            evaluator.append(steer.session.evaluator_seconds)

        return run

    evaluator: list[float] = []
    return plain, steered, f"openai-agents {agents.__version__}", evaluator


# -- the measurement -------------------------------------------------------------------


def measure(name: str, calls: int, pairs: int) -> dict[str, Any]:
    """Time ``pairs`` alternating pairs of one framework's runs and print the figures; return them."""
    builders = {"langchain": langchain_runs, "openai-agents": agents_runs}[name]
    plain, steered, version, evaluator = builders(calls)
    for build in (plain, steered):  # warm-up: imports, first-call caches
        build()()
    evaluator.clear()
    timings: dict[str, list[Timing]] = {"without": [], "with": []}
    for i in range(pairs):
        order = [("without", plain), ("with", steered)] if i % 2 == 0 else [("with", steered), ("without", plain)]
        for label, build in order:
            timings[label].append(_timed(build()))
    without, with_ = timings["without"], timings["with"]
    wall_ratios = [w.wall / p.wall for w, p in zip(with_, without, strict=True)]
    cpu_ratios = [w.cpu / p.cpu for w, p in zip(with_, without, strict=True)]
    figures: dict[str, Any] = {
        "framework": version, "calls": calls, "pairs": pairs,
        "wall_without": statistics.median(t.wall for t in without), "wall_with": statistics.median(t.wall for t in with_),
        "cpu_without": statistics.median(t.cpu for t in without), "cpu_with": statistics.median(t.cpu for t in with_),
        "wall_ratio": statistics.median(wall_ratios), "wall_ratio_range": [min(wall_ratios), max(wall_ratios)],
        "cpu_ratio": statistics.median(cpu_ratios), "cpu_ratio_range": [min(cpu_ratios), max(cpu_ratios)],
        "evaluator_per_call": statistics.median(evaluator) / calls,  # wall seconds inside Session.feed
    }
    figures["framework_per_call"] = figures["cpu_without"] / calls
    figures["added_per_call"] = (figures["cpu_with"] - figures["cpu_without"]) / calls
    _print(figures)
    return figures


def _print(f: dict[str, Any]) -> None:
    print(f"{f['framework']}: a run of {f['calls']} tool calls, {f['pairs']} alternating pairs")
    print(f"  {'variant':<18}{'median wall s':>15}{'median CPU s':>14}")
    print(f"  {'without DynSTEER':<18}{f['wall_without']:>15.4f}{f['cpu_without']:>14.4f}")
    print(f"  {'with DynSTEER':<18}{f['wall_with']:>15.4f}{f['cpu_with']:>14.4f}")
    print(f"  ratio with/without: wall {f['wall_ratio']:.3f} (pairs {f['wall_ratio_range'][0]:.2f}-{f['wall_ratio_range'][1]:.2f}), "
          f"CPU {f['cpu_ratio']:.3f} (pairs {f['cpu_ratio_range'][0]:.2f}-{f['cpu_ratio_range'][1]:.2f}); per tool call: the framework "
          f"{f['framework_per_call'] * 1e6:.0f} us of CPU, DynSTEER adds {f['added_per_call'] * 1e6:.0f} us, and the evaluator "
          f"(Session.feed) takes {f['evaluator_per_call'] * 1e6:.0f} us of wall time")


def _elsewhere(name: str, args: argparse.Namespace) -> dict[str, Any] | None:
    """LangChain's figures measured in its own environment, or None when there is none."""
    python = Path(os.environ.get("DYNSTEER_LANGCHAIN_VENV") or ROOT / ".venv-langchain") / "bin" / "python"
    if name != "langchain" or not python.exists():
        return None
    print(f"{name}: measured in {python.parent.parent}", flush=True)
    done = subprocess.run([str(python), __file__, "--framework", name, "--calls", str(args.calls), "--pairs", str(args.pairs), "--json"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        print(f"{name}: the run in {python} failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
        return None
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    _print(figures)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--framework", choices=sorted(FRAMEWORKS), action="append",
                        help="the framework to measure (repeatable; default: both)")
    parser.add_argument("--calls", type=int, default=50, help="tool calls per run (default 50)")
    parser.add_argument("--pairs", type=int, default=15, help="alternating pairs of runs (default 15)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one framework's figures, for the parent run
    args = parser.parse_args(argv)
    if args.calls < 2 or args.pairs < 1:
        parser.error("--calls must be at least 2 and --pairs at least 1")
    results = []
    for name in args.framework or sorted(FRAMEWORKS):
        if importlib.util.find_spec(FRAMEWORKS[name].split(".")[0]) is not None and importlib.util.find_spec(FRAMEWORKS[name]) is not None:
            if args.json:
                with contextlib.redirect_stdout(sys.stderr):
                    figures = measure(name, args.calls, args.pairs)
                print(json.dumps(figures))
                continue
            results.append(measure(name, args.calls, args.pairs))
            continue
        found = None if args.json else _elsewhere(name, args)
        if found is None:
            print(f"{name}: not installed for {sys.executable}{' nor in .venv-langchain' if name == 'langchain' else ''}; left out "
                  f"(scripts/setup.sh installs it)")
        else:
            results.append(found)
    if len(results) > 1:
        print(f"\nside by side, a run of {args.calls} tool calls (the goal: ratio <= 1.05)")
        print(f"  {'framework':<24}{'CPU ratio':>10}{'wall ratio':>11}{'framework us/call':>19}{'DynSTEER us/call':>18}{'evaluator wall us/call':>24}")
        for f in results:
            print(f"  {f['framework']:<24}{f['cpu_ratio']:>10.3f}{f['wall_ratio']:>11.3f}{f['framework_per_call'] * 1e6:>19.0f}"
                  f"{f['added_per_call'] * 1e6:>18.0f}{f['evaluator_per_call'] * 1e6:>24.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
