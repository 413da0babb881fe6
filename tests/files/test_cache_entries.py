"""Cache entries that are no files: a pipe, a link (to /dev/zero, to another file), a folder or a file past the size an
entry may have, put where a judge answer or a compiled template is kept, is a miss that is asked or compiled again,
never a wait or a read without end; a relative XDG_CACHE_HOME is ignored (files/cache.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import pytest
from fake_llm import FakeLLMServer
from judge_runs import standard_reply
from test_judge_cache import _client, _request

from dynsteer_hook.files.cache import EntryRefusedError, cache_folder, read_entry
from dynsteer_hook.judges.llm_judges import StandardJudge
from dynsteer_hook.llm.cache import CachedJudgeClient
from dynsteer_hook.report import templating
from dynsteer_hook.report.run_page import render_run_page

WAIT = 20  # seconds before a test that hangs on a pipe or reads /dev/zero without end is failed instead


class Hung(BaseException):
    """Raised into a test still running after WAIT seconds: no ``except OSError`` or ``except Exception`` of the code under
    test may take it for an unreadable entry (a TimeoutError would be both)."""


@pytest.fixture(autouse=True)
def _no_hang() -> Iterator[None]:
    """A test that blocks (on a pipe) or never ends (reading /dev/zero) fails after WAIT seconds instead of holding the suite."""
    def stop(signum: int, frame: FrameType | None) -> None:
        raise Hung(f"still waiting after {WAIT} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(WAIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _link_to_a_good_copy(path: Path) -> None:
    copy = path.with_name("copy.json")
    path.rename(copy)
    path.symlink_to(copy)


def _folder(path: Path) -> None:
    path.mkdir()


def _too_large(path: Path) -> None:
    with path.open("wb") as f:
        f.truncate(64 * 2**20)  # sparse: 64 MiB that take no room


PLACES: dict[str, Callable[[Path], None]] = {"a_pipe": _fifo, "a_link_to_dev_zero": _dev_zero, "a_link_to_a_good_entry": _link_to_a_good_copy,
                                             "a_folder": _folder, "too_large": _too_large}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_read_entry_reads_regular_files_of_bounded_size_only(tmp_path: Path, place: str) -> None:
    entry = tmp_path / "entry.json"
    entry.write_bytes(b"{}")
    assert read_entry(entry, 16)[0] == b"{}"
    if place != "a_link_to_a_good_entry":
        entry.unlink()
    PLACES[place](entry)
    with pytest.raises(EntryRefusedError):
        read_entry(entry, 2**20)
    with pytest.raises(FileNotFoundError):
        read_entry(tmp_path / "missing.json", 16)


@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_judge_cache_entry_that_is_no_file_is_asked_again_and_replaced(llm_server: FakeLLMServer, tmp_path: Path, place: str) -> None:
    """The entry is counted as corrupt with the reason, the model asked, and a regular file written in its place."""
    llm_server.script(standard_reply(0.6), standard_reply(0.6))
    folder = tmp_path / "cache"
    StandardJudge(CachedJudgeClient(_client(llm_server), folder), samples=1)(_request())
    (path,) = folder.rglob("*.json")
    if place != "a_link_to_a_good_entry":
        path.unlink()
    PLACES[place](path)
    client = CachedJudgeClient(_client(llm_server), folder)
    verdict = StandardJudge(client, samples=1)(_request())
    assert client.stats.corrupt == 1 and client.stats.misses == 1 and client.stats.hits == 0
    assert verdict.degraded is None and len(llm_server.requests) == 2
    if place != "a_folder":  # a folder is not replaced by a file: the answer is used, not kept
        assert path.is_file() and not path.is_symlink()


@pytest.mark.parametrize("place", ["a_pipe", "a_link_to_dev_zero", "too_large"])
def test_a_template_cache_entry_that_is_no_file_only_means_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: str) -> None:
    monkeypatch.setenv(templating.CACHE_VARIABLE, str(tmp_path))
    templating.environment.cache_clear()
    try:
        first = render_run_page("a run", [])
        entries = list((tmp_path / "dynsteer-hook" / "templates").iterdir())
        assert entries
        for entry in entries:
            entry.unlink()
            PLACES[place](entry)
        templating.environment.cache_clear()
        assert render_run_page("a run", []) == first
    finally:
        templating.environment.cache_clear()


@pytest.mark.parametrize("value", ["relative/cache", "./cache", "~/cache", ""])
def test_a_relative_xdg_cache_home_is_ignored(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """The XDG rules: a relative path in XDG_CACHE_HOME is invalid and ignored, so the cache stays in ~/.cache whatever the
    working directory (a relative one would leave caches in every folder a command runs in)."""
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    assert cache_folder("templates") == Path.home() / ".cache" / "dynsteer-hook" / "templates"
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/absolute")
    assert cache_folder("templates") == Path("/somewhere/absolute/dynsteer-hook/templates")
