"""Architecture boundaries: the pure core imports neither ToolSandbox nor litellm and does no file I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dynsteer_hook

PACKAGE = Path(dynsteer_hook.__file__).parent
# Edges: the LLM module and its users, files, the command line, judge wiring, the package's re-exports.
EDGE_MODULES = {"llm.py", "llm_source.py", "storage.py", "outputs.py", "blueprint_cache.py", "cli.py", "judge_factory.py", "__init__.py"}
CORE = sorted(p for p in PACKAGE.rglob("*.py") if "toolsandbox" not in p.parts and p.name not in EDGE_MODULES)
PATH_IO = {"read_text", "write_text", "read_bytes", "write_bytes", "mkdir", "unlink", "touch", "rmdir"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
            if node.module.startswith("dynsteer_hook.") and node.module.split(".")[1] in {"llm", "storage", "toolsandbox"}:
                names.add(node.module)
    return names


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_module_imports_no_framework_or_llm(path: Path) -> None:
    """Core modules stay free of tool_sandbox, litellm, and the edge modules that wrap them."""
    found = _imports(path)
    assert not found & {"tool_sandbox", "litellm", "openai"}, found
    assert not {n for n in found if n.startswith(("dynsteer_hook.llm", "dynsteer_hook.storage", "dynsteer_hook.toolsandbox"))}


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_module_does_no_file_io(path: Path) -> None:
    """No open() or pathlib reads and writes in the core."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Name):
            assert fn.id != "open", f"{path.name}:{node.lineno} calls open()"
        elif isinstance(fn, ast.Attribute):
            assert fn.attr not in PATH_IO, f"{path.name}:{node.lineno} calls .{fn.attr}()"
            owner = fn.value.id if isinstance(fn.value, ast.Name) else ""
            assert not (owner in {"os", "shutil", "tempfile"} and fn.attr not in {"environ", "getenv", "fspath"}), f"{path.name}:{node.lineno} calls {owner}.{fn.attr}()"


def test_only_the_llm_module_imports_litellm() -> None:
    """litellm is imported by dynsteer_hook/llm.py and nowhere else in the package."""
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if "litellm" in _imports(p))
    assert users == ["llm.py"]


def test_only_the_toolsandbox_subpackage_imports_tool_sandbox() -> None:
    """tool_sandbox is imported only under dynsteer_hook/toolsandbox/."""
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if "tool_sandbox" in _imports(p))
    assert users and all(u.startswith("toolsandbox/") for u in users)


def test_public_api_names_resolve() -> None:
    """Every name in dynsteer_hook.__all__ exists."""
    missing = [n for n in dynsteer_hook.__all__ if not hasattr(dynsteer_hook, n)]
    assert missing == []
