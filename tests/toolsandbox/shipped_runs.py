"""The shipped scripts played once per test session, whichever module or parallel worker asks first.

Several modules read the same rollouts (every shipped script with the scripted agent and user,
live with dynsteer or natively). The first to ask for one plays it under a file lock in a folder
that every pytest-xdist worker of the session shares; the others wait for the lock and read the
folder and the pickled results. Consumers treat a run as read only and copy it before changing it.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ts_support import SCRIPTS, script_names

from dynsteer_hook.toolsandbox.live.runner import RunOptions, run_scenarios

SHIPPED_SCRIPTS = ("clean_solver", "alternative_path", "looping_agent", "minefield_agent", "malformed_arguments")


@dataclass(frozen=True)
class Played:
    """One script played: the run folder (as ``run_scenarios`` wrote it) and each scenario's result by name."""

    folder: Path
    results: dict[str, dict[str, Any]]


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder of this test session that every pytest-xdist worker sees (the workers' temporary folders' parent)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class ShippedRuns:
    """``runs(script, evaluator)``: the script played with ``evaluator`` ("dynsteer" or "native"), played on first use."""

    def __init__(self, root: Path, scenarios: Callable[[], dict[str, Any]]) -> None:
        self.root = root
        self._scenarios = scenarios  # loaded only by the worker that plays
        self._memo: dict[tuple[str, str], Played] = {}

    def __call__(self, script: str, evaluator: str = "dynsteer") -> Played:
        key = (script, evaluator)
        if key not in self._memo:
            self._memo[key] = self._play_once(script, evaluator)
        return self._memo[key]

    def _play_once(self, script: str, evaluator: str) -> Played:
        folder = self.root / f"{script}_{evaluator}"
        done = self.root / f"{script}_{evaluator}.results.pickle"
        with _locked(self.root / f"{script}_{evaluator}.lock"):
            if not done.exists():
                if folder.exists():  # left half-played by a worker that failed
                    shutil.rmtree(folder)
                scenarios = self._scenarios()
                options = RunOptions(agent="Scripted", user="Scripted", evaluator=evaluator, script=SCRIPTS / f"{script}.json")
                results = run_scenarios({n: scenarios[n] for n in script_names(script)}, options, folder, 1)
                partial = done.with_suffix(".partial")
                partial.write_bytes(pickle.dumps({r["name"]: r for r in results}))
                partial.replace(done)
        return Played(folder, pickle.loads(done.read_bytes()))
