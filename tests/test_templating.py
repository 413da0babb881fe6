"""The report templates compile once per machine: kept in a private cache folder, reused by the next process, and any
fault of that folder (broken entries, a file in its place, a folder others may write to) only means compiling again."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest
from builders import family

from dynsteer_hook.report import templating
from dynsteer_hook.report.run_page import render_run_page
from dynsteer_hook.report.scenario_page import render_run
from dynsteer_hook.runtime.evaluator import Evaluator

BP = family("chain").blueprint()


@pytest.fixture(autouse=True)
def _fresh_environments() -> Iterator[None]:
    """Each test builds its environments anew (with the cache folder it sets) and leaves none built from its folder."""
    templating.environment.cache_clear()
    yield
    templating.environment.cache_clear()


def _pages() -> tuple[str, str]:
    return render_run(Evaluator(BP).finish(), BP), render_run_page("a run", [])


def test_compiled_templates_are_kept_and_the_next_process_compiles_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first environment writes the compiled templates into a folder only its user may enter; a later one renders the
    same pages from them without compiling a template."""
    monkeypatch.setenv(templating.CACHE_VARIABLE, str(tmp_path))
    first = _pages()
    folder = tmp_path / "dynsteer-hook" / "templates"
    assert len(list(folder.iterdir())) >= 2 and folder.stat().st_mode & 0o777 == 0o700
    templating.environment.cache_clear()

    def no_compiling(*args: object, **kwargs: object) -> None:
        raise AssertionError("a template was compiled although its compiled form was kept")

    monkeypatch.setattr(jinja2.Environment, "compile", no_compiling)
    assert _pages() == first


def test_broken_entries_are_compiled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries cut short or overwritten with garbage are misses: the pages come out as before."""
    monkeypatch.setenv(templating.CACHE_VARIABLE, str(tmp_path))
    first = _pages()
    for i, entry in enumerate((tmp_path / "dynsteer-hook" / "templates").iterdir()):
        data = entry.read_bytes()
        entry.write_bytes(data[: len(data) // 2] if i % 2 else b"\x00garbage" * 9)
    templating.environment.cache_clear()
    assert _pages() == first


@pytest.mark.parametrize("place", ["a_file", "shared_folder", pytest.param("read_only", marks=pytest.mark.unprivileged)])
def test_a_cache_folder_that_cannot_serve_only_means_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: str) -> None:
    """A file where the folder would be, a folder others may write to (not used: its entries could be anyone's), or a
    folder that cannot be written: the pages render all the same."""
    folder = tmp_path / "dynsteer-hook" / "templates"
    if place == "a_file":
        (tmp_path / "dynsteer-hook").mkdir()
        folder.write_text("not a folder")
    else:
        folder.mkdir(parents=True)
        folder.chmod(0o777 if place == "shared_folder" else 0o500)
    monkeypatch.setenv(templating.CACHE_VARIABLE, str(tmp_path))
    try:
        html, page = _pages()
        assert "<html" in html and 'id="run-data"' in page
        if place == "shared_folder":
            assert templating.environment().bytecode_cache is None
        if place != "a_file":
            assert list(folder.iterdir()) == []
    finally:
        if folder.is_dir():
            os.chmod(folder, 0o700)
