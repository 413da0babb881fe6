"""Agent and user roles: ToolSandbox's own by the names its CLI uses (``named``), scripted ones for tests and
demos (``scripted``), and any model litellm reaches (``litellm_roles``)."""
