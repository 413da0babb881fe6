"""Module paths of the previous layout, kept working for one release: each warns once and hands on its new homes.

``MOVED`` maps an old module path to the modules that now hold its names. Importing an old
path gives a module whose names are looked up in those homes, in order, when first used, and
raises a ``DeprecationWarning`` naming them. Three old modules are packages now (``report``,
``llm``, ``toolsandbox.roles``): their old names resolve the same way from the package's face,
through ``moved_names``. Nothing in the package imports an old path.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
import warnings
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.abc import Loader, MetaPathFinder

    class _FinderAndLoader(MetaPathFinder, Loader):
        """What the import system asks of ``_OldPaths``."""
else:
    _FinderAndLoader = object  # importlib.abc costs tens of milliseconds at every start; the import system needs no base class

_P = "dynsteer_hook."
_T = "dynsteer_hook.toolsandbox."

MOVED: dict[str, tuple[str, ...]] = {
    _P + "blueprint": (_P + "model.blueprint",),
    _P + "catalog": (_P + "model.catalog",),
    _P + "config": (_P + "model.config",),
    _P + "dominators": (_P + "model.dominators",),
    _P + "errors": (_P + "model.errors",),
    _P + "events": (_P + "model.events",),
    _P + "graph": (_P + "model.graph",),
    _P + "json_types": (_P + "model.json_types",),
    _P + "predicates": (_P + "model.predicates",),
    _P + "task_view": (_P + "model.task_view",),
    _P + "untrusted": (_P + "model.untrusted",),
    _P + "compile.validation": (_P + "model.contract",),
    _P + "storage": (_P + "files.inputs", _P + "files.blueprints", _P + "files.events", _P + "report.writer", _P + "files.outputs"),
    _P + "outputs": (_P + "files.outputs",),
    _P + "blueprint_cache": (_P + "files.store",),
    _P + "report_html": (_P + "report.html",),
    _P + "llm_output": (_P + "llm.output",),
    _P + "llm_source": (_P + "llm.candidates",),
    _P + "judge_cache": (_P + "llm.cache",),
    _P + "model_settings": (_P + "llm.settings", _P + "flags"),
    _P + "judge_factory": (_P + "llm.judges", _P + "flags"),
    _P + "config_flags": (_P + "flags",),
    _P + "metaeval": (_T + "offline.metaeval",),
    _T + "adapter": (_T + "live.adapter",),
    _T + "playing": (_T + "live.playing",),
    _T + "runner": (_T + "live.runner",),
    _T + "engines": (_T + "live.engines",),
    _T + "interrupts": (_T + "live.interrupts",),
    _T + "preflight": (_T + "live.preflight",),
    _T + "results": (_T + "live.results", _P + "report.run_summary"),
    _T + "summaries": (_T + "live.summaries", _P + "report.run_summary"),
    _T + "scripted": (_T + "roles.scripted",),
    _T + "llm_roles": (_T + "roles.litellm_roles",),
    _T + "recording": (_T + "offline.recording",),
    _T + "replay": (_T + "offline.replay",),
    _T + "compare": (_T + "offline.compare",),
    _T + "blueprint_eval": (_T + "quality.blueprint_eval",),
    _T + "reference": (_T + "quality.reference",),
    _T + "split": (_T + "quality.split",),
    _T + "cli": (_T + "commands.run", _T + "commands.register"),
    _T + "compile_command": (_T + "commands.compile",),
    _T + "replay_command": (_T + "commands.replay",),
}
"""Old module path -> the modules that hold its names now, searched in order."""

MOVED_NAMES: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    _P + "report": ((_P + "model.records", _P + "report.markdown"), frozenset({
        "AuditSink", "BindingRecord", "FaultCause", "FaultRecord", "FirstError", "IncompleteLog", "JudgeUsage", "ListSink", "Outcome",
        "Report", "StageRecord", "StepRecord", "StopReason", "StopRecord", "TailRecord", "TierUse", "TraceFaultRecord", "Window",
        "conclude", "render_markdown", "with_files",
    })),
    _P + "llm": ((_P + "llm.client", _P + "llm.completion", _P + "llm.transport", _P + "llm.endpoint"), frozenset({
        "Backoff", "Completion", "JsonCompletion", "JsonMode", "LLMClient", "LOCAL_PLACEHOLDER_KEY", "Message", "ModelToolCall", "Usage",
        "api_key_from_env", "classify", "endpoint_without_secrets", "price_known",
    })),
    _T + "roles": ((_T + "roles.named",), frozenset({
        "AGENTS", "AGENT_CHOICES", "AGENT_MODEL", "LITELLM", "RoleFactory", "SCRIPTED", "USERS", "USER_CHOICES", "USER_MODEL", "litellm_role",
    })),
}
"""Old modules that are packages now -> the modules that hold their old names, and those names (nothing else is looked up,
so a submodule's name never imports the homes)."""


def _warn(old: str, homes: Sequence[str], stacklevel: int) -> None:
    warnings.warn(f"{old} moved to {' and '.join(homes)}; import from there (the old path goes in the next release)",
                  DeprecationWarning, stacklevel=stacklevel)


def _lookup(owner: str, homes: Sequence[str], name: str) -> tuple[Any, str]:
    """``name`` from the first home that has it, and that home."""
    for home in homes:
        module = importlib.import_module(home)
        if hasattr(module, name):
            return getattr(module, name), home
    raise AttributeError(f"module {owner!r} has no attribute {name!r}")


def moved_names(package: str) -> Callable[[str], Any]:
    """A package face's ``__getattr__``: an old name of the module the package replaced, with a ``DeprecationWarning``."""
    homes, names = MOVED_NAMES[package]

    def old_name(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value, home = _lookup(package, homes, name)
        _warn(f"{package}.{name}", (home,), stacklevel=3)
        sys.modules[package].__dict__[name] = value  # warned once: later look-ups find it
        return value

    return old_name


class _OldPaths(_FinderAndLoader):
    """Finds and loads the old module paths (consulted after every real module: a real one always wins)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None) -> ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        old, homes = module.__name__, MOVED[module.__name__]
        module.__doc__ = f"Moved to {' and '.join(homes)} (this path goes in the next release)."

        def name_of_a_home(name: str) -> Any:
            if name == "__all__":
                return sorted({n for h in homes for n in dir(importlib.import_module(h)) if not n.startswith("_")})
            if name.startswith("__"):
                raise AttributeError(f"module {old!r} has no attribute {name!r}")
            return _lookup(old, homes, name)[0]

        module.__dict__["__getattr__"] = name_of_a_home
        _warn(old, homes, stacklevel=3)  # the line that imported it (the import machinery's frames are skipped)


def install() -> None:
    """Let the old module paths import (once per process)."""
    if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
        sys.meta_path.append(_OldPaths())
