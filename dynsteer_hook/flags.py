"""Settings from the command line and the environment, read the same way for every command.

Each setting is declared once, where its value lives: the evaluator's thresholds and rates are
the number fields of ``EvaluatorConfig`` (``theta_fail`` is ``--theta-fail``, its help the
field's description; fields that are not numbers, such as ``initial_weights``, are set with
``--set KEY=VALUE``, a JSON value), and a model's settings and the judge ladder's are the
``option`` fields of ``ModelSettings`` and ``JudgeSettings``. Here those declarations become
flags, and flags become values: for a model and the judges a flag beats the environment
variable ``DYNSTEER_<PREFIX>_<FIELD>``, which beats the default.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import Field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynsteer_hook.llm.judges import JUDGE_MODEL, JudgeSettings
from dynsteer_hook.llm.settings import FIELDS, ModelSettings, env_name
from dynsteer_hook.model.errors import ConfigError, DynsteerError

if TYPE_CHECKING:
    from dynsteer_hook.model.config import EvaluatorConfig

_JUDGE_LADDER = ("samples", "passes", "cache")
"""The fields of ``JudgeSettings`` that are flags of their own (``model`` is the judges' model)."""


def _declared(cls: type[Any]) -> dict[str, Field[Any]]:
    return {f.name: f for f in fields(cls)}


def _help(f: Field[Any], prefix: str, default: Any) -> str:
    shown = f" (default {default})" if default is not None else ""
    return f"{f.metadata['help']}{shown}; env {env_name(prefix, f.name)}"


def _add_option(group: Any, f: Field[Any], prefix: str, default: Any, names: Sequence[str]) -> None:
    meta = f.metadata
    group.add_argument(*names, dest=f"{prefix}_{f.name}", default=None, type=meta["kind"], choices=meta["choices"],
                       metavar=meta["metavar"], help=_help(f, prefix, default))


# -- a model's settings ------------------------------------------------------------------


def add_model_flags(parser: argparse.ArgumentParser | Any, defaults: ModelSettings, *, title: str,
                    skip: Sequence[str] = (), aliases: Mapping[str, str] | None = None) -> None:
    """Add the flags of one model under ``defaults.prefix`` (``--<prefix>-model``, ``--<prefix>-api-base``...).

    Args:
        parser: The parser (or subparser) to extend.
        defaults: The role's defaults and its prefix; shown in the help.
        title: The heading of the flags' group in the help.
        skip: Fields that mean nothing for this role (no flag is added).
        aliases: Older flag names kept working, field -> flag (``{"model": "--model"}``).
    """
    group = parser.add_argument_group(title)
    declared = _declared(ModelSettings)
    for name in FIELDS:
        if name in skip:
            continue
        names = [defaults.flag(name)] + ([aliases[name]] if aliases and name in aliases else [])
        _add_option(group, declared[name], defaults.prefix, getattr(defaults, name), names)


def setting(args: argparse.Namespace, prefix: str, field: str, default: Any, environ: Mapping[str, str] | None = None,
            owner: type[Any] = ModelSettings) -> Any:
    """One setting: the flag when given, else ``DYNSTEER_<PREFIX>_<FIELD>`` when set, else ``default``.

    Args:
        args: The parsed flags.
        prefix: Whose setting it is (``judge``, ``agent``...).
        field: The field of ``owner``.
        default: The value when neither flag nor variable gives one.
        environ: The environment (default ``os.environ``).
        owner: The settings class that declares the field.

    Raises:
        ConfigError: The environment variable holds a value of the wrong kind (one sentence naming it).
    """
    value = getattr(args, f"{prefix}_{field}", None)
    if value is not None:
        return value
    env = os.environ if environ is None else environ
    raw = env.get(env_name(prefix, field))
    if raw is None or raw == "":
        return default
    kind = _declared(owner)[field].metadata["kind"]
    try:
        return kind(raw)
    except ValueError:
        raise ConfigError(f"{env_name(prefix, field)}={raw!r} is not {'a number' if kind in (int, float) else 'valid'}; "
                          f"fix or unset the variable, or pass --{prefix}-{field.replace('_', '-')}") from None


def model_from_args(args: argparse.Namespace, defaults: ModelSettings, environ: Mapping[str, str] | None = None) -> ModelSettings:
    """The settings the flags, then the environment, then ``defaults`` give (range-checked).

    Raises:
        ConfigError: A value is out of range or an environment variable is malformed (one sentence).
    """
    env = os.environ if environ is None else environ
    chosen = {f: setting(args, defaults.prefix, f, getattr(defaults, f), env) for f in FIELDS}
    origins = {f: defaults.flag(f) if getattr(args, f"{defaults.prefix}_{f}", None) is not None else env_name(defaults.prefix, f)
               for f in FIELDS if getattr(args, f"{defaults.prefix}_{f}", None) is not None or env.get(env_name(defaults.prefix, f))}
    settings = replace(defaults, **chosen)
    settings.check(origins)
    return settings


# -- the judges ------------------------------------------------------------------------


def add_judge_flags(p: argparse.ArgumentParser) -> None:
    """Options of the Tier 2/3 LLM judges (without --judge-model: Tier 1 rules only)."""
    add_model_flags(p, JUDGE_MODEL, title="LLM judges (tiers 2 and 3; without --judge-model: Tier 1 rules only)", skip=("tool_choice",))
    group = p.add_argument_group("judge ladder")
    declared, defaults = _declared(JudgeSettings), JudgeSettings()
    for name in _JUDGE_LADDER:
        _add_option(group, declared[name], "judge", getattr(defaults, name), [f"--judge-{name}"])


def judges_from_args(args: argparse.Namespace, config: EvaluatorConfig,
                     environ: Mapping[str, str] | None = None) -> tuple[JudgeSettings, EvaluatorConfig]:
    """Judge settings (flags, then ``DYNSTEER_JUDGE_*``, then defaults), and the config with ``max_tier``
    defaulting to 3 when a judge model is given."""
    defaults = JudgeSettings()
    ladder = {name: setting(args, "judge", name, getattr(defaults, name), environ, owner=JudgeSettings) for name in _JUDGE_LADDER}
    settings = JudgeSettings(model=model_from_args(args, JUDGE_MODEL, environ), samples=ladder["samples"], passes=ladder["passes"],
                             cache=ladder["cache"] or None)
    if settings.cache is not None and Path(settings.cache).exists() and not Path(settings.cache).is_dir():
        raise DynsteerError(f"--judge-cache {settings.cache} is a file; pass a folder for the stored judge answers (it is created if missing)")
    if settings.model.model and getattr(args, "max_tier", None) is None:
        config = config.with_overrides(max_tier=3)
    if config.max_tier > 1 and not settings.model.model:
        asked = f"--min-tier {config.min_tier}" if config.min_tier > 1 else f"--max-tier {config.max_tier}"
        raise DynsteerError(f"{asked} needs an LLM judge: pass --judge-model (and --judge-api-base for a local server)")
    if settings.samples < 1 or settings.passes < 1:
        raise DynsteerError(f"the tier 2 samples and tier 3 passes (--judge-samples, --judge-passes, or {env_name('judge', 'samples')}, "
                            f"{env_name('judge', 'passes')}) must be at least 1, not {settings.samples} and {settings.passes}")
    return settings, config


# -- the evaluator's thresholds and rates --------------------------------------------------------------


def threshold_fields() -> dict[str, type]:
    """The fields of ``EvaluatorConfig`` that are plain numbers, with their type (each is a flag)."""
    from dynsteer_hook.model.config import EvaluatorConfig

    kinds: dict[object, type] = {int: int, float: float}
    return {name: kinds[f.annotation] for name, f in EvaluatorConfig.model_fields.items() if f.annotation in kinds}


def add_config_flags(p: argparse.ArgumentParser) -> None:
    """Stop thresholds and rates as flags (defaults and meanings from ``EvaluatorConfig``)."""
    from dynsteer_hook.model.config import EvaluatorConfig

    g = p.add_argument_group("evaluator thresholds and rates (EvaluatorConfig)")
    for name, kind in threshold_fields().items():
        field = EvaluatorConfig.model_fields[name]
        g.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, default=None, metavar=kind.__name__.upper(),
                       help=f"{field.description} (default {field.default})")
    g.add_argument("--set", dest="config_set", action="append", default=[], metavar="KEY=VALUE",
                   help='any EvaluatorConfig field as a JSON value, e.g. --set initial_weights=\'{"safety": 2}\'')


