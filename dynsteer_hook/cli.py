"""dynsteer: evaluate LLM tool-use agents while they run, and stop the runs that went wrong (DynSTEER).

Subcommands: ``evaluate`` (a recorded event file), ``run`` (live ToolSandbox rollouts),
``validate`` (a blueprint), ``schema`` (print a JSON Schema). Every user mistake ends in
one sentence on stderr and exit status 2; a halted run is a result, not an error.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynsteer_hook import stop_signals
from dynsteer_hook.model.errors import DynsteerError, Halt, OutputError

if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import FrameType

    from dynsteer_hook.model.events import Event
    from dynsteer_hook.model.records import Report
    from dynsteer_hook.runtime.evaluator import Evaluator
    from dynsteer_hook.runtime.pairing import LineIndex
    from dynsteer_hook.toolsandbox.live.hook import RolloutHook

EXIT_USAGE = 2
BLUEPRINT_HELP = "blueprint JSON file, or the name of a ToolSandbox scenario for its shipped blueprint"


def configure_logging(verbose: bool) -> None:
    """structlog set up once for this process (``logs``), imported when a command runs, not for ``--help``."""
    from dynsteer_hook.logs import configure_logging as configure

    configure(verbose)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from dynsteer_hook.flags import otel_shutdown

    observers: list[RolloutHook] = []
    try:
        return _evaluate_command(args, observers)
    finally:
        otel_shutdown(observers)  # once the report files are written and the exit status known: telemetry never holds them


def _evaluate_command(args: argparse.Namespace, observers: list[RolloutHook]) -> int:
    """``dynsteer evaluate``; ``observers`` receives the telemetry observers it makes (the caller flushes them)."""
    from dynsteer_hook.files.blueprints import blueprint_argument, load_valid_blueprint
    from dynsteer_hook.files.events import check_events, read_numbered_events
    from dynsteer_hook.files.outputs import JsonlSink, StagedFiles, check_output_dir, create_dir, reason, temp_sibling
    from dynsteer_hook.flags import config_from_args, judges_from_args, otel_observers
    from dynsteer_hook.llm.judges import cache_sentence, judge_cache_stats
    from dynsteer_hook.model.records import IncompleteLog, with_files
    from dynsteer_hook.report.writer import AUDIT_LOG, REPORT_FILES, stage_report
    from dynsteer_hook.runtime.evaluator import Evaluator
    from dynsteer_hook.runtime.pairing import LineIndex

    # Every input is checked before any output is opened, so a bad file never touches an earlier run's files.
    bp_path = blueprint_argument(args.blueprint)
    bp = load_valid_blueprint(bp_path)
    settings, config = judges_from_args(args, config_from_args(args))
    judges = settings.build()
    check_events(args.events)
    observers += otel_observers(args, source="evaluate", theta_pass=config.theta_pass, inputs=(args.events, bp_path))
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
            report = _evaluate_events(evaluator, read_numbered_events(args.events), lines, bp.task or Path(args.events).stem,
                                      args.blueprint.name, observers)
        gap = IncompleteLog(file=AUDIT_LOG, from_record=sink.records, reason=sink.error) if sink.error else None
        report = with_files(report, incomplete_logs=(gap,) if gap else ())
        try:
            json_path, _ = stage_report(staged, report, out, bp)
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
    cache = judge_cache_stats(judges)
    if cache is not None:
        print(cache_sentence(cache))
    if gap is not None:
        raise OutputError(
            f"the audit log {out / AUDIT_LOG} misses every record from record {gap.from_record} on ({gap.reason}); "
            "the report says so; free some space and evaluate again"
        )
    return 0


def _evaluate_events(evaluator: Evaluator, events: Iterable[tuple[int, Event]], lines: LineIndex, task: str, blueprint: str,
                     observers: Sequence[RolloutHook]) -> Report:
    """The report of an event file's events, told to the observers as a live rollout tells them."""
    import time

    from dynsteer_hook.toolsandbox.live.hook import EventSeen, RolloutEnd, RolloutStart, finish_observed, judge_event

    start = time.perf_counter()
    for hook in observers:
        hook.on_rollout_start(RolloutStart(task, "", None, "", blueprint, False, 0))
    try:
        for lineno, event in events:
            lines.note(evaluator.k + 1, lineno)
            seen = EventSeen(task, evaluator.k + 1, 0, event)
            judge_event(evaluator, seen, observers)
    except Halt:
        pass
    report = finish_observed(evaluator, task, observers)
    for hook in observers:
        hook.on_rollout_end(RolloutEnd(task, time.perf_counter() - start, report=report))
    return report


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
    from dynsteer_hook.files.blueprints import blueprint_argument, load_blueprint
    from dynsteer_hook.model.contract import validate_blueprint

    path = blueprint_argument(args.blueprint)
    bp = load_blueprint(path)
    violations = validate_blueprint(bp, None, str(path))
    for v in violations:
        print(str(v))
    if violations:
        return 1
    print(f"{path}: valid ({len(bp.milestones)} milestones, {len(bp.edges)} edges, {len(bp.minefields)} minefields)")
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    from dynsteer_hook.files.blueprints import blueprint_argument, load_blueprint
    from dynsteer_hook.model.blueprint import explain_blueprint

    print(explain_blueprint(load_blueprint(blueprint_argument(args.blueprint))))
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    if args.which == "blueprint":
        from dynsteer_hook.model.blueprint import blueprint_json_schema

        schema = blueprint_json_schema()
    elif args.which == "events":
        from dynsteer_hook.model.events import event_record_schema

        schema = event_record_schema()
    else:
        from dynsteer_hook.model.records import Report

        schema = Report.model_json_schema()
    print(json.dumps(schema, indent=2))
    return 0


