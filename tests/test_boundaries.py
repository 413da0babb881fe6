"""Architecture boundaries, stated by place: what each folder of the package may import and do.

The pure places are the two halves of the method (``compile/``, ``runtime/``), the judges
(``judges/``) and every module at the package root that is not an edge: the shared model
(errors, blueprint, predicates, json_types, catalog, task_view, events, config, report), the
shared algorithms and helpers (graph, dominators, untrusted, metaeval) and the pure helpers of
edges (llm_output, report_html). A pure place imports no ToolSandbox, no litellm, no edge module
and no file or process module, and calls no file I/O. The edges are named once, in ``ROOT_EDGES``;
``toolsandbox/`` is the one place that imports ``tool_sandbox``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

import dynsteer_hook

PACKAGE = Path(dynsteer_hook.__file__).parent

ROOT_EDGES = frozenset({
    "__init__.py",  # the public API: re-exports from every place
    "llm.py",  # the one litellm importer
    "llm_source.py",  # LLM candidates for the compiler
    "model_settings.py",  # model flags and DYNSTEER_* variables, checked LLM clients
    "judge_factory.py",  # judge flags, LLM judges built on a client
    "config_flags.py",  # evaluator thresholds as flags
    "storage.py",  # input files, reports
    "outputs.py",  # atomic writes, the append-only log
    "blueprint_cache.py",  # compiled blueprints stored by public-view hash
    "judge_cache.py",  # judge answers stored on disk
    "logs.py",  # structlog set up for the command line
    "cli.py",  # the dynsteer command
})
EDGE_MODULES = frozenset(f"dynsteer_hook.{name.removesuffix('.py')}" for name in ROOT_EDGES - {"__init__.py"})
FRAMEWORKS = frozenset({"tool_sandbox", "litellm", "openai"})
IO_MODULES = frozenset({"os", "pathlib", "shutil", "tempfile", "io", "glob", "fileinput", "subprocess", "socket", "sqlite3", "mmap"})
# Calls that touch the file system, whatever object they are made on (a Path passed in, a module imported under another name).
IO_CALLS = frozenset({
    "open", "read_text", "write_text", "read_bytes", "write_bytes", "exists", "is_file", "is_dir", "is_symlink", "iterdir",
    "glob", "rglob", "stat", "lstat", "mkdir", "makedirs", "unlink", "remove", "touch", "rmdir", "rmtree", "chmod",
    "symlink_to", "hardlink_to", "readlink", "samefile", "expanduser", "listdir", "scandir", "walk", "fsync",
})


@dataclass(frozen=True)
class Place:
    """A place of the package and what may not be imported from it."""

    name: str
    folder: str  # relative folder ("" for the package root)
    forbidden_places: tuple[str, ...]  # dotted prefixes of package places it must not import


PLACES = [
    Place("compile/", "compile", ("dynsteer_hook.runtime", "dynsteer_hook.judges")),
    Place("runtime/", "runtime", ()),
    Place("judges/", "judges", ("dynsteer_hook.compile", "dynsteer_hook.runtime")),
    Place("shared root", "", ("dynsteer_hook.compile", "dynsteer_hook.runtime", "dynsteer_hook.judges")),
]


def _modules(place: Place) -> list[Path]:
    folder = PACKAGE / place.folder
    if place.folder:
        return sorted(folder.rglob("*.py"))
    return sorted(p for p in folder.glob("*.py") if p.name not in ROOT_EDGES)


PURE = [(place, path) for place in PLACES for path in _modules(place)]


def _imports(path: Path) -> set[str]:
    """Every module the file imports, at any depth of the code (lazy imports too), with ``from X import Y`` as X and X.Y."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def _top(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


def _id(case: tuple[Place, Path]) -> str:
    return str(case[1].relative_to(PACKAGE))


@pytest.mark.parametrize("case", PURE, ids=_id)
def test_pure_places_import_no_framework_no_llm_and_no_edge(case: tuple[Place, Path]) -> None:
    """A pure module imports neither tool_sandbox nor litellm/openai, no edge module and nothing under toolsandbox/."""
    place, path = case
    found = _imports(path)
    assert not _top(found) & FRAMEWORKS, sorted(_top(found) & FRAMEWORKS)
    edges = sorted(n for n in found if n in EDGE_MODULES or n.startswith("dynsteer_hook.toolsandbox"))
    assert not edges, f"{place.name} {path.name} imports edge modules {edges}"


@pytest.mark.parametrize("case", PURE, ids=_id)
def test_pure_places_keep_their_direction(case: tuple[Place, Path]) -> None:
    """compile/ never imports runtime/ or judges/, judges/ never imports either half, the shared root imports no folder."""
    place, path = case
    wrong = sorted(n for n in _imports(path) if n.startswith(place.forbidden_places)) if place.forbidden_places else []
    assert not wrong, f"{place.name} {path.name} imports {wrong}"


@pytest.mark.parametrize("case", PURE, ids=_id)
def test_pure_places_do_no_file_io(case: tuple[Place, Path]) -> None:
    """A pure module imports no file or process module and makes no call that touches the file system."""
    place, path = case
    assert not _top(_imports(path)) & IO_MODULES, sorted(_top(_imports(path)) & IO_MODULES)
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
        assert name not in IO_CALLS, f"{place.name} {path.name}:{node.lineno} calls {name}()"


def test_every_root_edge_exists() -> None:
    """Each module named an edge is a module of the package root (a renamed edge must not leave a stale exemption)."""
    missing = sorted(name for name in ROOT_EDGES if not (PACKAGE / name).is_file())
    assert missing == []


def test_only_the_llm_module_imports_litellm() -> None:
    """litellm (and the OpenAI client under it) is imported by dynsteer_hook/llm.py and nowhere else in the package."""
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if _top(_imports(p)) & {"litellm", "openai"})
    assert users == ["llm.py"]


def test_only_the_toolsandbox_subpackage_imports_tool_sandbox() -> None:
    """tool_sandbox is imported only under dynsteer_hook/toolsandbox/."""
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if "tool_sandbox" in _top(_imports(p)))
    assert users and all(u.startswith("toolsandbox/") for u in users), users


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_package_imports_in_no_circle() -> None:
    """No module reaches itself through imports, lazy ones included (the command line imports its parts, never the reverse)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        for target in _imports(path):
            # ``from dynsteer_hook.toolsandbox import _quiet`` names the module _quiet, not the package's face.
            if target in modules and target != name and modules[target].name != "__init__.py":
                graph.add_edge(name, target)
    assert list(nx.simple_cycles(graph)) == []


def test_public_api_names_resolve() -> None:
    """Every name in dynsteer_hook.__all__ exists."""
    missing = [n for n in dynsteer_hook.__all__ if not hasattr(dynsteer_hook, n)]
    assert missing == []
