"""ToolSandbox integration: the only subpackage that imports ``tool_sandbox``, sorted by what each part is for.

``live/`` is dynsteer inside ToolSandbox's loop: the hook, the middleware that feeds it, playing
and running scenarios, the engines and Ctrl-C handling, the checks before a run. ``roles/`` are
the agents and users it can play (ToolSandbox's own by name, scripted, any litellm model).
``offline/`` reads recorded runs back, replays them and compares agents. ``quality/`` measures
compiled blueprints against ToolSandbox's hidden reference. ``commands/`` are the ToolSandbox
side of the ``dynsteer`` command line, which imports ToolSandbox only when a command runs.
Beside them, what every part uses: the scenarios (``scenarios``), their public view
(``scenario_view``), the tool-call gate (``calls``) and ToolSandbox's own similarity of a played
rollout, within a budget (``similarity``).
"""
