"""The previous layout's module paths keep working for one release, with a DeprecationWarning, and nothing of
this project imports them any more."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
import types
from pathlib import Path

import pytest

import dynsteer_hook
from dynsteer_hook._moved import MOVED, MOVED_NAMES

REPO = Path(dynsteer_hook.__file__).resolve().parents[1]
CORE = sorted(p for p in MOVED if not p.startswith("dynsteer_hook.toolsandbox."))


def defined_names(home: str) -> dict[str, object]:
    """The public classes and functions a module defines itself (not those it imports)."""
    module = importlib.import_module(home)
    return {n: v for n, v in vars(module).items()
            if not n.startswith("_") and (inspect.isclass(v) or inspect.isfunction(v)) and v.__module__ == home}


def import_old(old: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """Import an old path afresh (a cached one would not warn again), expecting the warning that names its homes."""
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=re.escape(old) + " moved to " + re.escape(MOVED[old][0])):
        return importlib.import_module(old)


@pytest.mark.parametrize("old", CORE)
def test_an_old_path_warns_and_hands_on_every_name_of_its_homes(old: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``import dynsteer_hook.<old>`` warns, and each class and function its new homes define is the very same object there."""
    module = import_old(old, monkeypatch)
    for home in MOVED[old]:
        for name, value in defined_names(home).items():
            assert getattr(module, name) is value, (old, home, name)


def test_a_star_import_of_an_old_path_gets_the_public_names_of_its_homes(monkeypatch: pytest.MonkeyPatch) -> None:
    """``from dynsteer_hook.storage import *`` still gives the reading, writing and report helpers."""
    import_old("dynsteer_hook.storage", monkeypatch)
    namespace: dict[str, object] = {}
    exec("from dynsteer_hook.storage import *", namespace)
    assert {"load_blueprint", "read_events", "write_report", "JsonlSink", "write_json_atomic"} <= set(namespace)


@pytest.mark.parametrize("package", ["dynsteer_hook.report", "dynsteer_hook.llm"])
def test_old_names_of_a_module_that_became_a_package_warn_and_resolve(package: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``from dynsteer_hook.report import Report`` (a module before, a package now) warns once and gives the new home's object."""
    face = importlib.import_module(package)
    homes, names = MOVED_NAMES[package]
    for name in sorted(names):
        monkeypatch.delitem(face.__dict__, name, raising=False)
        with pytest.warns(DeprecationWarning, match=re.escape(f"{package}.{name} moved to ")):
            value = getattr(face, name)
        assert any(getattr(importlib.import_module(h), name, None) is value for h in homes), name


def test_a_package_face_does_not_resolve_names_the_old_module_never_had() -> None:
    """Only the old module's own names are looked up: anything else is an AttributeError, with nothing imported for it."""
    face = importlib.import_module("dynsteer_hook.llm")
    with pytest.raises(AttributeError):
        _ = face.no_such_name


def test_a_path_that_never_existed_still_fails_to_import() -> None:
    """The old paths are a closed list: an unknown module is still a ModuleNotFoundError."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("dynsteer_hook.no_such_module")


def _old_imports(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name in MOVED]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in MOVED:
                found.append(node.module)
            elif node.module in MOVED_NAMES:
                found += [f"{node.module}.{a.name}" for a in node.names if a.name in MOVED_NAMES[node.module][1]]
            found += [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MOVED]
    # imports written inside strings (code run in a subprocess)
    found += [m for m in re.findall(r"(?:from|import) (dynsteer_hook[\w.]*)", text) if m in MOVED]
    return found


def test_nothing_of_the_project_imports_an_old_path() -> None:
    """The package, its tests and its scripts import only the new paths (the old ones are for users, for one release)."""
    files = [p for root in ("dynsteer_hook", "tests", "scripts") for p in sorted((REPO / root).rglob("*.py"))]
    offenders = {str(p.relative_to(REPO)): names for p in files if not p.name.startswith("test_moved") and (names := _old_imports(p))}
    assert offenders == {}
