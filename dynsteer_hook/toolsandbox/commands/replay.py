"""``dynsteer replay`` (recorded ToolSandbox runs evaluated with virtual stops) and ``dynsteer compare``
(replays of several agents x repeats, meta-evaluated as the paper's Tables 1 and 3)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dynsteer_hook.model.errors import DynsteerError, OutputError


def add_replay_parser(sub: Any, *, flags: bool = True) -> None:
    """Declare ``replay`` on the main parser's subcommands, with its flags unless ``flags`` is false."""
    p = sub.add_parser(
        "replay",
        help="evaluate recorded ToolSandbox runs or Inspect .eval logs with dynsteer; halts become virtual stops",
        description="Reads ToolSandbox output folders (result_summary.json, trajectories/<scenario>/execution_context.json "
        "and conversation.json), made by ToolSandbox's own CLI with any agent or by dynsteer run, rebuilds the event "
        "stream the live hook would have fed, evaluates it with the same blueprints, configuration and judges, and writes "
        "the same per-scenario reports plus replay_summary.json. A halt is mapped onto the recorded agent turns: stop "
        "progress p = b_stop / b_full, saved progress q = 1 - p. Inspect .eval logs (the inspect extra) are read too: messages "
        "from each sample, tool calls and results from its ToolEvents, the blueprint from --blueprints (<task>/<sample id>.json "
        "or <sample id>.json) or the one the live run stored in the sample.",
    )
    if not flags:
        return
    from dynsteer_hook.flags import add_config_flags, add_judge_flags, add_otel_flags
    from dynsteer_hook.report.gates import add_gate_flags
    from dynsteer_hook.toolsandbox.live.engines import add_engine_flags

    # "*", not "+": a bare --otel takes the next word as its value, and cmd_replay gives back a recording it took.
    p.add_argument("runs", nargs="*", type=Path, metavar="RUN_DIR",
                   help="ToolSandbox output folders, or a folder holding them (one level below); Inspect .eval logs or folders of them")
    p.add_argument("-o", "--out", type=Path, required=True, help="folder for the replayed reports and replay_summary.json")
    p.add_argument("--blueprints", type=Path, default=None, help="directory of blueprints named <scenario>.json (default: the shipped ones)")
    p.add_argument("-p", "--parallel", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--events", action="store_true", help="also write dynsteer_events.jsonl per scenario")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_engine_flags(p)
    add_config_flags(p)
    add_judge_flags(p)
    add_otel_flags(p)
    add_gate_flags(p)
    p.set_defaults(func=cmd_replay)


def add_compare_parser(sub: Any, *, flags: bool = True) -> None:
    """Declare ``compare`` on the main parser's subcommands, with its flags unless ``flags`` is false."""
    p = sub.add_parser(
        "compare",
        help="replay several agents x repeats and compare them (paper Tables 1 and 3, DS of eq. 10)",
        description="Each agent is NAME=DIR: a folder of recorded ToolSandbox runs, one sub-folder per repeat (or one run). "
        "Every repeat is replayed; per agent the DynSTEER and native mean score with the spread over repeats, the replay "
        "stop rate, the share of exact 1.0 scores and the judge calls, tokens and cost; paired Wilcoxon signed-rank tests "
        "for every agent pair under both evaluators, DS(eps), and the virtual stops per criterion. Writes compare.md, "
        "compare.csv and compare.json.",
    )
    if not flags:
        return
    from dynsteer_hook.flags import add_config_flags, add_judge_flags
    from dynsteer_hook.toolsandbox.live.engines import add_engine_flags

    p.add_argument("agents", nargs="*", metavar="NAME=DIR", help="an agent's name and its folder of recorded runs")
    p.add_argument("--manifest", type=Path, default=None, help='JSON {"agents": {NAME: [RUN_DIR, ...]}} instead of, or besides, NAME=DIR')
    p.add_argument("-o", "--out", type=Path, required=True, help="folder for the replays and the comparison tables")
    p.add_argument("--epsilon", type=float, default=0.01, help="margin eps of DS(eps) (default 0.01)")
    p.add_argument("--significance", type=float, default=0.01, metavar="ALPHA", help="significance level of the paired tests (default 0.01)")
    p.add_argument("--blueprints", type=Path, default=None, help="directory of blueprints named <scenario>.json (default: the shipped ones)")
    p.add_argument("-p", "--parallel", type=int, default=1, help="worker processes per replay (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--against-all-tier3", action="store_true",
                   help="also replay every repeat with every stage at Tier 3 (--min-tier 3) and report the judge calls, tokens and cost "
                        "of the adaptive ladder against it, and the Kendall tau between the two agent rankings (needs --judge-model)")
    add_engine_flags(p)
    add_config_flags(p)
    add_judge_flags(p)
    p.set_defaults(func=cmd_compare)


def _options(args: argparse.Namespace) -> Any:
    from dynsteer_hook.flags import config_from_args, judges_from_args, otel_observers
    from dynsteer_hook.toolsandbox.live.engines import check_engine
    from dynsteer_hook.toolsandbox.live.runner import default_blueprint_dir
    from dynsteer_hook.toolsandbox.offline.replay import ReplayOptions

    if args.parallel < 1:
        raise DynsteerError(f"-p/--parallel {args.parallel} must be at least 1")
    check_engine(args.engine, args.ray_address)
    if args.blueprints is not None and not args.blueprints.is_dir():
        raise DynsteerError(f"--blueprints {args.blueprints} is not a directory; pass the folder holding <scenario>.json files")
    if args.out.exists() and not args.out.is_dir():
        raise DynsteerError(f"-o/--out {args.out} is a file; pass a folder for the output")
    settings, config = judges_from_args(args, config_from_args(args))
    settings.build()  # a bad model string or a missing key stops before anything is replayed
    return ReplayOptions(blueprint_dir=args.blueprints or default_blueprint_dir(), config=config, judges=settings,
                         write_events=getattr(args, "events", False),
                         observers=otel_observers(args, source="replay", theta_pass=config.theta_pass,
                                                  inputs=(*getattr(args, "runs", ()), args.blueprints)))


def cmd_compare(args: argparse.Namespace) -> int:
    """Run ``dynsteer compare``."""
    from dynsteer_hook.files.outputs import write_json_atomic, write_text_atomic
    from dynsteer_hook.report.compare_page import render_compare_page
    from dynsteer_hook.report.html import render_compare
    from dynsteer_hook.report.run_page import INDEX_HTML
    from dynsteer_hook.toolsandbox.offline.compare import agents_from, compare, render_csv, render_markdown

    if not 0 <= args.epsilon < 1 or not 0 < args.significance < 1:
        raise DynsteerError(f"--epsilon {args.epsilon} must be in [0, 1) and --significance {args.significance} in (0, 1)")
    agents = agents_from(args.agents, args.manifest)
    options = _options(args)
    result = compare(agents, options, args.out, processes=args.parallel, eps=args.epsilon, alpha=args.significance,
                     progress=not args.no_progress, engine=args.engine, ray_address=args.ray_address,
                     against_all_tier3=args.against_all_tier3)
    markdown = render_markdown(result)
    write_json_atomic(args.out / "compare.json", result)
    write_text_atomic(args.out / "compare.csv", render_csv(result))
    write_text_atomic(args.out / "compare.md", markdown)
    write_text_atomic(args.out / "compare.html", render_compare(result, render_markdown(result, per_scenario=False)))
    write_text_atomic(args.out / INDEX_HTML, render_compare_page(result))
    print(render_markdown(result, per_scenario=False))
    print(f"wrote {args.out / INDEX_HTML} (per scenario, linking to every replayed report), compare.md, compare.html, compare.csv and compare.json")
    return 0


def _line(r: dict[str, Any]) -> str:
    if "skipped" in r:
        return f"{r['scenario']}: skipped: {r['reason']}"
    head = r["outcome"]
    if r["virtual_stop"] is not None:
        s, v = r["stop"], r["virtual_stop"]
        head = (f"VIRTUAL STOP {s['reason']} at k={s['k']}, t={s['t']} (turn {v['b_stop']}/{v['b_full']}: "
                f"p={v['stop_progress']:.3f}, saved {v['saved_progress']:.3f})")
    label = "Inspect score" if r.get("source") == "inspect" else "ToolSandbox similarity"
    native = "" if r["native_similarity"] is None else f", {label} {float(r['native_similarity']):.3f}"
    return f"{r['scenario']}: {head}; dynsteer {r['score']:.3f}{native}"


def _recordings(args: argparse.Namespace) -> list[Path]:
    """The RUN_DIRs, with the one a bare ``--otel`` took as its value given back: a folder or an Inspect log is a
    recording to replay, never a file to append telemetry to (``replay --otel RUN_DIR -o OUT``)."""
    runs = list(args.runs)
    taken = Path(args.otel).expanduser() if args.otel else None
    if taken is not None and (taken.is_dir() or (taken.suffix == ".eval" and taken.is_file())):
        runs.insert(0, Path(args.otel))
        args.otel = ""
    if not runs:
        raise DynsteerError("replay needs at least one RUN_DIR: a ToolSandbox output folder, a folder of them, or an Inspect .eval log")
    return runs


def cmd_replay(args: argparse.Namespace) -> int:
    """Run ``dynsteer replay``."""
    from dynsteer_hook.flags import otel_shutdown
    from dynsteer_hook.llm.judges import cache_sentence
    from dynsteer_hook.report.run_page import INDEX_HTML, console_table, replay_rows, totals
    from dynsteer_hook.toolsandbox.commands.gating import gated_status, gates_of, row_measures, say_failed, verdicts
    from dynsteer_hook.toolsandbox.offline.replay import REPLAY_SUMMARY, replay_runs

    gates = gates_of(args)
    args.runs = _recordings(args)
    options = _options(args)
    try:
        summary = replay_runs(args.runs, options, args.out, args.parallel, progress=not args.no_progress,
                              engine=args.engine, ray_address=args.ray_address)
    finally:
        otel_shutdown(options.observers)
    for r in summary["per_scenario"]:
        print(_line(r))
    for s in summary["skipped_scenarios"]:
        print(_line({"skipped": True, **s, "scenario": s["scenario"] or s["run"]}))
    rate = summary["stop_rate"]
    saved = summary["mean_saved_progress_on_halted"]
    print(f"replayed {summary['replayed']}, skipped {summary['skipped']}, virtual stops {summary['halted']}"
          + ("" if rate is None else f" (rate {rate:.3f})")
          + ("" if saved is None else f", mean saved progress on halted runs {saved:.3f}")
          + f"; summary {args.out / REPLAY_SUMMARY}")
    if summary["judge_cache"] is not None:
        print(cache_sentence(summary["judge_cache"]))
    rows = replay_rows(summary["per_scenario"], args.out, args.out)
    print(console_table(totals(rows), args.out / INDEX_HTML))
    judged = verdicts(gates, row_measures(rows))
    faulty = [r for r in summary["per_scenario"] if r.get("incomplete_logs") or r.get("report_error")]
    if faulty:
        first = faulty[0]
        why = first.get("report_error") or first["incomplete_logs"][0]["reason"]
        say_failed(judged)
        raise OutputError(f"{len(faulty)} scenario(s) could not write all their files ({why}), e.g. {first['scenario']}; their "
                          "reports and the replay summary say what is missing (incomplete_logs); free some space and replay again")
    return gated_status(judged, 0)
