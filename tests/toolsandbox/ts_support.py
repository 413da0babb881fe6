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


# (kind, scenario): every kind of fault of the agents of known quality, over several tools and augmentations.
FAULT_SAMPLE = [
    ("repeat", "send_message_with_contact_content_cellular_off_multiple_user_turn"),
    ("repeat", "find_days_till_holiday_3_distraction_tools_tool_name_scrambled"),
    ("malformed", "send_message_with_contact_content_cellular_off"),
    ("malformed", "search_reminder_with_recency_upcoming_10_distraction_tools"),
    ("wrong_tool", "find_days_till_holiday_wifi_off_3_distraction_tools"),
    ("wrong_tool", "modify_contact_with_message_recency_all_tools"),
    ("loop", "remove_contact_by_phone"),
    ("loop", "wifi_off_3_distraction_tools_tool_name_scrambled"),
    ("minefield", "remove_contact_by_phone_no_search_contacts_insufficient_information"),
    ("minefield", "remove_reminder_with_recency_latest_insufficient_information"),
]
