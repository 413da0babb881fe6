"""``dynsteer compile``: public task views to stored blueprints, through an LLM and/or the generator.

Views come from ToolSandbox scenarios (``-s NAME ...`` or ``--all``) or from TaskView JSON
files (``--view FILE``, no ToolSandbox needed). With ``--model`` an LLM samples C
candidates per view; the deterministic generator adds C more unless ``--no-generator``;
without ``--model`` the generator works alone, and no API key is needed. Views whose stored
blueprint has the same public-view hash, candidate count and models are skipped unless ``--force``. Each view prints
one line; errors (a provider unreachable after retries, fewer valid candidates than the
minimum) end in one sentence and exit status 2 from the CLI's ``main``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynsteer_hook.files.names import is_safe_name
from dynsteer_hook.flags import add_model_flags, model_from_args
from dynsteer_hook.llm.settings import ModelSettings
from dynsteer_hook.model.errors import DynsteerError, OutputError, ScenarioError, validation_problem

if TYPE_CHECKING:
    from dynsteer_hook.compile.compiler import CandidateSource
    from dynsteer_hook.files.store import CompileOutcome
    from dynsteer_hook.model.task_view import TaskView

COMPILE_MODEL = ModelSettings(prefix="compile", temperature=0.7, timeout=300.0, max_retries=3, max_tokens=2048, backoff=1.0)
"""Defaults of the compile model (``--compile-*``, ``DYNSTEER_COMPILE_*``); local CPU models are slow, hence the timeout."""
LEGACY_FLAGS = ("model", "api_base", "api_key_env", "temperature", "timeout", "max_retries", "backoff", "max_tokens", "json_mode")
"""Fields whose unprefixed flags (``--model``, ``--api-base``...) keep working beside ``--compile-*``."""



def _default_out() -> Path:
    from dynsteer_hook.files.blueprints import shipped_blueprint_dir

    return shipped_blueprint_dir()


def add_compile_parser(sub: Any, *, flags: bool = True) -> None:
    """Declare ``compile`` on the main parser's subcommands, with its flags unless ``flags`` is false."""
    p = sub.add_parser(
        "compile",
        help="compile public task views into blueprints (LLM candidates via litellm and/or the deterministic generator)",
        description="Samples C candidate graphs per view (with --compile-model, through litellm; any model string and "
        "--compile-api-base; the unprefixed --model, --api-base... still work), "
        "adds the deterministic generator's C candidates unless --no-generator, validates them, merges them by strict "
        "majority and stores blueprints/<scenario>.json keyed by the public-view hash.",
    )
    if not flags:
        return
    from dynsteer_hook.compile.compiler import DEFAULT_CANDIDATES

    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-s", "--scenarios", nargs="+", metavar="NAME", help="ToolSandbox scenarios to compile")
    target.add_argument("--all", action="store_true", help="every ToolSandbox scenario")
    target.add_argument("--view", action="append", type=Path, metavar="FILE", help="a TaskView JSON file (repeatable)")
    add_model_flags(p, COMPILE_MODEL, title="language model (litellm; without a model the generator works alone)", skip=("tool_choice",),
                    aliases={f: "--" + f.replace("_", "-") for f in LEGACY_FLAGS})
    llm = p.add_argument_group("candidate calls")
    llm.add_argument("--concurrency", type=int, default=1, metavar="N",
                     help="candidate calls in flight at once per view (default 1; raise it for hosted APIs)")
    p.add_argument("-c", "--candidates", type=int, default=DEFAULT_CANDIDATES, metavar="C",
                   help=f"candidates per source and view (default {DEFAULT_CANDIDATES})")
    p.add_argument("--min-valid", type=int, default=None, metavar="N",
                   help="fewest valid candidates accepted (default: a strict majority of all candidates)")
    gen = p.add_mutually_exclusive_group()
    gen.add_argument("--no-generator", action="store_true", help="LLM candidates only (needs --compile-model)")
    gen.add_argument("--generator-only", action="store_true", help="deterministic generator only (no --compile-model)")
    p.add_argument("-o", "--out", type=Path, default=None, help="blueprint directory (default: the repository's blueprints/toolsandbox)")
    p.add_argument("--force", action="store_true", help="recompile views whose stored blueprint is up to date")
    p.add_argument("--preferred_tool_backend", default="DEFAULT", choices=["DEFAULT"])
    p.set_defaults(func=cmd_compile)


def _sources(args: argparse.Namespace) -> tuple[list[CandidateSource], str | None]:
    """The candidate sources the flags ask for, and the model (checked before any view is loaded)."""
    from dynsteer_hook.compile.generator.candidates import deterministic_source

    if args.candidates < 1:
        raise DynsteerError(f"--candidates {args.candidates} must be at least 1")
    if args.min_valid is not None and args.min_valid < 1:
        raise DynsteerError(f"--min-valid {args.min_valid} must be at least 1")
    settings = model_from_args(args, COMPILE_MODEL)
    if args.generator_only and settings.model:
        raise DynsteerError("--generator-only uses no model; drop --compile-model (--model), or --generator-only")
    if args.no_generator and not settings.model:
        raise DynsteerError("--no-generator leaves no candidate source; pass --compile-model (--model) too")
    sources: list[CandidateSource] = []
    if settings.model:
        from dynsteer_hook.llm.candidates import llm_source

        if args.concurrency < 1:
            raise DynsteerError(f"--concurrency {args.concurrency} must be at least 1")
        sources.append(llm_source(settings.client(), concurrency=args.concurrency))
    if not args.no_generator:
        sources.append(deterministic_source)
    return sources, settings.model


