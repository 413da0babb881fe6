"""``dynsteer blueprint-eval``: compiled blueprints measured against ToolSandbox's hidden milestones and minefields (paper Table 2)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dynsteer_hook.model.errors import DynsteerError, OutputError


def add_blueprint_eval_parser(sub: Any, *, flags: bool = True) -> None:
    """Declare ``dynsteer blueprint-eval``, with its flags unless ``flags`` is false."""
    be = sub.add_parser(
        "blueprint-eval",
        help="measure compiled blueprints against ToolSandbox's hidden milestones and minefields (paper Table 2)",
        description="Compiles every scenario's public view with the deterministic generator (or reads --blueprints DIR), "
        "compares each blueprint with the expert reference graph, prints the metrics overall and per category, "
        "and writes blueprint_eval.csv and blueprint_eval.json.",
    )
    if not flags:
        return
    be.add_argument("--blueprints", type=Path, default=None, help="score stored blueprints <scenario>.json instead of compiling")
    be.add_argument("-s", "--scenarios", nargs="*", help="names of scenarios to score (default: all)")
    be.add_argument("-n", "--candidates", type=int, default=5, help="candidates per scenario for the deterministic generator")
    be.add_argument("--split", choices=["dev", "held-out", "all"], default="all",
                    help="score the development part, the held-out part (base scenarios chosen by a fixed hash of the name) or all; "
                    "every metric is reported per part")
    be.add_argument("--ged-timeout", type=float, default=2.0, help="seconds allowed per graph-edit-distance computation")
    be.add_argument("-o", "--out", type=Path, default=Path("blueprint_eval"), help="directory for blueprint_eval.csv and .json")
    be.add_argument("--preferred_tool_backend", default="DEFAULT")
    be.set_defaults(func=_cmd_blueprint_eval)


def _cmd_blueprint_eval(args: argparse.Namespace) -> int:
    from dynsteer_hook.files.outputs import check_output_dir, create_dir, reason
    from dynsteer_hook.toolsandbox.live.runner import load_scenarios
    from dynsteer_hook.toolsandbox.quality.blueprint_eval import (
        ALL,
        evaluate_scenarios,
        render_split_lines,
        render_table,
        summarize_by_split,
        write_outputs,
    )

    if args.candidates < 1:
        raise DynsteerError(f"-n/--candidates {args.candidates} must be at least 1")
    if args.blueprints is not None and not args.blueprints.is_dir():
        raise DynsteerError(f"--blueprints {args.blueprints} is not a directory; pass the folder holding <scenario>.json files")
    check_output_dir(args.out, "-o/--out", ("blueprint_eval.csv", "blueprint_eval.json"))
    scenarios = load_scenarios(None, args.preferred_tool_backend)
    unknown = sorted(set(args.scenarios or ()) - set(scenarios))
    if unknown:
        raise DynsteerError(f"unknown scenario name(s) {unknown[:5]}; list them with 'dynsteer scenarios'")
    scores = evaluate_scenarios(
        scenarios, args.scenarios or None, blueprint_dir=args.blueprints, candidates=args.candidates, ged_timeout=args.ged_timeout,
        split=args.split,
    )
    if not scores:
        raise DynsteerError(f"no scenario of the split {args.split!r} was selected; pick other -s names or another --split")
    by_split = summarize_by_split(scores)
    summary = by_split["all"]
    print(render_table(summary))
    print(f"\nper split (tool operations exclude @agent_message; ask-or-decline is scored on its own):\n{render_split_lines(by_split)}")
    overall = summary[ALL]
    if overall.get("compile_ms_median") is not None:
        print(f"\ncompile time per scenario (no LLM): median {overall['compile_ms_median']:.2f} ms, "
              f"p99 {overall['compile_ms_p99']:.2f} ms, max {overall['compile_ms_max']:.2f} ms")
    stale = sum(1 for s in scores if s.stale)
    if stale:
        print(f"\nnote: {stale} stored blueprint(s) were compiled from a different public view (stale); regenerate them")
    settings = {
        "source": str(args.blueprints) if args.blueprints else "deterministic generator (compiled now)",
        "candidates": args.candidates, "ged_timeout_s": args.ged_timeout, "scenarios": len(scores), "stale_blueprints": stale,
        "split": args.split,
    }
    try:
        csv_path, json_path = write_outputs(create_dir(args.out, "-o/--out"), by_split, scores, settings)
    except OSError as exc:
        raise OutputError(f"the results cannot be written to {args.out} ({reason(exc)}); free some space or pass another -o/--out") from None
    print(f"wrote {csv_path} and {json_path}")
    return 0
