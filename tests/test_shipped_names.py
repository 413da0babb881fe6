"""Shipped scripts and blueprints are named from any directory: a bare name that is no file is the installed package's."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynsteer_hook.data import script_argument, shipped_scripts
from dynsteer_hook.files.blueprints import blueprint_argument, shipped_blueprint_dir

PACKAGE_DATA = Path(__file__).resolve().parents[1] / "dynsteer_hook" / "data" / "scripts"


def test_the_shipped_scripts_are_the_package_data() -> None:
    """Every JSON file of the package's scripts folder is shipped under its stem."""
    assert {n: p.resolve() for n, p in shipped_scripts().items()} == {p.stem: p.resolve() for p in PACKAGE_DATA.glob("*.json")}
    assert "looping_agent" in shipped_scripts()


@pytest.mark.parametrize("given", ["looping_agent", "looping_agent.json"])
def test_a_bare_script_name_is_the_shipped_script(given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From a folder without such a file, ``--script looping_agent`` is the shipped looping agent."""
    monkeypatch.chdir(tmp_path)
    assert script_argument(Path(given)) == shipped_scripts()["looping_agent"]


def test_a_file_or_a_path_is_never_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of that name in the current folder wins, a path with a folder stays as it is, and so does an unknown name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "looping_agent").write_text("{}")
    assert script_argument(Path("looping_agent")) == Path("looping_agent")
    assert script_argument(Path("sub/looping_agent")) == Path("sub/looping_agent")
    assert script_argument(Path("no_such_agent")) == Path("no_such_agent")
    assert blueprint_argument(Path("sub/cellular_off.json")) == Path("sub/cellular_off.json")
    assert blueprint_argument(Path("no_such_scenario")) == Path("no_such_scenario")


def test_a_bare_scenario_name_is_its_shipped_blueprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``dynsteer explain cellular_off`` reads the shipped blueprint of that scenario."""
    monkeypatch.chdir(tmp_path)
    assert blueprint_argument(Path("cellular_off")) == shipped_blueprint_dir() / "cellular_off.json"
    assert blueprint_argument(Path("cellular_off.json")).is_file()
