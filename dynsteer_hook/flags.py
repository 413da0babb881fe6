"""The evaluator's thresholds and rates as command-line flags, and the ``EvaluatorConfig`` they make.

The flags are derived from the fields of ``EvaluatorConfig``: every number field is a flag
(``theta_fail`` is ``--theta-fail``) whose help is the field's description and default, so a
field added there is a flag here; fields that are not numbers (``initial_weights``) are set with
``--set KEY=VALUE`` (a JSON value).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.errors import DynsteerError


def threshold_fields() -> dict[str, type]:
    """The fields of ``EvaluatorConfig`` that are plain numbers, with their type (each is a flag)."""
    return {name: f.annotation for name, f in EvaluatorConfig.model_fields.items() if f.annotation in (int, float)}


def add_config_flags(p: argparse.ArgumentParser) -> None:
    """Stop thresholds and rates as flags (defaults and meanings from ``EvaluatorConfig``)."""
    g = p.add_argument_group("evaluator thresholds and rates (EvaluatorConfig)")
    for name, kind in threshold_fields().items():
        field = EvaluatorConfig.model_fields[name]
        g.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, default=None, metavar=kind.__name__.upper(),
                       help=f"{field.description} (default {field.default})")
    g.add_argument("--set", dest="config_set", action="append", default=[], metavar="KEY=VALUE",
                   help='any EvaluatorConfig field as a JSON value, e.g. --set initial_weights=\'{"safety": 2}\'')


def config_from_args(args: argparse.Namespace) -> EvaluatorConfig:
    """An ``EvaluatorConfig`` with the flags given on the command line (a ``--set`` of a field wins over its named flag)."""
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
