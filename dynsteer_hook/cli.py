"""dynsteer: evaluate LLM tool-use agents while they run, and stop the runs that went wrong (DynSTEER).

Subcommands: ``evaluate`` (a recorded event file), ``run`` (live ToolSandbox rollouts),
``validate`` (a blueprint), ``schema`` (print a JSON Schema). Every user mistake ends in
one sentence on stderr and exit status 2; a halted run is a result, not an error.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from dynsteer_hook.config import EvaluatorConfig
from dynsteer_hook.errors import DynsteerError, Halt
from dynsteer_hook.judges.factory import JudgeSettings

EXIT_USAGE = 2


def configure_logging(verbose: bool) -> None:
    """Configure structlog once, for the command line (stderr, human-readable)."""
    level = logging.DEBUG if verbose else logging.WARNING
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


_THRESHOLD_FLAGS: dict[str, type] = {
    "theta_pass": float,
    "delta_margin": float,
    "theta_low_u": float,
    "theta_high_u": float,
    "theta_warn": float,
    "theta_fail": float,
    "alpha": float,
    "beta": float,
    "n_stag": int,
    "low_score_patience": int,
    "structural_patience": int,
    "max_tier": int,
}


def add_config_flags(p: argparse.ArgumentParser) -> None:
    """Stop thresholds and rates as flags (defaults from ``EvaluatorConfig``)."""
    g = p.add_argument_group("evaluator thresholds (defaults: see EvaluatorConfig)")
    for name, kind in _THRESHOLD_FLAGS.items():
        g.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, default=None, metavar=kind.__name__.upper())
    g.add_argument("--set", dest="config_set", action="append", default=[], metavar="KEY=VALUE",
                   help="any other EvaluatorConfig field, e.g. --set efficiency_step_penalty=0.1")


def add_judge_flags(p: argparse.ArgumentParser) -> None:
    """Options of the Tier 2/3 LLM judges (without --judge-model: Tier 1 rules only)."""
    g = p.add_argument_group("LLM judges (tiers 2 and 3)")
    g.add_argument("--judge-model", default=None, help="litellm model string, e.g. openai/gpt-4o-mini; enables tiers 2 and 3")
    g.add_argument("--judge-api-base", default=None, help="endpoint of an OpenAI-compatible server (vLLM, Ollama, llama.cpp)")
    g.add_argument("--judge-api-key-env", default=None, metavar="VAR", help="environment variable holding the API key")
    g.add_argument("--judge-timeout", type=float, default=60.0, help="seconds per attempt of a judge call, whole answer included")
    g.add_argument("--judge-max-retries", type=int, default=2, help="retries on timeouts, 429 and 5xx")
    g.add_argument("--judge-samples", type=int, default=2, help="samples of the tier 2 judge")
    g.add_argument("--judge-passes", type=int, default=2, help="deliberation passes of the tier 3 judge")


def judges_from_args(args: argparse.Namespace, config: EvaluatorConfig) -> tuple[JudgeSettings, EvaluatorConfig]:
    """Judge settings, and the config with ``max_tier`` defaulting to 3 when a judge model is given."""
    settings = JudgeSettings(
        model=args.judge_model,
        api_base=args.judge_api_base,
        api_key_env=args.judge_api_key_env,
        timeout=args.judge_timeout,
        max_retries=args.judge_max_retries,
        samples=args.judge_samples,
        passes=args.judge_passes,
    )
    if settings.model and getattr(args, "max_tier", None) is None:
        config = config.with_overrides(max_tier=3)
    if config.max_tier > 1 and not settings.model:
        raise DynsteerError(f"--max-tier {config.max_tier} needs an LLM judge: pass --judge-model (and --judge-api-base for a local server)")
    if settings.samples < 1 or settings.passes < 1 or settings.max_retries < 0 or settings.timeout <= 0:
        raise DynsteerError("--judge-samples and --judge-passes must be at least 1, --judge-max-retries 0 or more, --judge-timeout positive")
    return settings, config


def config_from_args(args: argparse.Namespace) -> EvaluatorConfig:
    """An ``EvaluatorConfig`` with the flags given on the command line."""
    overrides: dict[str, Any] = {k: getattr(args, k) for k in _THRESHOLD_FLAGS if getattr(args, k, None) is not None}
    for item in getattr(args, "config_set", []) or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise DynsteerError(f"--set {item!r} is not KEY=VALUE; write for example --set theta_fail=0.25")
        try:
            overrides[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            overrides[key.strip()] = raw
    return EvaluatorConfig().with_overrides(**overrides)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from dynsteer_hook.evaluator import Evaluator
    from dynsteer_hook.storage import AUDIT_LOG, JsonlSink, load_blueprint, read_events, write_report

    bp = load_blueprint(args.blueprint)
    settings, config = judges_from_args(args, config_from_args(args))
    judges = settings.build()
    out = Path(args.report)
    if out.exists() and not out.is_dir():
        raise DynsteerError(f"report directory {out} is a file; pass a directory path with --report")
    try:
        sink = JsonlSink(out / AUDIT_LOG)
    except OSError as exc:
        raise DynsteerError(f"report directory {out} cannot be created ({exc.strerror}); pass a writable directory path with --report") from None
    with sink:
        evaluator = Evaluator(bp, config, sink=sink, judges=judges)
        try:
            for event in read_events(args.events):
                evaluator.observe(event)
        except Halt:
            pass
        report = evaluator.finish()
    json_path, _ = write_report(report, out)
    where = f" ({report.stop.reason} at k={report.stop.k}, t={report.stop.t})" if report.stop else ""
    print(f"{report.task or Path(args.events).stem}: {report.outcome}{where}; score {report.score:.3f}; "
          f"settled {len(report.settled)}/{len(report.settled) + len(report.unsettled)}; report {json_path}")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from dynsteer_hook.storage import load_blueprint
    from dynsteer_hook.validation import validate_blueprint

    bp = load_blueprint(args.blueprint)
    violations = validate_blueprint(bp, None, str(args.blueprint))
    for v in violations:
        print(str(v))
    if violations:
        return 1
    print(f"{args.blueprint}: valid ({len(bp.milestones)} milestones, {len(bp.edges)} edges, {len(bp.minefields)} minefields)")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    if args.which == "blueprint":
        from dynsteer_hook.blueprint import blueprint_json_schema

        schema = blueprint_json_schema()
    elif args.which == "events":
        from dynsteer_hook.events import event_record_schema

        schema = event_record_schema()
    else:
        from dynsteer_hook.audit import Report

        schema = Report.model_json_schema()
    print(json.dumps(schema, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="dynsteer", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("evaluate", help="evaluate a recorded event file (JSONL) against a blueprint")
    ev.add_argument("--blueprint", required=True, type=Path, help="blueprint JSON file")
    ev.add_argument("--events", required=True, type=Path, help="event file, one JSON record per line")
    ev.add_argument("--report", required=True, type=Path, help="directory for the audit log and reports")
    add_config_flags(ev)
    add_judge_flags(ev)
    ev.set_defaults(func=_cmd_evaluate)

    va = sub.add_parser("validate", help="check a blueprint's contracts against its own tool catalog")
    va.add_argument("blueprint", type=Path)
    va.set_defaults(func=_cmd_validate)

    sc = sub.add_parser("schema", help="print a JSON Schema")
    sc.add_argument("which", choices=["blueprint", "events", "report"])
    sc.set_defaults(func=_cmd_schema)

    try:
        from dynsteer_hook.toolsandbox.cli import add_run_parser
    except ImportError:  # pragma: no cover - the package ships the subpackage
        pass
    else:
        add_run_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dynsteer`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose)
    try:
        code: int = args.func(args)
    except DynsteerError as exc:
        print(f"dynsteer: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("dynsteer: interrupted; files written so far are kept", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
