"""llama.cpp's OpenAI-compatible server with the bounded tool-calling chat format, from a checkout as before: the server
is ``dynsteer_hook.llm.llama_server`` (``python -m dynsteer_hook.llm.llama_server`` works from any directory)."""

from __future__ import annotations

import sys

from dynsteer_hook.llm.llama_server import DEFAULT_MAX_TOKENS, FORMAT, SMOLLM2, bounded_function_calling, main, smollm2

__all__ = ["DEFAULT_MAX_TOKENS", "FORMAT", "SMOLLM2", "bounded_function_calling", "main", "smollm2"]

if __name__ == "__main__":
    sys.exit(main())
