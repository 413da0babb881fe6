"""Architecture boundaries, stated by folder: what each place of the package may import and do.

The pure places are the shared vocabulary (``model/``), the two halves of the method
(``compile/``, ``runtime/``) and the judges (``judges/``): they import no ToolSandbox, no
litellm, no edge place and no file or process module, and call no file I/O. ``runtime/`` and
``compile/`` import ``model/`` and never each other. The edges are folders too: ``files/``
(file I/O), ``llm/`` (the one place that imports litellm), ``report/`` (reports, no framework),
``toolsandbox/`` (the one place that imports ``tool_sandbox``), ``otel/`` (the one place that imports
OpenTelemetry), ``inspect/`` (the one place that imports ``inspect_ai``), ``langchain/`` (the one place that imports
LangChain) and ``openai_agents/`` (the one place that imports the OpenAI Agents SDK). ``session/`` is the rollout every
agent loop drives: it imports no framework and no adapter. The package root holds the entry points only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

import dynsteer_hook

PACKAGE = Path(dynsteer_hook.__file__).parent

ROOT_FILES = frozenset({
    "__init__.py",  # the public API: re-exports from every place
    "cli.py",  # the dynsteer command
    "flags.py",  # settings from flags and DYNSTEER_* variables, for every command
    "stop_signals.py",  # the signals that end every command as Ctrl-C does, and the exit status they give
    "logs.py",  # structlog set up for the command line and its worker processes
    "_moved.py",  # the previous layout's module paths, for one release
})
EDGE_PLACES = ("dynsteer_hook.files", "dynsteer_hook.llm", "dynsteer_hook.report", "dynsteer_hook.toolsandbox", "dynsteer_hook.otel", "dynsteer_hook.inspect",
               "dynsteer_hook.session", "dynsteer_hook.langchain", "dynsteer_hook.openai_agents",
               "dynsteer_hook.cli", "dynsteer_hook.flags", "dynsteer_hook.logs", "dynsteer_hook.stop_signals", "dynsteer_hook._moved")
LANGCHAIN = frozenset({"langchain", "langchain_core", "langgraph"})
FRAMEWORKS = frozenset({"tool_sandbox", "litellm", "openai", "opentelemetry", "inspect_ai", "agents"}) | LANGCHAIN
ADAPTERS = ("dynsteer_hook.toolsandbox", "dynsteer_hook.inspect", "dynsteer_hook.langchain", "dynsteer_hook.openai_agents",
            "dynsteer_hook.otel", "dynsteer_hook.llm")
IO_MODULES = frozenset({"os", "pathlib", "shutil", "tempfile", "io", "glob", "fileinput", "subprocess", "socket", "sqlite3", "mmap"})
# Calls that touch the file system, whatever object they are made on (a Path passed in, a module imported under another name).
IO_CALLS = frozenset({
    "open", "read_text", "write_text", "read_bytes", "write_bytes", "exists", "is_file", "is_dir", "is_symlink", "iterdir",
    "glob", "rglob", "stat", "lstat", "mkdir", "makedirs", "unlink", "remove", "touch", "rmdir", "rmtree", "chmod",
    "symlink_to", "hardlink_to", "readlink", "samefile", "expanduser", "listdir", "scandir", "walk", "fsync",
})


@dataclass(frozen=True)
class Place:
    """A pure place of the package and the places of the package it may import."""

    folder: str
    allowed: tuple[str, ...]  # dotted prefixes of the package's places it may import (itself included)


PURE = [
    Place("model", ("dynsteer_hook.model",)),
    Place("compile", ("dynsteer_hook.model", "dynsteer_hook.compile")),
    Place("judges", ("dynsteer_hook.model", "dynsteer_hook.judges")),
    Place("runtime", ("dynsteer_hook.model", "dynsteer_hook.judges", "dynsteer_hook.runtime")),
]
PURE_MODULES = [(place, path) for place in PURE for path in sorted((PACKAGE / place.folder).rglob("*.py"))]


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


def _package_imports(path: Path) -> set[str]:
    """The package's own modules the file imports (``from dynsteer_hook.model import events`` as dynsteer_hook.model.events)."""
    return {n for n in _imports(path) if n.startswith("dynsteer_hook.") or n == "dynsteer_hook"}


def _id(case: tuple[Place, Path]) -> str:
    return str(case[1].relative_to(PACKAGE))


def _users(frameworks: set[str]) -> list[str]:
    return sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if _top(_imports(p)) & frameworks)


@pytest.mark.parametrize("case", PURE_MODULES, ids=_id)
def test_pure_places_import_no_framework_no_llm_and_no_edge(case: tuple[Place, Path]) -> None:
    """A pure module imports neither tool_sandbox nor litellm/openai, and nothing of files/, llm/, report/, toolsandbox/ or the root."""
    _, path = case
    found = _imports(path)
    assert not _top(found) & FRAMEWORKS, sorted(_top(found) & FRAMEWORKS)
    edges = sorted(n for n in found if n.startswith(EDGE_PLACES) or n == "dynsteer_hook")
    assert not edges, f"{path.name} imports edge places {edges}"


@pytest.mark.parametrize("case", PURE_MODULES, ids=_id)
def test_pure_places_keep_their_direction(case: tuple[Place, Path]) -> None:
    """model/ imports only model/; compile/ model/; judges/ model/; runtime/ model/ and judges/: compile/ and runtime/ never each other."""
    place, path = case
    wrong = sorted(n for n in _package_imports(path) if not n.startswith(place.allowed))
    assert not wrong, f"{place.folder}/{path.name} imports {wrong}"


