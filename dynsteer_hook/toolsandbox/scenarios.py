"""ToolSandbox's named scenarios, built once per process and seeded as its CLI seeds them.

Building all 1,032 scenarios takes a process about 4.5 s (after 2 s of imports), and every
``dynsteer run`` and each of its ``-p N`` workers would pay it. So the built scenarios, with the
random state ToolSandbox's CLI has after building them, are kept pickled for a short while in the
user's cache folder (``$XDG_CACHE_HOME/dynsteer-hook/scenarios``, private to the user, see
``files/cache.py``) under a key made of the Python version, the tool backend and the size and time of
every file of the installed ``tool_sandbox`` package; reading them back takes about 1 s. The
scenarios' databases hold times counted from when they were built (messages of "yesterday",
reminders "in an hour"), so an entry serves for ``FRESH_FOR`` seconds only: less than the hours
between building the scenarios and playing the last of them in one of ToolSandbox's own full runs.
A missing, stale, foreign or broken entry only means building them again; a cache that cannot be
written only means building them next time too.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dynsteer_hook.files.cache import owned_privately, private_folder
from dynsteer_hook.model.errors import ScenarioError
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.scenario import Scenario

# The scenarios ToolSandbox plays with --test_mode.
TEST_SCENARIO_NAMES = [
    "send_message_with_contact_content_cellular_off_multiple_user_turn",
    "send_message_with_contact_content_cellular_off_multiple_user_turn_10_distraction_tools",
    "send_message_with_contact_content_cellular_off_3_distraction_tools_arg_description_scrambled",
]
CACHE_NAME = "scenarios"
FRESH_FOR = 15 * 60  # seconds an entry serves after it was written

Built = tuple[dict[str, Scenario], Any]  # the scenarios, and the random state after building them
_LOADED: dict[str, Built] = {}


def _key(preferred_tool_backend: str) -> str:
    """What the built scenarios depend on: Python, the backend, and every file of the installed ``tool_sandbox``."""
    import tool_sandbox

    root = Path(tool_sandbox.__file__).parent
    digest = hashlib.sha256(f"{sys.version}\n{pickle.HIGHEST_PROTOCOL}\n{preferred_tool_backend}\n{root}\n".encode())
    for path in sorted(root.rglob("*.py")):
        info = path.stat()
        digest.update(f"{path.relative_to(root)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def _entry(preferred_tool_backend: str) -> Path | None:
    """The cache file of these scenarios, or ``None`` when no cache may be used."""
    folder = private_folder(CACHE_NAME)
    try:
        return None if folder is None else folder / f"{_key(preferred_tool_backend)}.pickle"
    except OSError:  # a file of the package vanished under us: no key to trust
        return None


def _read(entry: Path) -> Built | None:
    """The kept scenarios, when the entry is a private file of this user that unpickles to them."""
    try:
        with entry.open("rb") as handle:
            info = os.fstat(handle.fileno())
            if not owned_privately(info) or not 0 <= time.time() - info.st_mtime <= FRESH_FOR:
                return None
            kept = pickle.load(handle)  # a file only this user can have written, see the module's text
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # missing, unreadable, torn, garbled (a panic in polars' Rust is no Exception): build them again
        return None
    if not (isinstance(kept, tuple) and len(kept) == 2 and isinstance(kept[0], dict)
            and all(isinstance(s, Scenario) for s in kept[0].values())):
        return None
    try:
        random.Random().setstate(kept[1])  # a state random.setstate takes, tried on a generator of its own
    except (TypeError, ValueError):
        return None
    return kept[0], kept[1]


def _keep(entry: Path, built: Built) -> None:
    """Write the entry whole (a temporary file renamed) and drop the entries of other keys; faults only lose the entry."""
    with contextlib.suppress(Exception):
        # mkstemp makes the file 0600, as a private entry must be (files/outputs.py's writers follow the umask)
        handle, name = tempfile.mkstemp(dir=entry.parent, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                pickle.dump(built, out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(name, entry)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name)
        for other in entry.parent.glob("*.pickle"):
            if other != entry:
                with contextlib.suppress(OSError):
                    other.unlink()


def _build(preferred_tool_backend: str) -> Built:
    from tool_sandbox.scenarios import named_scenarios

    random.seed(42)
    everything = named_scenarios(preferred_tool_backend=preferred_tool_backend)
    return everything, random.getstate()


def _built(preferred_tool_backend: str) -> Built:
    """The scenarios and random state, from this process, the cache, or built (and then kept)."""
    if preferred_tool_backend not in _LOADED:
        entry = _entry(preferred_tool_backend)
        kept = None if entry is None else _read(entry)
        if kept is None:
            kept = _build(preferred_tool_backend)
            if entry is not None:
                _keep(entry, kept)
        _LOADED[preferred_tool_backend] = kept
    return _LOADED[preferred_tool_backend]


def load_scenarios(names: list[str] | None, preferred_tool_backend: str = "DEFAULT") -> dict[str, Scenario]:
    """ToolSandbox's named scenarios (seeded as its CLI does), optionally filtered by name.

    Built once per process and backend (or read back from the cache); later calls restore the random
    state ToolSandbox's CLI would have after building them, so the run order matches its own.
    """
    everything, state = _built(preferred_tool_backend)
    random.setstate(state)
    if names is None:
        return dict(everything)
    unknown = sorted(set(names) - set(everything))
    if unknown:
        raise ScenarioError(f"unknown scenario name(s) {unknown[:5]}; list them with 'dynsteer scenarios'")
    return {n: everything[n] for n in names}
