"""Playing generated scripts in ToolSandbox, and keeping the clean solvers it scores 1.0.

A script is generated right before it is played (``play_fresh``): some scripts pass on a
predicted ``get_current_timestamp`` result, which ToolSandbox checks to within a second. On a
busy machine a play can start later than predicted, so ``play_fresh`` holds ToolSandbox's
clock to the predicted values while the script plays (``predicted_clock``): the tool returns
the moment the script was written for, whatever the machine's load, and nothing else changes.
Scripts are played one scenario at a time in this process, with the package's ``Scripted``
roles, natively (``evaluator="native"``) or with dynsteer live in the loop.
"""

from __future__ import annotations

import datetime
import json
import tempfile
import time
import types
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from dynsteer_hook.toolsandbox.live.runner import RunOptions, load_scenarios, run_scenario
from dynsteer_hook.toolsandbox.quality.reference import base_scenario_name

import tool_sandbox.tools.utilities as sandbox_utilities
from tool_sandbox.common.execution_context import ScenarioCategories
from tool_sandbox.common.scenario import Scenario

from .faults import fresh_variant
from .model import FAULT_KINDS, KnownScript, Skip
from .solver import clean_solver
from .world import needs_network

NATIVE = RunOptions(agent="Scripted", user="Scripted", evaluator="native")

# Category columns of the coverage table (augmented variants are counted under their augmentation).
TASK_CATEGORIES = (
    ScenarioCategories.SINGLE_TOOL_CALL, ScenarioCategories.MULTIPLE_TOOL_CALL, ScenarioCategories.STATE_DEPENDENCY,
    ScenarioCategories.MULTIPLE_USER_TURN, ScenarioCategories.INSUFFICIENT_INFORMATION, ScenarioCategories.CANONICALIZATION,
)
SCRAMBLED = (
    ScenarioCategories.TOOL_NAME_SCRAMBLED, ScenarioCategories.TOOL_DESCRIPTION_SCRAMBLED,
    ScenarioCategories.ARG_DESCRIPTION_SCRAMBLED, ScenarioCategories.ARG_TYPE_SCRAMBLED,
)
AUGMENTATIONS = (
    ScenarioCategories.NO_DISTRACTION_TOOLS, ScenarioCategories.THREE_DISTRACTION_TOOLS, ScenarioCategories.TEN_DISTRACTION_TOOLS,
    ScenarioCategories.ALL_TOOLS_AVAILABLE, *SCRAMBLED,
)
NETWORK = "needs the RapidAPI search tools, which fail offline"