@pytest.mark.parametrize("case", PURE_MODULES, ids=_id)
def test_pure_places_do_no_file_io(case: tuple[Place, Path]) -> None:
    """A pure module imports no file or process module and makes no call that touches the file system."""
    place, path = case
    assert not _top(_imports(path)) & IO_MODULES, sorted(_top(_imports(path)) & IO_MODULES)
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
        assert name not in IO_CALLS, f"{place.folder}/{path.name}:{node.lineno} calls {name}()"


def test_the_root_holds_the_entry_points_only() -> None:
    """The package root holds the public API, the command line and its settings, logging and stop signals, and the old
    paths' table."""
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == sorted(ROOT_FILES)


def test_only_llm_imports_litellm() -> None:
    """litellm (and the OpenAI client under it) is imported under dynsteer_hook/llm/ and nowhere else in the package."""
    users = _users({"litellm", "openai"})
    assert users and all(u.startswith("llm/") for u in users), users


def test_only_the_langchain_subpackage_imports_langchain() -> None:
    """LangChain (langchain, langgraph, langchain_core: the langchain extra) is imported only under dynsteer_hook/langchain/,
    but for langchain_core in toolsandbox/, which quiets the warning ToolSandbox's own import of it raises."""
    users = _users({"langchain", "langgraph"})
    assert users and all(u.startswith("langchain/") for u in users), users
    core = _users({"langchain_core"})
    assert all(u.startswith(("langchain/", "toolsandbox/")) for u in core), core


def test_only_the_openai_agents_subpackage_imports_the_agents_sdk() -> None:
    """The OpenAI Agents SDK (``agents``, the openai-agents extra) is imported only under dynsteer_hook/openai_agents/."""
    users = _users({"agents"})
    assert users and all(u.startswith("openai_agents/") for u in users), users


@pytest.mark.parametrize("folder", ["langchain", "openai_agents"])
def test_each_adapter_imports_one_framework_and_no_other_adapter(folder: str) -> None:
    """An agent framework's adapter stands on the session: no other framework, no other adapter, no ToolSandbox, no litellm."""
    own = LANGCHAIN if folder == "langchain" else frozenset({"agents"})
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        found = _imports(path)
        assert not (_top(found) & FRAMEWORKS) - own, (path, sorted((_top(found) & FRAMEWORKS) - own))
        others = sorted(n for n in found if n.startswith(ADAPTERS) and not n.startswith(f"dynsteer_hook.{folder}"))
        assert not others, (path, others)


def test_the_session_imports_no_framework_and_no_adapter() -> None:
    """session/ is what every agent loop drives: no agent framework, no ToolSandbox, no litellm, no OpenTelemetry, no adapter."""
    paths = sorted((PACKAGE / "session").rglob("*.py"))
    assert paths
    for path in paths:
        found = _imports(path)
        assert not _top(found) & FRAMEWORKS, (path, sorted(_top(found) & FRAMEWORKS))
        adapters = sorted(n for n in found if n.startswith(ADAPTERS))
        assert not adapters, (path, adapters)


def test_only_the_toolsandbox_subpackage_imports_tool_sandbox() -> None:
    """tool_sandbox is imported only under dynsteer_hook/toolsandbox/."""
    users = _users({"tool_sandbox"})
    assert users and all(u.startswith("toolsandbox/") for u in users), users


def test_only_otel_imports_opentelemetry() -> None:
    """OpenTelemetry (an optional extra) is imported under dynsteer_hook/otel/ and nowhere else in the package."""
    users = _users({"opentelemetry"})
    assert users and all(u.startswith("otel/") for u in users), users


def test_otel_imports_no_framework_and_no_llm() -> None:
    """otel/ exports what the evaluator made of any agent loop: no tool_sandbox, no litellm, nothing of llm/."""
    for path in sorted((PACKAGE / "otel").rglob("*.py")):
        found = _imports(path)
        assert not _top(found) & {"tool_sandbox", "litellm", "openai"}, path
        assert not any(n.startswith("dynsteer_hook.llm") for n in found), path


def test_only_the_inspect_subpackage_imports_inspect_ai() -> None:
    """inspect_ai (the inspect extra) is imported only under dynsteer_hook/inspect/."""
    users = _users({"inspect_ai"})
    assert users and all(u.startswith("inspect/") for u in users), users


@pytest.mark.parametrize("folder", ["files", "llm", "report", "inspect", "session", "langchain", "openai_agents"])
def test_edges_outside_toolsandbox_import_no_tool_sandbox_and_nothing_of_it(folder: str) -> None:
    """files/, llm/, report/, inspect/, session/ and the framework adapters serve other agent loops: they import neither tool_sandbox nor the toolsandbox/ subpackage."""
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        found = _imports(path)
        assert "tool_sandbox" not in _top(found), path
        assert not any(n.startswith("dynsteer_hook.toolsandbox") for n in found), path


@pytest.mark.parametrize("folder", ["files", "report"])
def test_files_and_reports_import_no_llm(folder: str) -> None:
    """Reading inputs and writing reports never needs a language model."""
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        found = _imports(path)
        assert not _top(found) & {"litellm", "openai"} and not any(n.startswith("dynsteer_hook.llm") for n in found), path


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
