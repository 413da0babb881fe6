"""Every ToolSandbox subcommand, registered on the ``dynsteer`` parser in the order the help lists them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dynsteer_hook.toolsandbox.commands.compile import add_compile_parser
from dynsteer_hook.toolsandbox.commands.diff import add_diff_parser
from dynsteer_hook.toolsandbox.commands.quality import add_blueprint_eval_parser
from dynsteer_hook.toolsandbox.commands.replay import add_compare_parser, add_replay_parser
from dynsteer_hook.toolsandbox.commands.rerun import add_rerun_parser
from dynsteer_hook.toolsandbox.commands.run import add_demo_parser, add_run_parser, add_scenarios_parser

COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("run", add_run_parser),
    ("demo", add_demo_parser),
    ("blueprint-eval", add_blueprint_eval_parser),
    ("scenarios", add_scenarios_parser),
    ("compile", add_compile_parser),
    ("replay", add_replay_parser),
    ("rerun", add_rerun_parser),
    ("compare", add_compare_parser),
    ("diff", add_diff_parser),
)
"""Each subcommand's name and the function that declares it (and adds its flags)."""


def add_commands(sub: Any, only: str | None = None) -> None:
    """Register the ToolSandbox subcommands on the main parser; none of them imports ToolSandbox until it runs.

    Args:
        sub: The main parser's subcommands.
        only: Add the flags of this subcommand alone (the others are declared with their help line, which is
            all the main help shows); None adds every subcommand's flags.
    """
    for name, declare in COMMANDS:
        declare(sub, flags=only is None or only == name)