def _add_evaluate_flags(ev: argparse.ArgumentParser) -> None:
    from dynsteer_hook.flags import add_config_flags, add_judge_flags, add_otel_flags

    ev.add_argument("--blueprint", required=True, type=Path, help=BLUEPRINT_HELP)
    ev.add_argument("--events", required=True, type=Path, help="event file, one JSON record per line")
    ev.add_argument("--report", required=True, type=Path, help="directory for the audit log and reports")
    add_config_flags(ev)
    add_judge_flags(ev)
    add_otel_flags(ev)
    ev.set_defaults(func=_cmd_evaluate)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of every subcommand.

    Args:
        only: Add the flags of this subcommand alone: the others are declared with their help line, which is
            all the main help shows, so a command builds (and imports) only what it parses. None adds every
            subcommand's flags.
    """
    parser = argparse.ArgumentParser(prog="dynsteer", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("evaluate", help="evaluate a recorded event file (JSONL) against a blueprint")
    if only is None or only == "evaluate":
        _add_evaluate_flags(ev)

    va = sub.add_parser("validate", help="check a blueprint's contracts against its own tool catalog")
    va.add_argument("blueprint", type=Path, help=BLUEPRINT_HELP)
    va.set_defaults(func=_cmd_validate, logs=False)  # it logs nothing: no structlog to set up

    ex = sub.add_parser("explain", help="print every milestone of a blueprint with the evidence that put it there")
    ex.add_argument("blueprint", type=Path, help=BLUEPRINT_HELP)
    ex.set_defaults(func=_cmd_explain, logs=False)  # it logs nothing: no structlog to set up

    sc = sub.add_parser("schema", help="print a JSON Schema")
    sc.add_argument("which", choices=["blueprint", "events", "report"])
    sc.set_defaults(func=_cmd_schema, logs=False)  # it logs nothing: no structlog to set up

    try:
        from dynsteer_hook.toolsandbox.commands.register import add_commands
    except ImportError:  # pragma: no cover - the package ships the subpackage
        pass
    else:
        add_commands(sub, only)
    return parser


def _command_in(argv: Sequence[str]) -> str:
    """The subcommand ``argv`` names: its first word that is not an option ("" when there is none)."""
    return next((word for word in argv if not word.startswith("-")), "")


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


def _ignore_interrupts() -> None:
    """From here on a Ctrl-C (or SIGTERM, SIGHUP) changes nothing: the command has its exit status, and only the exit is left.

    Python raises ``KeyboardInterrupt`` wherever the signal lands; after ``main`` returned (in the console
    script's ``sys.exit``, or while the interpreter shuts down) nothing could catch it, and the process would
    end with a traceback, killed by SIGINT, whatever it wrote.
    """
    for signum in stop_signals.taken():
        with contextlib.suppress(ValueError):  # not the main thread, which alone receives signals: nothing to guard
            signal.signal(signum, _noted)


def _noted(signum: int, frame: FrameType | None) -> None:
    """A Ctrl-C that comes after the command's work is over: nothing is left to stop."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dynsteer`` console script (``argv`` None: the process's own command line).

    Ctrl-C at any point of a command, reading the command line included, ends it with one line on
    stderr and exit status 130; called as the process's entry point, SIGTERM and SIGHUP do the same,
    with exit status 143 and 129 (``stop_signals``), and a Ctrl-C after the command is over changes
    nothing (``_ignore_interrupts``).
    """
    program = argv is None
    stop_signals.forget()  # a command called again in the same process starts without the last one's signal
    if program:
        _one_polars_thread()
        stop_signals.take_all()
    try:
        code = _main(sys.argv[1:] if argv is None else argv)
        if program:
            _ignore_interrupts()
        return code
    except SystemExit:  # argparse's --help, or a bad flag: the command is over as well
        if program:
            _ignore_interrupts()
        raise
    except KeyboardInterrupt:
        if program:
            _ignore_interrupts()
        print(f"dynsteer: interrupted{stop_signals.by_whom()}; files written so far are kept", file=sys.stderr)
        return stop_signals.exit_status()


def _one_polars_thread() -> None:
    """Size polars' thread pool to one thread unless the user chose (``POLARS_MAX_THREADS``), before polars is imported.

    ToolSandbox keeps each scenario's state in small polars frames, where a pool of one thread per core only adds
    hand-offs (ToolSandbox's own evaluation of a 14-turn loop: 16 s of CPU on one thread, 19.5 s on two, no faster),
    and ``-p N`` workers would start N pools competing for the cores. Worker processes inherit the setting.
    """
    os.environ.setdefault("POLARS_MAX_THREADS", "1")


def _main(argv: Sequence[str]) -> int:
    words = list(argv)
    args = build_parser(_command_in(words)).parse_args(words)
    if getattr(args, "logs", True):
        configure_logging(args.verbose)
    real_stdout = sys.stdout
    sys.stdout = _Stdout(real_stdout)
    try:
        code: int = args.func(args)
        sys.stdout.flush()
    except DynsteerError as exc:
        print(f"dynsteer: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
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
