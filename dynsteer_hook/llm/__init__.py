"""Language models, reached through litellm: the one place that talks to them.

The client (``client``) with its transport (``transport``: deadlines, retries, error kinds) and
its answers (``completion``), the parsing of an answer into a validated object (``output``),
how one model is configured for any role (``settings``), and, for each part of the method that
asks a model, the piece that asks: LLM candidate graphs for the compiler (``candidates``), the
Tier 2/3 judges built on a client (``judges``) and their answers kept on disk (``cache``).
"""

from dynsteer_hook._moved import moved_names

__getattr__ = moved_names(__name__)  # the old module's names, for one release