def config_from_args(args: argparse.Namespace) -> EvaluatorConfig:
    """An ``EvaluatorConfig`` with the flags given on the command line (a ``--set`` of a field wins over its named flag)."""
    from dynsteer_hook.model.config import EvaluatorConfig

    overrides: dict[str, Any] = {k: getattr(args, k) for k in threshold_fields() if getattr(args, k, None) is not None}
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
    if "min_tier" in overrides and "max_tier" not in overrides and isinstance(overrides["min_tier"], int):
        overrides["max_tier"] = max(1, overrides["min_tier"])  # a forced tier needs the ladder to reach it (a judge model)
    return EvaluatorConfig().with_overrides(**overrides)


# -- OpenTelemetry export ------------------------------------------------------------------


def add_otel_flags(p: argparse.ArgumentParser) -> None:
    """``--otel [URL|FILE]`` and ``--otel-content``: each rollout exported as OpenTelemetry GenAI spans (the extra ``otel``)."""
    g = p.add_argument_group("OpenTelemetry export (pip install 'dynsteer-hook[otel]')")
    g.add_argument("--otel", nargs="?", const="", default=None, metavar="URL|FILE",
                   help="export each rollout as an invoke_agent span with an execute_tool span per call and a gen_ai.evaluation.result "
                        "event per judged stage: to an OTLP/HTTP collector (an http(s) URL, the base of /v1/traces and /v1/logs), or "
                        "appended to FILE as OTLP JSON lines; alone, to the endpoint OTEL_EXPORTER_OTLP_ENDPOINT (or "
                        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / _LOGS_ENDPOINT) names, else http://localhost:4318; service "
                        "OTEL_SERVICE_NAME (default dynsteer)")
    g.add_argument("--otel-content", action="store_true",
                   help="also record tool arguments and results on the spans (also OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)")


