"""ToolSandbox's named scenarios, built once per process and seeded as its CLI seeds them."""

from __future__ import annotations

import random

from dynsteer_hook.model.errors import ScenarioError
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.scenario import Scenario

# The scenarios ToolSandbox plays with --test_mode.
TEST_SCENARIO_NAMES = [
    "send_message_with_contact_content_cellular_off_multiple_user_turn",
    "send_message_with_contact_content_cellular_off_multiple_user_turn_10_distraction_tools",
    "send_message_with_contact_content_cellular_off_3_distraction_tools_arg_description_scrambled",
]


_LOADED: dict[str, tuple[dict[str, Scenario], object]] = {}


def load_scenarios(names: list[str] | None, preferred_tool_backend: str = "DEFAULT") -> dict[str, Scenario]:
    """ToolSandbox's named scenarios (seeded as its CLI does), optionally filtered by name.

    Built once per process and backend; later calls restore the random state ToolSandbox's
    CLI would have after building them, so the run order matches its own.
    """
    if preferred_tool_backend not in _LOADED:
        from tool_sandbox.scenarios import named_scenarios

        random.seed(42)
        everything = named_scenarios(preferred_tool_backend=preferred_tool_backend)
        _LOADED[preferred_tool_backend] = (everything, random.getstate())
    everything, state = _LOADED[preferred_tool_backend]
    random.setstate(state)  # type: ignore[arg-type]
    if names is None:
        return dict(everything)
    unknown = sorted(set(names) - set(everything))
    if unknown:
        raise ScenarioError(f"unknown scenario name(s) {unknown[:5]}; list them with 'dynsteer scenarios'")
    return {n: everything[n] for n in names}
