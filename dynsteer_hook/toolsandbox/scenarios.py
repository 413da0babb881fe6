"""ToolSandbox's named scenarios, built once per process and seeded as its CLI seeds them.

Building all 1,032 scenarios takes a process about 4.5 s (after 2 s of imports), and every
``dynsteer run`` and each of its ``-p N`` workers would pay it. So the built scenarios, with the
random state ToolSandbox's CLI has after building them, are kept pickled for a short while in the
user's cache folder (``$XDG_CACHE_HOME/dynsteer-hook/scenarios``, private to the user, see
``files/cache.py``) under a key made of the Python version, the tool backend and the size and time of
every file of the installed ``tool_sandbox`` package. Each scenario is pickled on its own behind an
index, so a process reads back only the scenarios it asks for (a run of one scenario: a few
milliseconds; all of them: about 1 s). The scenarios' databases hold times counted from when they
were built (messages of "yesterday", reminders "in an hour"), so an entry serves for ``FRESH_FOR``
seconds only: less than the hours between building the scenarios and playing the last of them in one
of ToolSandbox's own full runs. Processes that miss the entry at once wait for the first to build and
keep it (a lock file beside the entries) instead of building it side by side. A missing, stale,
foreign or broken entry (or scenario in it) only means building them again; a cache that cannot be
written only means building them next time too.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import random
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynsteer_hook.files.cache import owned_privately, private_folder, read_entry
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
MAX_ENTRY_BYTES = 2**30
"""Largest entry read back (every scenario pickled is about 40 MB): anything larger is no entry this code wrote."""
BUILD_WAIT = 120.0  # seconds a process waits for another to build the scenarios before it builds them too

MAGIC = b"dynsteer-scenarios-2\n"
_LENGTH = struct.Struct(">Q")


class _BrokenEntryError(Exception):
    """A scenario of a kept entry does not read back."""


class Built:
    """The scenarios of one backend in this process, in ToolSandbox's order, and the random state after building them.

    Scenarios built here are all at hand; those of a kept entry are unpickled when first asked for.
    """

    def __init__(self, names: list[str], state: Any, scenarios: dict[str, Scenario], blobs: dict[str, memoryview] | None = None) -> None:
        self.names = names
        self.state = state
        self._scenarios = scenarios
        self._blobs = blobs or {}

    def get(self, name: str) -> Scenario:
        """The scenario ``name`` (one of ``names``).

        Raises:
            _BrokenEntryError: It is kept but does not unpickle to a scenario.
        """
        if name not in self._scenarios:
            try:
                scenario = pickle.loads(self._blobs[name])  # from a file only this user can have written
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException:  # garbled (a panic in polars' Rust is no Exception)
                raise _BrokenEntryError(name) from None
            if not isinstance(scenario, Scenario):
                raise _BrokenEntryError(name)
            self._scenarios[name] = scenario
            del self._blobs[name]  # the entry's bytes go once every scenario is read
        return self._scenarios[name]


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
    """The kept scenarios (each unpickled when asked for), when the entry is a private, fresh and whole file of this user.

    The entry is ``MAGIC``, the length of the index, the index (the names, the length of each one's
    pickle, the random state) and the scenarios' pickles one after the other.
    """
    try:
        raw, info = read_entry(entry, MAX_ENTRY_BYTES)  # a pipe or a link in the entry's place is a miss, never a wait
        if not owned_privately(info) or not 0 <= time.time() - info.st_mtime <= FRESH_FOR:
            return None
        data = memoryview(raw)
        start = len(MAGIC) + _LENGTH.size
        if bytes(data[:len(MAGIC)]) != MAGIC:
            return None
        (length,) = _LENGTH.unpack(data[len(MAGIC):start])
        names, sizes, state = pickle.loads(data[start:start + length])  # a file only this user can have written
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # missing, unreadable, torn, garbled: build them again
        return None
    if not (isinstance(names, list) and isinstance(sizes, list) and len(names) == len(sizes) == len(set(names))
            and all(isinstance(n, str) for n in names) and all(type(s) is int and s > 0 for s in sizes)
            and start + length + sum(sizes) == len(data)):  # a torn file is shorter
        return None
    try:
        random.Random().setstate(state)  # a state random.setstate takes, tried on a generator of its own
    except (TypeError, ValueError):
        return None
    blobs, at = {}, start + length
    for name, size in zip(names, sizes, strict=True):
        blobs[name] = data[at:at + size]
        at += size
    return Built(names, state, {}, blobs)


def _keep(entry: Path, built: Built) -> None:
    """Write the entry whole (a temporary file renamed) and drop the entries of other keys; faults only lose the entry."""
    with contextlib.suppress(Exception):
        blobs = [pickle.dumps(built.get(n), protocol=pickle.HIGHEST_PROTOCOL) for n in built.names]
        index = pickle.dumps((built.names, [len(b) for b in blobs], built.state), protocol=pickle.HIGHEST_PROTOCOL)
        # mkstemp makes the file 0600, as a private entry must be (files/outputs.py's writers follow the umask)
        handle, name = tempfile.mkstemp(dir=entry.parent, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(MAGIC + _LENGTH.pack(len(index)) + index)
                for blob in blobs:
                    out.write(blob)
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
    return Built(list(everything), random.getstate(), dict(everything))


@contextlib.contextmanager
def _building(entry: Path) -> Iterator[None]:
    """Hold the lock of the cache folder while building, waiting up to ``BUILD_WAIT`` for a process that holds it."""
    try:
        import fcntl
        handle = os.open(entry.parent / ".build.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except (ImportError, OSError):  # no locks here: build side by side
        yield
        return
    try:
        deadline = time.monotonic() + BUILD_WAIT
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break  # whoever holds it is stuck: build without it
                time.sleep(0.05)
            except OSError:
                break
        yield
    finally:
        os.close(handle)  # releases the lock


def _travelling() -> bool:
    """Whether this process's clock is moved (``dynsteer rerun`` plays a recording on its own time): scenarios built
    then are dated on that clock and must neither come from nor go to the cache, which is dated on the real one."""
    try:
        from time_machine import escape_hatch
    except ImportError:
        return False
    return bool(escape_hatch.is_travelling())


def _built(preferred_tool_backend: str, *, again: bool = False) -> Built:
    """The scenarios and random state, from this process, the cache, or built (and then kept)."""
    if _travelling():
        return _build(preferred_tool_backend)
    if again or preferred_tool_backend not in _LOADED:
        entry = _entry(preferred_tool_backend)
        kept = None if entry is None or again else _read(entry)
        if kept is None and entry is not None:
            with _building(entry):
                kept = None if again else _read(entry)  # another process may have kept them meanwhile
                if kept is None:
                    kept = _build(preferred_tool_backend)
                    _keep(entry, kept)
        _LOADED[preferred_tool_backend] = kept if kept is not None else _build(preferred_tool_backend)
    return _LOADED[preferred_tool_backend]


def load_scenarios(names: list[str] | None, preferred_tool_backend: str = "DEFAULT") -> dict[str, Scenario]:
    """ToolSandbox's named scenarios (seeded as its CLI does), optionally filtered by name.

    Built once per process and backend (or read back from the cache); later calls restore the random
    state ToolSandbox's CLI would have after building them, so the run order matches its own.
    """
    built = _built(preferred_tool_backend)
    wanted = built.names if names is None else names
    unknown = sorted(set(wanted) - set(built.names))
    if unknown:
        raise ScenarioError(f"unknown scenario name(s) {unknown[:5]}; list them with 'dynsteer scenarios'")
    try:
        chosen = {n: built.get(n) for n in wanted}
    except _BrokenEntryError:  # a kept scenario does not read back: build them all again
        built = _built(preferred_tool_backend, again=True)
        chosen = {n: built.get(n) for n in wanted}
    random.setstate(built.state)
    return chosen