def write_script(path: Path, scripts: Iterable[KnownScript]) -> Path:
    """Write scripts as one Scripted-role script file."""
    path.write_text(json.dumps({s.scenario: s.to_json() for s in scripts}, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def play(script: KnownScript, scenario: Scenario, output_directory: Path, options: RunOptions = NATIVE) -> dict[str, Any]:
    """Play one script now; ToolSandbox's per-scenario result (plus ``dynsteer`` when evaluated live)."""
    output_directory.mkdir(parents=True, exist_ok=True)
    path = write_script(output_directory / f"{script.scenario}.script.json", [script])
    return run_scenario((script.scenario, scenario), options=replace(options, script=path), output_directory=output_directory)


Made = TypeVar("Made")


@contextmanager
def predicted_clock(values: Sequence[float]) -> Iterator[None]:
    """ToolSandbox's ``get_current_timestamp`` returns ``values`` in order, then the wall clock again."""
    pending = list(values)
    real = datetime.datetime

    class _Held(real):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> datetime.datetime:  # type: ignore[override]
            return real.fromtimestamp(pending.pop(0), tz) if pending else real.now(tz)

    module = types.SimpleNamespace(**{k: getattr(datetime, k) for k in dir(datetime) if not k.startswith("__")})
    module.datetime = _Held
    saved = sandbox_utilities.datetime
    sandbox_utilities.datetime = module  # type: ignore[assignment]
    try:
        yield
    finally:
        sandbox_utilities.datetime = saved


def _script(made: object) -> object:
    """The script a clean solver, a variant or a later-turn variant plays."""
    return made if isinstance(made, KnownScript) else getattr(made, "script", made)


def _clock_sensitive(made: object) -> bool:
    script = _script(made)
    return isinstance(script, KnownScript) and bool(script.clock)


def play_fresh(make: Callable[[float], Made], scenario: Scenario, output_directory: Path,
               options: RunOptions = NATIVE) -> tuple[Made, dict[str, Any] | None]:
    """Generate a script or variant at this moment and play it at once (``None`` result for a ``Skip``).

    A script that predicts the clock is generated twice: the second time for the moment the
    generation ends, as long as the first one took (a variant takes up to half a second); while
    it plays, ToolSandbox's clock gives the predicted values (``predicted_clock``).
    """
    start = time.time()
    made = make(start)
    if _clock_sensitive(made):
        spent = time.time() - start
        made = make(time.time() + spent)
    script = _script(made)
    if not isinstance(script, KnownScript):
        return made, None
    with predicted_clock(script.clock):
        return made, play(script, scenario, output_directory, options)


def scores_one(result: dict[str, Any]) -> bool:
    """Whether ToolSandbox scored a rollout 1.0 without a crash."""
    return result["exception_type"] is None and result["similarity"] == 1.0


@dataclass
class Coverage:
    """Verified clean solvers over a set of scenarios, and why the others have none."""

    verified: dict[str, KnownScript] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # name -> reason
    offline: list[str] = field(default_factory=list)
    network: list[str] = field(default_factory=list)  # left out: their base needs the RapidAPI tools
    categories: dict[str, list[str]] = field(default_factory=dict)  # name -> category names

    def table(self) -> list[tuple[str, int, int]]:
        """(category, offline scenarios, verified) rows, then an ALL row."""
        totals: Counter[str] = Counter()
        ok: Counter[str] = Counter()
        for name in self.offline:
            cats = set(self.categories[name])
            for cat in cats:
                if cat == ScenarioCategories.THREE_DISTRACTION_TOOLS and cats & {str(a) for a in SCRAMBLED}:
                    continue  # an augmented variant counts under its augmentation, as in ToolSandbox's summary
                totals[cat] += 1
                ok[cat] += name in self.verified
        rows = [(str(c), totals[str(c)], ok[str(c)]) for c in (*TASK_CATEGORIES, *AUGMENTATIONS) if totals[str(c)]]
        return [*rows, ("ALL", len(self.offline), sum(n in self.verified for n in self.offline))]

    def reasons(self) -> dict[str, list[str]]:
        """Skipped offline scenarios grouped by reason."""
        out: dict[str, list[str]] = defaultdict(list)
        for name in self.offline:
            if name in self.skipped:
                out[self.skipped[name]].append(name)
        return dict(out)


def verify_clean(scenarios: dict[str, Scenario], output_directory: Path | None = None) -> Coverage:
    """Generate and play the clean solver of every scenario; keep those ToolSandbox scores 1.0."""
    cov = Coverage()
    with tempfile.TemporaryDirectory() as tmp:
        out = output_directory or Path(tmp)
        for name, scenario in scenarios.items():
            cov.categories[name] = [str(c) for c in scenario.categories]
            base = base_scenario_name(name)
            if needs_network(scenarios.get(base) or load_scenarios([base])[base]):
                cov.skipped[name] = NETWORK
                cov.network.append(name)
                continue
            cov.offline.append(name)
            script, result = play_fresh(partial(clean_solver, name, scenario), scenario, out)
            if isinstance(script, Skip) or result is None:
                cov.skipped[name] = script.reason if isinstance(script, Skip) else "not played"
            elif not scores_one(result):
                why = result["exception_type"] or f"similarity {result['similarity']:.3f} (milestones {result['milestone_mapping']})"
                cov.skipped[name] = f"ToolSandbox does not score the generated solver 1.0: {why}"
            else:
                cov.verified[name] = script
    return cov


@dataclass
class VariantOutcomes:
    """ToolSandbox's scores of the fault-injected variants of verified clean solvers."""

    played: dict[str, dict[str, dict[str, float]]] = field(default_factory=lambda: defaultdict(dict))  # kind -> name -> scores
    skipped: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))  # kind -> name -> reason

    def table(self) -> list[tuple[str, int, int, float, int]]:
        """(kind, variants played, scored 1.0, mean similarity, minefield registered) per kind."""
        rows = []
        for kind in FAULT_KINDS:
            scores = list(self.played.get(kind, {}).values())
            mean = sum(s["similarity"] for s in scores) / len(scores) if scores else 0.0
            rows.append((kind, len(scores), sum(s["similarity"] == 1.0 for s in scores), mean, sum(s["minefield"] > 0 for s in scores)))
        return rows


def verify_variants(cov: Coverage, scenarios: dict[str, Scenario], output_directory: Path | None = None) -> VariantOutcomes:
    """Play every variant of every verified clean solver natively, each generated just before it plays."""
    outcomes = VariantOutcomes()
    with tempfile.TemporaryDirectory() as tmp:
        out = output_directory or Path(tmp)
        for kind in FAULT_KINDS:
            for name in cov.verified:
                scenario = scenarios[name]
                made, result = play_fresh(partial(fresh_variant, kind, name, scenario), scenario, out / kind)
                if isinstance(made, Skip) or result is None:
                    outcomes.skipped[kind][name] = made.reason if isinstance(made, Skip) else "not played"
                    continue
                crashed = result["exception_type"] is not None
                outcomes.played[kind][name] = {"similarity": 0.0 if crashed else float(result["similarity"]),
                                               "minefield": float(result["minefield_similarity"]), "crashed": float(crashed)}
    return outcomes
