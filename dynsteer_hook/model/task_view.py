"""The public task view V_public = (x, A, I_0) (paper eq. 1), framework-neutral.

This is all a blueprint compiler may see: the messages addressed to the agent before it
first acts, the tool schemas as the agent receives them, and the initial database
headers. Frameworks produce it (see ``dynsteer_hook.toolsandbox.scenario_view``).
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from dynsteer_hook.model.blueprint import ToolSpec


class PublicMessage(BaseModel):
    """A message the agent sees before it first acts."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    role: str = Field(description="'system' or 'user'.")
    content: str


class TaskView(BaseModel):
    """What a blueprint compiler may see of a task."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    task: str
    messages: tuple[PublicMessage, ...]
    tools: tuple[ToolSpec, ...] = Field(description="Agent-facing tool schemas, sorted by name.")
    databases: dict[str, dict[str, str]] = Field(description="Initial database headers: table -> column -> type.")

    def digest(self) -> str:
        """SHA-256 of the canonical JSON form (the blueprint cache key)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
