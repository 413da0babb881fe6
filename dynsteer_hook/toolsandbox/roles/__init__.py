"""Agent and user roles: ToolSandbox's own by the names its CLI uses (``named``), scripted ones for tests and
demos (``scripted``), and any model litellm reaches (``litellm_roles``)."""

from dynsteer_hook._moved import moved_names

__getattr__ = moved_names(__name__)  # the old module's names, for one release