def _read_view(path: Path) -> TaskView:
    from pydantic import ValidationError

    from dynsteer_hook.files.inputs import load_json_input
    from dynsteer_hook.model.task_view import TaskView

    text, _ = load_json_input(path, "view file", "pass a TaskView JSON file", ScenarioError)
    try:
        view = TaskView.model_validate_json(text)
    except ValidationError as exc:
        raise ScenarioError(f"view file {path} is not a TaskView at {validation_problem(exc)}; see TaskView in dynsteer_hook.model.task_view") from None
    if not is_safe_name(view.task):  # files/names.py: the task names the blueprint file written
        raise ScenarioError(f"view file {path} has task name {view.task!r}, which cannot name a blueprint file; use letters, digits, _ . - "
                            "(starting with a letter or digit)")
    return view


def _views(args: argparse.Namespace) -> Iterator[TaskView]:
    if args.view:
        views = [_read_view(p) for p in args.view]  # every file is checked before the first call
        yield from views
        return
    from dynsteer_hook.toolsandbox.live.runner import load_scenarios
    from dynsteer_hook.toolsandbox.scenario_view import public_view

    scenarios = load_scenarios(None if args.all else args.scenarios, args.preferred_tool_backend)
    for name, scenario in scenarios.items():
        yield public_view(name, scenario)


def _money(cost: float | None) -> str:
    return "-" if cost is None else f"${cost:.6f}"


def describe(outcome: CompileOutcome, *, cost_note: str = "") -> str:
    """One line per view: candidates, valid, pruned reasons, tokens, cost, seconds."""
    if outcome.status == "up-to-date":
        return f"{outcome.task}: up to date (stored blueprint has the same public-view hash, candidate count and models); skipped, --force recompiles"
    reasons = "; ".join(f"{p.candidate}: {p.rule}: {p.message}" for p in outcome.pruned)
    pruned = f"pruned {len(outcome.pruned)}" + (f" [{reasons}]" if reasons else "")
    tokens = "-" if outcome.tokens is None else str(outcome.tokens)
    stats = (f"candidates {outcome.candidates}, valid {outcome.valid}, {pruned}; tokens {tokens}, "
             f"cost {_money(outcome.cost_usd)}{cost_note}, {outcome.seconds:.2f} s")
    if outcome.status == "failed":
        return f"{outcome.task}: FAILED: {stats}: {outcome.error}"
    bp = outcome.blueprint
    shape = f"{len(bp.milestones)} milestones, {len(bp.edges)} edges, {len(bp.minefields)} minefields" if bp else ""
    return f"{outcome.task}: compiled ({shape}): {stats}; wrote {outcome.path}"


def cmd_compile(args: argparse.Namespace) -> int:
    """Run ``dynsteer compile``."""
    from dynsteer_hook.files.outputs import check_output_dir, reason
    from dynsteer_hook.files.store import compile_to_file

    sources, model = _sources(args)
    out: Path = args.out if args.out is not None else _default_out()
    check_output_dir(out, "-o/--out", [f"{n}.json" for n in args.scenarios or ()])
    cost_note = ""
    if model:
        from dynsteer_hook.llm.transport import price_known

        cost_note = "" if price_known(model) else " (litellm has no price for this model: counted as 0)"
    what = (f"{model} x{args.candidates}" if model else "") + (" + " if model and not args.no_generator else "") + (
        f"generator x{args.candidates}" if not args.no_generator else "")
    print(f"dynsteer compile: candidates from {what}; blueprints in {out}")
    failed: list[CompileOutcome] = []
    counts = {"compiled": 0, "up-to-date": 0, "failed": 0}
    start = time.perf_counter()
    views = list(_views(args))  # every view is read and every target checked before the first is compiled
    check_output_dir(out, "-o/--out", [f"{v.task}.json" for v in views])
    for view in views:
        try:
            outcome = compile_to_file(view, out / f"{view.task}.json", sources=sources, n=args.candidates,
                                      min_valid=args.min_valid, force=args.force)
        except OSError as exc:
            raise OutputError(f"the blueprint {out / f'{view.task}.json'} cannot be written ({reason(exc)}); the blueprints "
                              "compiled before it are kept; free some space or pass another -o/--out") from None
        counts[outcome.status] += 1
        print(describe(outcome, cost_note=cost_note), flush=True)
        if outcome.status == "failed":
            failed.append(outcome)
    print(f"compiled {counts['compiled']}, up to date {counts['up-to-date']}, failed {counts['failed']} "
          f"in {time.perf_counter() - start:.1f} s")
    if failed:
        total = sum(counts.values())
        first = failed[0]
        raise DynsteerError(
            f"{len(failed)} of {total} view{'s' if total != 1 else ''} could not be compiled, no blueprint written for "
            f"{'them' if len(failed) > 1 else 'it'} (first: {first.task}: {first.error}); lower --min-valid, raise --candidates, or try another model"
        )
    return 0
