"""Blueprint quality (paper Table 2): compiled blueprints against the expert reference derived from ToolSandbox's
hidden milestones and minefields (``blueprint_eval``, ``reference``), on a development / held-out split (``split``)."""
