"""The evaluator's thresholds and rates as command-line flags, and the ``EvaluatorConfig`` they make."""

from __future__ import annotations

import argparse
import json
from typing import Any

from dynsteer_hook.config import EvaluatorConfig
from dynsteer_hook.errors import DynsteerError

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
