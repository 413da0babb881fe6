"""ToolSandbox's built scenarios kept between processes (toolsandbox/scenarios.py): read back only when they can be trusted."""

from __future__ import annotations

import fcntl
import os
import pickle
import random
import threading
import time
from pathlib import Path
from typing import Any

import known_agents as ka
import pytest

from dynsteer_hook.files.cache import CACHE_VARIABLE
from dynsteer_hook.toolsandbox import scenarios as cache

from tool_sandbox.common.scenario import Scenario

# Time-relative data (reminders by recency, messages by recency, a holiday count from today), and a plain one.
PLAYED = ["search_reminder_with_recency_upcoming", "modify_contact_with_message_recency_multiple_user_turn", "wifi_off"]


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test, and a process that has loaded no scenarios yet."""
    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_LOADED", {})
    return tmp_path / "cache" / "dynsteer-hook" / cache.CACHE_NAME


def _entry() -> Path:
    entry = cache._entry("DEFAULT")
    assert entry is not None
    return entry


def test_a_kept_entry_plays_as_freshly_built_scenarios(cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first load builds and keeps the scenarios (a private file); the next process reads them back instead of
    building them, with ToolSandbox's random state, and clean solvers of time-relative scenarios score 1.0 on them."""
    built = cache.load_scenarios(None)
    after_building = random.getstate()
    [entry] = cache_home.glob("*.pickle")
    assert entry == _entry() and entry.stat().st_mode & 0o777 == 0o600
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(cache, "_build", lambda _backend: pytest.fail("the kept scenarios were built again"))
    random.seed(7)
    kept = cache.load_scenarios(None)
    assert random.getstate() == after_building
    assert list(kept) == list(built) and len(kept) == 1032
    for name in PLAYED:
        assert kept[name] is not built[name]
        assert kept[name].categories == built[name].categories
        assert kept[name].starting_context.tool_allow_list == built[name].starting_context.tool_allow_list
        _script, result = ka.play_fresh(lambda now, n=name: ka.clean_solver(n, kept[n], now), kept[name], tmp_path / name)
        assert result is not None and ka.scores_one(result), (name, result and result["milestone_mapping"])


def _keep(entry: Path, **scenarios: Any) -> None:
    entry.parent.mkdir(parents=True, exist_ok=True)
    cache._keep(entry, cache.Built(list(scenarios), random.getstate(), dict(scenarios)))


def _reads_back(entry: Path) -> list[str] | None:
    """The names of the entry's scenarios when the entry and every scenario in it read back, else None."""
    kept = cache._read(entry)
    if kept is None:
        return None
    try:
        return [n for n in kept.names if isinstance(kept.get(n), Scenario)]
    except cache._BrokenEntryError:
        return None


FAULTS = ["torn", "garbled", "not_scenarios", "not_a_random_state", "earlier_format", "others_may_write", "too_old", "from_the_future",
          "a_pipe", "a_link_to_dev_zero", "a_link_to_a_good_entry"]


