"""Imported before ``tool_sandbox``: silences the warning its langchain import prints on every start.

ToolSandbox imports ``langchain_core.pydantic_v1``, which warns under langchain-core 0.3.
langchain_core re-enables its warnings when it is imported, so the filter goes in after
that import.
"""

import warnings

import langchain_core  # noqa: F401

warnings.filterwarnings("ignore", message=r"As of langchain-core 0\.3\.0")
