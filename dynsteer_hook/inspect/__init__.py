"""DynSTEER inside Inspect AI (the ``inspect`` extra): the one place of the package that imports ``inspect_ai``.

``DynSteer`` gives a task its approver (minefield interception before every tool call), its
reviewer (the closed-action half after every call: settlement, stage judging, stop rules; a
halt ends the sample) and its scorer (DynSTEER's score, the report as metadata). ``views``
compiles blueprints from a sample's public view; ``replay`` reads ``.eval`` logs back
(``dynsteer replay``). See ``docs/inspect.md``.
"""

from dynsteer_hook.inspect.adapter import BLUEPRINT_KEY, STOP_KEY, DynSteer, dynsteer_approver, dynsteer_reviewer, dynsteer_scorer
from dynsteer_hook.inspect.views import compile_view, sample_view, tool_specs

__all__ = [
    "BLUEPRINT_KEY",
    "STOP_KEY",
    "DynSteer",
    "compile_view",
    "dynsteer_approver",
    "dynsteer_reviewer",
    "dynsteer_scorer",
    "sample_view",
    "tool_specs",
]
