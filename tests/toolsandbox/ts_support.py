"""Names and paths shared by the ToolSandbox tests."""

from __future__ import annotations

import json
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "dynsteer_hook" / "data" / "scripts"
BLUEPRINTS = Path(__file__).resolve().parents[2] / "blueprints" / "toolsandbox"

A = "cellular_off"
B = "send_message_with_contact_content_cellular_off"
C = B + "_multiple_user_turn"
D = B + "_insufficient_information"
E = B + "_3_distraction_tools_tool_name_scrambled"


def script_names(script: str) -> list[str]:
    """Scenario names covered by a shipped script file."""
    data = json.loads((SCRIPTS / f"{script}.json").read_text())
    return [k for k in data if not k.startswith("_")]
