"""ToolSandbox integration: the only subpackage that imports ``tool_sandbox``.

Public view extraction, the loop middleware, the scenario runner, scripted roles.
"""

import warnings

# ToolSandbox imports langchain_core.pydantic_v1, which warns on every import under
# langchain-core 0.3. langchain_core re-enables its warnings when imported, so the filter
# goes in after that import.
import langchain_core  # noqa: F401

warnings.filterwarnings("ignore", message=r"As of langchain-core 0\.3\.0")
