"""ToolSandbox's own summaries of a run: the counts its CLI prints before a run, its per-category means, and
``result_summary.json``.

A result carrying ``interrupted`` (Ctrl-C) is not a ToolSandbox result: it stays out of
``per_scenario_results`` and of the category means, and the summary lists it under ``interrupted``
(see ``dynsteer_hook.report.run_summary``, which also makes ``dynsteer_summary.json``).
"""

from __future__ import annotations

import ast
import functools
import importlib.resources
import subprocess
import types
from collections import Counter
from collections.abc import Iterable
from typing import Any

from dynsteer_hook.report.run_summary import IN_FLIGHT, interruption
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.execution_context import ExecutionContext, new_context
from tool_sandbox.common.scenario import Scenario

_SUMMARY_FUNCTIONS = ("get_category_summary", "get_category_to_scenario_count", "get_necessary_tool_name_to_scenario_count")


@functools.cache
def toolsandbox_summaries() -> types.SimpleNamespace:
    """ToolSandbox's own summary functions from ``tool_sandbox.cli.utils``: scenarios per category and per
    necessary tool (as its CLI prints them before a run) and the per-category results.

    That module imports the agent of every provider ToolSandbox supports (their SDKs: anthropic,
    vertexai, transformers, ...), which a run with other agents does not need. When one of them is
    missing, the three functions are taken from the module's source with the imports they use
    (the standard library and ``tool_sandbox.common``), so the counts and means stay ToolSandbox's.
    """
    try:
        import tool_sandbox.cli.utils as utils

        return types.SimpleNamespace(**{name: getattr(utils, name) for name in _SUMMARY_FUNCTIONS})
    except ImportError:
        pass
    path = importlib.resources.files("tool_sandbox") / "cli" / "utils.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    body: list[ast.stmt] = []
    for node in tree.body:
        if (isinstance(node, ast.ImportFrom) and node.module and (
            node.module in ("collections", "typing") or node.module.startswith("tool_sandbox.common.")
        )) or (isinstance(node, ast.FunctionDef) and node.name in _SUMMARY_FUNCTIONS):
            body.append(node)
    namespace: dict[str, Any] = {"__name__": "tool_sandbox.cli.utils"}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)
    return types.SimpleNamespace(**{name: namespace[name] for name in _SUMMARY_FUNCTIONS})


def scenario_counts(name_to_scenario: dict[str, Scenario]) -> tuple[Counter[str], Counter[str]]:
    """Scenarios per category and per necessary tool, counted by ToolSandbox's own functions (see
    ``toolsandbox_summaries``), with plain string keys."""
    ts = toolsandbox_summaries()
    categories = ts.get_category_to_scenario_count(name_to_scenario)
    # The tool list starts from the current execution context's tools: a fresh one, as ToolSandbox's CLI has
    # before its first rollout, whatever this process played before.
    with new_context(ExecutionContext()):
        tools = ts.get_necessary_tool_name_to_scenario_count(name_to_scenario)
    return Counter({str(k): v for k, v in categories.items()}), Counter({str(k): v for k, v in tools.items()})


def category_summary(results: Iterable[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Mean similarity and turn count per scenario category and over all of them, as ToolSandbox's
    ``result_summary.json`` has them (augmented variants are not counted again under THREE_DISTRACTION_TOOLS).

    A similarity (or turn count) that is unknown (null: ToolSandbox did not compute it) is left out of its mean,
    never counted as 0; a mean of nothing known is null."""
    grouped = toolsandbox_summaries().get_category_summary(list(results))
    return {str(cat): {k: _mean([x for x in v if isinstance(x, (int, float))]) for k, v in vals.items()} for cat, vals in grouped.items()}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _git_sha() -> str | None:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--exit-code", "--quiet"], capture_output=True).returncode == 1
    except (OSError, subprocess.CalledProcessError):
        return None
    return sha + (" + local changes" if dirty else "")


def result_summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """ToolSandbox's ``result_summary.json`` over the finished scenarios, plus the interruption if any (scenarios the run's
    budget kept from starting are in neither: ``dynsteer_summary.json`` lists them)."""
    finished = [r for r in results if not r.get("interrupted") and not r.get("not_started")]
    summary: dict[str, Any] = {
        "per_scenario_results": finished,
        "category_aggregated_results": category_summary(finished),
        "git_sha": _git_sha(),
    }
    stopped = interruption(results)
    if stopped is not None:
        summary["interrupted"] = stopped | {"in_flight_results": [r for r in results if r.get("interrupted") == IN_FLIGHT]}
    return summary
