"""Every third-party module that the package, its tests or its scripts import is declared in pyproject.toml.

A module counts as imported when an ``import`` statement names it (at any depth: lazy imports too) or when
a test asks for it by name (``need_module("x")``, ``importlib.import_module("x")``, ``find_spec("x")``).
Its distribution comes from the installed metadata, so a rename (``re2`` is ``google-re2``) is followed.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

from needs import unavailable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("dynsteer_hook", "tests", "scripts")
BY_NAME = frozenset({"need_module", "import_module", "find_spec"})


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"unreadable requirement {requirement!r} in pyproject.toml"
    return _normal(match.group(1))


def declared() -> set[str]:
    """Normalised names of every distribution pyproject.toml declares (dependencies, every extra, ToolSandbox's git pin)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    names = {_requirement_name(r) for r in project["project"]["dependencies"]}
    for extra in project["project"]["optional-dependencies"].values():
        names |= {_requirement_name(r) for r in extra}
    names.add(_requirement_name(project["tool"]["dynsteer"]["toolsandbox"]))
    return names


def _local_names() -> set[str]:
    """Modules that are files of this repository (test helpers, scripts), importable from tests/ or scripts/."""
    names = {"dynsteer_hook"}
    for root in ("tests", "scripts"):
        for path in (REPO / root).rglob("*"):
            if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists()):
                names.add(path.stem)
    return names


def imported_modules() -> dict[str, str]:
    """Top-level module name -> the first file (relative to the repository) that imports it."""
    found: dict[str, str] = {}
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            where = str(path.relative_to(REPO))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                    fn = node.func
                    called = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
                    if called in BY_NAME and isinstance(node.args[0].value, str):
                        names = [node.args[0].value]
                for name in names:
                    found.setdefault(name.split(".")[0], where)
    local = _local_names()
    return {m: w for m, w in found.items() if m not in sys.stdlib_module_names and m not in local and m != "__future__"}


def test_the_scan_sees_the_imports_it_must_judge() -> None:
    """The scan finds third-party imports of every kind: plain, lazy, and asked for by name in a test."""
    modules = imported_modules()
    assert {"networkx", "litellm", "tool_sandbox", "hypothesis", "pytest"} <= modules.keys()
    assert "markdown_it" in modules and modules["markdown_it"].startswith("tests/")  # only ever asked for by need_module
    assert "os" not in modules and "builders" not in modules and "known_quality" not in modules


def test_every_imported_third_party_module_is_declared() -> None:
    """Each module's distribution is in pyproject.toml's dependencies or one of its extras."""
    owners = metadata.packages_distributions()
    names = declared()
    undeclared, unknown = [], []
    for module, where in sorted(imported_modules().items()):
        dists = owners.get(module)
        if not dists:
            if _normal(module) not in names:
                unknown.append(f"{module} (imported by {where})")
            continue
        if not {_normal(d) for d in dists} & names:
            undeclared.append(f"{module} from {', '.join(sorted(set(dists)))} (imported by {where})")
    assert undeclared == [], "imported but declared nowhere in pyproject.toml: " + "; ".join(undeclared)
    if unknown:
        unavailable("not installed here, so their distributions cannot be checked: " + "; ".join(unknown))
