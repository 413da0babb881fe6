"""dynsteer: evaluate LLM tool-use agents while they run, and stop the runs that went wrong (DynSTEER).

Subcommands: ``evaluate`` (a recorded event file), ``run`` (live ToolSandbox rollouts),
``validate`` (a blueprint), ``schema`` (print a JSON Schema). Every user mistake ends in
one sentence on stderr and exit status 2; a halted run is a result, not an error.
"""

from __future__ import annotations

import argparse
import errno
import io
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from dynsteer_hook.config import EvaluatorConfig
from dynsteer_hook.errors import DynsteerError, Halt, OutputError
from dynsteer_hook.judge_factory import JudgeSettings

if TYPE_CHECKING:
    from dynsteer_hook.report import Report
    from dynsteer_hook.runtime.pairing import LineIndex

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
        except RecursionError:
            raise DynsteerError(f"--set {key.strip()}: the value nests arrays and objects too deeply; give a flat value") from None
    return EvaluatorConfig().with_overrides(**overrides)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from dynsteer_hook.outputs import JsonlSink, StagedFiles, check_output_dir, create_dir, reason, temp_sibling
    from dynsteer_hook.report import IncompleteLog, with_files
    from dynsteer_hook.runtime.evaluator import Evaluator
    from dynsteer_hook.runtime.pairing import LineIndex
    from dynsteer_hook.storage import AUDIT_LOG, REPORT_FILES, check_events, load_valid_blueprint, read_numbered_events, stage_report

    # Every input is checked before any output is opened, so a bad file never touches an earlier run's files.
    bp = load_valid_blueprint(args.blueprint)
    settings, config = judges_from_args(args, config_from_args(args))
    judges = settings.build()
    check_events(args.events)
    out = Path(args.report)
    check_output_dir(out, "--report", REPORT_FILES)
    create_dir(out, "--report")
    # The new audit log grows beside the old one and replaces it, with the reports, only once all are written.
    audit_tmp = temp_sibling(out / AUDIT_LOG)
    with StagedFiles() as staged:
        try:
            sink = JsonlSink(audit_tmp)
        except OSError as exc:
            raise OutputError(f"the audit log cannot be created in {out} ({reason(exc)}); pass a writable directory with --report") from None
        staged.adopt(audit_tmp, out / AUDIT_LOG)
        with sink:
            evaluator = Evaluator(bp, config, sink=sink, judges=judges)
            lines = LineIndex()
            try:
                for lineno, event in read_numbered_events(args.events):
                    lines.note(evaluator.k + 1, lineno)
                    evaluator.observe(event)
            except Halt:
                pass
            report = evaluator.finish()
        gap = IncompleteLog(file=AUDIT_LOG, from_record=sink.records, reason=sink.error) if sink.error else None
        report = with_files(report, incomplete_logs=(gap,) if gap else ())
        try:
            json_path, _ = stage_report(staged, report, out)
            staged.commit()
        except OSError as exc:
            raise OutputError(
                f"the report cannot be written to {out} ({reason(exc)}); the files already there are unchanged; "
                "free some space or pass another --report directory"
            ) from None
    _warn_trace_faults(report, lines, args.events)
    where = f" ({report.stop.reason} at k={report.stop.k}, t={report.stop.t})" if report.stop else ""
    print(f"{report.task or Path(args.events).stem}: {report.outcome}{where}; score {report.score:.3f}; "
          f"settled {len(report.settled)}/{len(report.settled) + len(report.unsettled)}; report {json_path}")
    if gap is not None:
        raise OutputError(
            f"the audit log {out / AUDIT_LOG} misses every record from record {gap.from_record} on ({gap.reason}); "
            "the report says so; free some space and evaluate again"
        )
    return 0


def _warn_trace_faults(report: Report, lines: LineIndex, events: Path, shown: int = 10) -> None:
    """One stderr sentence per call/result pairing fault (the first ``shown``), naming the line."""
    for f in report.trace_faults[:shown]:
        line = lines.line(f.k)
        where = f"line {line}" if line is not None else f"event k={f.k}"
        print(f"dynsteer: warning: event file {events} {where}: {f.detail}; evaluated on, recorded in the report", file=sys.stderr)
    if report.trace_fault_count > shown:
        print(f"dynsteer: warning: event file {events} has {report.trace_fault_count - shown} more pairing faults; "
              "see trace_faults in the report and the audit log", file=sys.stderr)


def _cmd_validate(args: argparse.Namespace) -> int:
    from dynsteer_hook.compile.validation import validate_blueprint
    from dynsteer_hook.storage import load_blueprint

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
        from dynsteer_hook.report import Report

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


EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # as a shell reports a process ended by SIGPIPE


class _StdoutError(Exception):
    """Writing standard output failed (a full disk, a closed pipe)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.error = error


class _Stdout:
    """Standard output whose write failures are told apart from every other I/O error."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        try:
            return int(self._inner.write(text))
        except OSError as exc:
            raise _StdoutError(exc) from None

    def flush(self) -> None:
        try:
            self._inner.flush()
        except OSError as exc:
            raise _StdoutError(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _detach_stdout() -> None:
    """Point standard output at /dev/null so that the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # not a real file (a test's capture): nothing will flush it at exit


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dynsteer`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose)
    real_stdout = sys.stdout
    sys.stdout = _Stdout(real_stdout)
    try:
        code: int = args.func(args)
        sys.stdout.flush()
    except DynsteerError as exc:
        print(f"dynsteer: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("dynsteer: interrupted; files written so far are kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _StdoutError as exc:
        sys.stdout = real_stdout
        _detach_stdout()
        if exc.error.errno == errno.EPIPE:
            return EXIT_BROKEN_PIPE  # the reader stopped early (| head): end quietly, as other tools do
        print(f"dynsteer: error: standard output cannot be written ({exc}); redirect it to a writable place", file=sys.stderr)
        return EXIT_USAGE
    finally:
        sys.stdout = real_stdout
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
