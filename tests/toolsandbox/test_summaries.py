"""The counts printed before a run and the per-category means of ``result_summary.json`` are
ToolSandbox's own: compared with what ``tool_sandbox.cli.utils`` itself computes on real scenarios.

That module imports every provider's agent; the SDKs this machine lacks are replaced by empty
placeholder modules in a separate interpreter, so the real module loads there unchanged.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from dynsteer_hook.toolsandbox.live.summaries import category_summary, result_summary, scenario_counts
from dynsteer_hook.toolsandbox.scenarios import load_scenarios

from tool_sandbox.common.execution_context import new_context

REPO = Path(__file__).resolve().parents[2]

_TOOLSANDBOX_SIDE = textwrap.dedent('''
    import importlib.abc, importlib.machinery, json, random, sys, types

    class _Meta(type):
        def __getattr__(cls, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Meta(name, (), {})
        def __getitem__(cls, item):
            return cls
        def __or__(cls, other):
            return cls
        __ror__ = __or__

    class _Placeholder(types.ModuleType):
        __path__: list = []
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Meta(name, (), {"__init__": lambda self, *a, **k: None})

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        missing: set = set()
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in self.missing:
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
        def create_module(self, spec):
            return _Placeholder(spec.name)
        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, _Finder())
    for _ in range(30):
        try:
            import tool_sandbox.cli.utils as utils
            break
        except ModuleNotFoundError as exc:
            _Finder.missing.add(exc.name.split(".")[0])
            for key in [k for k in sys.modules if k.startswith(("tool_sandbox.roles", "tool_sandbox.cli"))]:
                del sys.modules[key]
    from tool_sandbox.scenarios import named_scenarios

    random.seed(42)
    scenarios = named_scenarios(preferred_tool_backend="DEFAULT")
    answers = []
    for given in json.load(sys.stdin):
        names, results = given["names"], given["results"]
        chosen = {n: scenarios[n] for n in names} if names else scenarios
        grouped = utils.get_category_summary(results)
        answers.append({
            "categories": {str(k): v for k, v in utils.get_category_to_scenario_count(chosen).items()},
            "tools": {str(k): v for k, v in utils.get_necessary_tool_name_to_scenario_count(chosen).items()},
            "means": {str(c): {k: sum(v) / len(v) for k, v in vals.items()} for c, vals in grouped.items()},
        })
    print(json.dumps(answers))
''')


SELECTIONS = ["all", "cellular"]


def _selection(selection: str) -> tuple[list[str] | None, dict[str, Any], list[dict[str, Any]]]:
    """The names asked for (None: every scenario), the scenarios chosen, and made-up results spread over their categories."""
    everything = load_scenarios(None)
    names = None if selection == "all" else sorted(n for n in everything if "cellular_off" in n)[:40]
    chosen = everything if names is None else {n: everything[n] for n in names}
    results = [{"name": n, "categories": [str(c) for c in s.categories], "similarity": (i % 7) / 6, "turn_count": 3 + i % 5}
               for i, (n, s) in enumerate(sorted(chosen.items()))]
    return names, chosen, results


@pytest.fixture(scope="module")
def toolsandbox_own() -> dict[str, dict[str, Any]]:
    """What ``tool_sandbox.cli.utils`` computes for each selection, in one separate interpreter (it builds the scenarios itself)."""
    asked = [_selection(selection) for selection in SELECTIONS]
    done = subprocess.run([sys.executable, "-c", _TOOLSANDBOX_SIDE], input=json.dumps([{"names": n, "results": r} for n, _, r in asked]),
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(zip(SELECTIONS, json.loads(done.stdout.strip().splitlines()[-1]), strict=True))


@pytest.mark.parametrize("selection", SELECTIONS)
def test_counts_and_category_means_equal_toolsandbox_own(selection: str, toolsandbox_own: dict[str, dict[str, Any]]) -> None:
    """Per-category and per-tool counts (every scenario, and a selection with scrambled variants) and the
    per-category means of results spread over real scenarios' categories are ToolSandbox's values."""
    names, chosen, results = _selection(selection)
    theirs = toolsandbox_own[selection]
    # As in a process that played a scenario before: the current execution context is that scenario's.
    played = chosen[sorted(chosen)[0]]
    with new_context(played.starting_context):
        categories, tools = scenario_counts(chosen)
    assert dict(categories) == theirs["categories"]
    assert dict(tools) == theirs["tools"]
    assert category_summary(results) == theirs["means"]
    assert result_summary(results)["category_aggregated_results"] == theirs["means"]
    if names is not None:  # the selection holds scrambled variants, which THREE_DISTRACTION_TOOLS does not count again
        scrambled = sum(1 for s in chosen.values() if {str(c) for c in s.categories} & {"TOOL_NAME_SCRAMBLED", "ARG_NAME_SCRAMBLED",
                        "ARG_TYPE_SCRAMBLED", "ARG_DESCRIPTION_SCRAMBLED", "TOOL_DESCRIPTION_SCRAMBLED"})
        assert scrambled > 0
        assert categories.get("THREE_DISTRACTION_TOOLS", 0) < sum(
            1 for s in chosen.values() if "THREE_DISTRACTION_TOOLS" in {str(c) for c in s.categories})
