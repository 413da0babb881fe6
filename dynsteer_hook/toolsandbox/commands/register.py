"""Every ToolSandbox subcommand, registered on the ``dynsteer`` parser in the order the help lists them."""

from __future__ import annotations

from typing import Any

from dynsteer_hook.toolsandbox.commands.compile import add_compile_parser
from dynsteer_hook.toolsandbox.commands.quality import add_blueprint_eval_parser
from dynsteer_hook.toolsandbox.commands.replay import add_compare_parser, add_replay_parser
from dynsteer_hook.toolsandbox.commands.run import add_demo_parser, add_run_parser, add_scenarios_parser


def add_commands(sub: Any) -> None:
    """Register the ToolSandbox subcommands on the main parser (none of them imports ToolSandbox until it runs)."""
    add_run_parser(sub)
    add_demo_parser(sub)
    add_blueprint_eval_parser(sub)
    add_scenarios_parser(sub)
    add_compile_parser(sub)
    add_replay_parser(sub)
    add_compare_parser(sub)
