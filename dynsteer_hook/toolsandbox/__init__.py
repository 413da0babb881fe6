"""ToolSandbox integration: the only subpackage that imports ``tool_sandbox``.

Public view extraction, the loop middleware, the scenario runner, scripted roles. The
command-line registration in ``cli`` imports ToolSandbox only when a command runs.
"""
