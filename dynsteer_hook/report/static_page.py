"""What every static page of rows shares (the run page, the diff page): JSON that cannot leave the script block it travels
in, a page script with the CSP hash that alone allows it to run, and a first error in words.

Kept apart from the pages themselves so that a command which writes one page imports only what that page needs (the
run page's module reaches the report records and their judges, a third of a second to import).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

__all__ = ["embed_json", "error_words", "page_script"]


def error_words(fe: Mapping[str, Any] | None) -> str:
    """A first error as one line: the step on both clocks, its stage, the dimension it cost, its cause and detail."""
    if not fe:
        return ""
    head = f"step t={fe['t']} (event k={fe['k']})"
    if fe.get("stage"):
        head += f", stage {fe['stage']}"
    what = ": ".join(str(x) for x in (fe.get("dimension"), fe.get("cause")) if x)
    text = f"{head}; {what}" if what else head
    return f"{text} ({fe['detail']})" if fe.get("detail") else text


def embed_json(data: Any) -> str:
    """JSON text safe inside ``<script type="application/json">``: no ``</script>``, ``<!--`` or line separator can
    end or change the block (``<``, ``>`` and ``&`` are written as escapes, which JSON reads back unchanged)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


@functools.cache
def page_script(name: str = "run_page.js") -> tuple[str, str]:
    """A page's script (a file of the templates) and its CSP hash (the only script the page may run)."""
    text = resources.files("dynsteer_hook.report").joinpath("templates").joinpath(name).read_text(encoding="utf-8")
    return text, "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
