"""The previous layout's ToolSandbox module paths keep working for one release, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import re
import sys

import pytest
from test_moved import defined_names, import_old

from dynsteer_hook._moved import MOVED, MOVED_NAMES

pytestmark = pytest.mark.toolsandbox

TOOLSANDBOX = sorted(p for p in MOVED if p.startswith("dynsteer_hook.toolsandbox."))


@pytest.mark.parametrize("old", TOOLSANDBOX)
def test_an_old_toolsandbox_path_warns_and_hands_on_every_name_of_its_homes(old: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``import dynsteer_hook.toolsandbox.<old>`` warns, and each class and function of its new homes is the same object there."""
    module = import_old(old, monkeypatch)
    for home in MOVED[old]:
        for name, value in defined_names(home).items():
            assert getattr(module, name) is value, (old, home, name)


def test_old_names_of_the_roles_module_warn_and_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    """``from dynsteer_hook.toolsandbox.roles import AGENTS`` (a module before, a package now) warns and gives roles.named's."""
    face = importlib.import_module("dynsteer_hook.toolsandbox.roles")
    homes, names = MOVED_NAMES["dynsteer_hook.toolsandbox.roles"]
    named = sys.modules[homes[0]] if homes[0] in sys.modules else importlib.import_module(homes[0])
    for name in sorted(names):
        monkeypatch.delitem(face.__dict__, name, raising=False)
        with pytest.warns(DeprecationWarning, match=re.escape(f"dynsteer_hook.toolsandbox.roles.{name} moved to ")):
            assert getattr(face, name) is getattr(named, name)
