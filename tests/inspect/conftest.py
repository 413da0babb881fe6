"""Fixtures for the Inspect AI tests: Inspect's data folder in a temporary place, the example's side effects cleared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from needs import need_module

need_module("inspect_ai", "the Inspect tests need the inspect extra (pip install -e '.[inspect]')")


@pytest.fixture(autouse=True)
def _inspect_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Inspect writes its data under XDG_DATA_HOME; the example's outbox starts empty."""
    from dynsteer_hook.inspect import example

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "logs"))
    example.SENT.clear()
    example.DELETED.clear()
    yield