def otel_observers(args: argparse.Namespace, *, source: str, theta_pass: float, inputs: Iterable[Path | None] = ()) -> tuple[Any, ...]:
    """The observer that exports each rollout when ``--otel`` was given (checked: one sentence when it cannot), else none.

    ``inputs`` are the command's input files and folders: telemetry is never appended to one of them, nor written inside one.
    """
    value = getattr(args, "otel", None)
    if value is None:
        if getattr(args, "otel_content", False):
            raise DynsteerError("--otel-content is for --otel; add --otel URL|FILE (or --otel alone for the OTEL_* variables)")
        return ()
    from dynsteer_hook.otel.settings import otel_settings

    settings = otel_settings(value, content=args.otel_content)
    if settings.file is not None:
        from dynsteer_hook.files.outputs import check_apart, check_not_an_input

        given = [p for p in inputs if p is not None]
        check_apart(settings.file, given, "--otel", kind="file")
        check_not_an_input(settings.file, given, "--otel")  # a hard link, or a link inside an input folder, by identity
    from dynsteer_hook.otel.observer import OtelObserver

    return (OtelObserver(settings, source=source, theta_pass=theta_pass),)


def otel_shutdown(observers: Sequence[Any]) -> None:
    """Send what the observers left queued and stop their exporters (bounded; nothing when there are none)."""
    if observers:
        from dynsteer_hook.otel.export import shutdown_all

        shutdown_all()
