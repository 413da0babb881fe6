"""Imported before ``tool_sandbox``: keeps ToolSandbox's import and its rollouts from writing to the console.

ToolSandbox imports ``langchain_core.pydantic_v1``, which warns under langchain-core 0.3.
langchain_core re-enables its warnings when it is imported, so the filter goes in after
that import. ToolSandbox draws a tqdm bar per rollout (``Scenario.play``); a run shows one
bar over all its scenarios instead (``live.progress``), so the module's ``tqdm`` makes
disabled bars, which still count the turns ToolSandbox reads back.
"""

import functools
import warnings

import langchain_core  # noqa: F401
from tqdm import tqdm

warnings.filterwarnings("ignore", message=r"As of langchain-core 0\.3\.0")

import tool_sandbox.common.scenario as _scenario  # noqa: E402 - after the filter above

_scenario.tqdm = functools.partial(tqdm, disable=True)
