"""Folder names made from names that come from inputs: scenario names, sample ids, epochs, agent names, record files.

A name from an input is hostile until made safe: ``../../x``, an absolute path, a newline, markup, a
name that differs from another only in case (one folder on a case-insensitive disk) or a name of a
thousand characters would each write somewhere the user did not ask for, or not at all. Every writer
that builds a folder from such a name goes through ``NameBook.claim`` (or ``safe_name`` where one name
is all there is), which keeps a safe name as it is (ToolSandbox's scenario names, ``0000-0010``) and
turns any other into letters, digits, ``.``, ``_`` and ``-`` with a short digest of the original, so
two different names never share a folder.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["MAX_NAME", "NameBook", "is_safe_name", "safe_name"]

MAX_NAME = 120
"""Characters a folder name may have (well under the 255 bytes of common file systems)."""
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")
_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))})


def is_safe_name(name: str) -> bool:
    """Whether ``name`` is a folder name as it stands: ASCII letters, digits, ``.``, ``_``, ``-``, not starting with a
    dot or a dash, not ending with a dot, within ``MAX_NAME``, and not a device name some systems reserve."""
    return (
        0 < len(name) <= MAX_NAME
        and _SAFE.fullmatch(name) is not None
        and not name.endswith(".")
        and name.split(".", 1)[0].casefold() not in _RESERVED
    )


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def safe_name(name: object) -> str:
    """A safe folder name for ``name`` (any value; ``str`` of it is used): the name itself when it is safe, else its
    letters and digits (accents dropped, every other run of characters one ``_``), clipped, and a digest of the whole
    original, so the result is never empty, never a path and never the same for two different names."""
    text = name if isinstance(name, str) else str(name)
    if is_safe_name(text):
        return text
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    stem = _UNSAFE_RUN.sub("_", folded).strip("._-")[: MAX_NAME - 12].rstrip("._-")
    made = f"{stem}-{_digest(text)}"
    return made if stem and is_safe_name(made) else f"name-{_digest(text)}"


class NameBook:
    """Safe, unique folder names for the names of one output folder.

    The same name always gets the same folder; two names never share one, not even names equal but for case
    (which a case-insensitive disk would merge) or names whose safe forms collide.
    """

    __slots__ = ("_by_name", "_taken")

    def __init__(self, taken: set[str] | None = None) -> None:
        self._by_name: dict[str, str] = {}
        self._taken: set[str] = {t.casefold() for t in taken or ()}

    def claim(self, name: object) -> str:
        """The folder name of ``name`` in this book (made and kept on first use)."""
        key = name if isinstance(name, str) else str(name)
        if key in self._by_name:
            return self._by_name[key]
        folder = safe_name(key)
        if folder.casefold() in self._taken:
            base = folder[: MAX_NAME - 15]
            folder = f"{base}-{_digest(key)}"
            n = 2
            while folder.casefold() in self._taken:
                folder = f"{base}-{_digest(key)}-{n}"
                n += 1
        self._taken.add(folder.casefold())
        self._by_name[key] = folder
        return folder