@pytest.mark.parametrize("fault", FAULTS)
def test_an_entry_that_cannot_be_trusted_is_not_read(scenarios: dict[str, Any], cache_home: Path, fault: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A torn or garbled file, another pickle, scenarios without a random state ToolSandbox's CLI could have, an entry of
    the earlier format (one pickle of everything), a file others may write, one older than FRESH_FOR (its times
    have moved on), or a pipe or a link in the entry's place is a miss (never a wait), and the scenarios are built again;
    the same entry without the fault is read."""
    entry = _entry()
    _keep(entry, wifi_off=scenarios["wifi_off"])
    assert _reads_back(entry) == ["wifi_off"]
    if fault == "torn":
        entry.write_bytes(entry.read_bytes()[:-1000])
    elif fault == "garbled":  # the middle of the file (the databases' frames) overwritten, its length kept
        data = bytearray(entry.read_bytes())
        middle = len(data) // 2
        data[middle:middle + 4096] = bytes(range(256)) * 16
        entry.write_bytes(bytes(data))
    elif fault == "not_scenarios":
        _keep(entry, wifi_off="a string")
    elif fault == "not_a_random_state":
        cache._keep(entry, cache.Built(["wifi_off"], (3, (1, 2), None), {"wifi_off": scenarios["wifi_off"]}))
    elif fault == "earlier_format":
        entry.write_bytes(pickle.dumps(({"wifi_off": scenarios["wifi_off"]}, random.getstate())))
    elif fault == "others_may_write":
        entry.chmod(0o622)
    elif fault == "a_pipe":  # opened as it is, it waits for a writer forever
        entry.unlink()
        os.mkfifo(entry)
    elif fault == "a_link_to_dev_zero":  # read as it is, it never ends
        entry.unlink()
        entry.symlink_to("/dev/zero")
    elif fault == "a_link_to_a_good_entry":  # an entry is this process's own file, never a link to another one
        entry.rename(entry.with_name("elsewhere.pickle"))
        entry.symlink_to(entry.with_name("elsewhere.pickle"))
    else:
        moved = time.time() + (-1 if fault == "too_old" else 1) * (cache.FRESH_FOR + 60)
        os.utime(entry, (moved, moved))
    assert _reads_back(entry) is None
    builds: list[str] = []
    monkeypatch.setattr(cache, "_build", lambda backend: builds.append(backend) or cache.Built(
        ["wifi_off"], random.getstate(), {"wifi_off": scenarios["wifi_off"]}))
    assert cache.load_scenarios(["wifi_off"])["wifi_off"] is scenarios["wifi_off"] and builds == ["DEFAULT"]


def test_a_run_reads_back_only_the_scenarios_it_asks_for(scenarios: dict[str, Any], cache_home: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Each scenario is kept on its own: a process asking for one unpickles that one, so another one garbled in the
    entry costs nothing until it is asked for; then the scenarios are built again (and kept whole)."""
    entry = _entry()
    _keep(entry, wifi_off=scenarios["wifi_off"], cellular_off=scenarios["cellular_off"])
    data = bytearray(entry.read_bytes())
    data[-2048:] = bytes(range(256)) * 8  # the end of the last scenario's pickle (cellular_off)
    entry.write_bytes(bytes(data))
    builds: list[str] = []

    def build(backend: str) -> cache.Built:
        builds.append(backend)
        return cache.Built(["wifi_off", "cellular_off"], random.getstate(),
                           {"wifi_off": scenarios["wifi_off"], "cellular_off": scenarios["cellular_off"]})

    monkeypatch.setattr(cache, "_build", build)
    first = cache.load_scenarios(["wifi_off"])["wifi_off"]
    assert builds == [] and first is not scenarios["wifi_off"] and first.categories == scenarios["wifi_off"].categories
    assert cache.load_scenarios(["cellular_off"])["cellular_off"] is scenarios["cellular_off"] and builds == ["DEFAULT"]
    assert _reads_back(entry) == ["wifi_off", "cellular_off"]  # the built ones were kept in its place


def test_a_process_waits_for_the_one_building_the_scenarios(scenarios: dict[str, Any], cache_home: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """While another process holds the build lock, a process missing the entry waits, then reads what that one kept
    instead of building the scenarios a second time."""
    entry = _entry()
    monkeypatch.setattr(cache, "_build", lambda _backend: pytest.fail("the scenarios were built while another process built them"))
    got: dict[str, Any] = {}
    with (cache_home / ".build.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        waiting = threading.Thread(target=lambda: got.update(cache.load_scenarios(["wifi_off"])))
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive() and not got  # it waits for the lock
        _keep(entry, wifi_off=scenarios["wifi_off"])
        fcntl.flock(lock, fcntl.LOCK_UN)
    waiting.join(30)
    assert not waiting.is_alive() and got["wifi_off"].categories == scenarios["wifi_off"].categories


def test_a_folder_others_may_write_is_not_used(cache_home: Path) -> None:
    """The cache folder is used only when nobody but its owner may write to it."""
    assert cache._entry("DEFAULT") is not None
    cache_home.chmod(0o777)
    assert cache._entry("DEFAULT") is None


def test_the_key_follows_the_backend_and_a_new_entry_drops_the_old(scenarios: dict[str, Any], cache_home: Path) -> None:
    """Entries of other keys (another ToolSandbox, another backend) are removed when an entry is written."""
    assert cache._key("DEFAULT") != cache._key("OTHER") and cache._key("DEFAULT") == cache._key("DEFAULT")
    old = cache_home / f"{cache._key('OTHER')}.pickle"
    _keep(old, wifi_off=scenarios["wifi_off"])
    entry = _entry()
    _keep(entry, wifi_off=scenarios["wifi_off"])
    assert sorted(p.name for p in cache_home.glob("*.pickle")) == [entry.name]
    assert _reads_back(entry) == ["wifi_off"]
