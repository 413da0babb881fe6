"""Folder names made from names that come from inputs: scenario names, sample ids, epochs, agent names, record files.

A name from an input is hostile until made safe: ``../../x``, an absolute path, a newline, markup, a
name that differs from another only in case (one folder on a case-insensitive disk) or a name of a
thousand characters would each write somewhere the user did not ask for, or not at all. Every writer
that builds a folder from such a name goes through ``NameBook.claim`` (or ``safe_name`` where one name
is all there is), which keeps a safe name as it is (ToolSandbox's scenario names, ``0000-0010``) and
turns any other into letters, digits, ``.``, ``_`` and ``-`` with a short digest of the original, so
two different names never share a folder.

Reading goes the other way: a file looked up by an input's name (``<blueprints>/<sample id>.json``, a
recording's ``trajectories/<scenario>``) is looked up only when the name is one entry of that folder
(``is_entry_name``), never ``..``, an absolute path or a path with a separator.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["MAX_NAME", "NameBook", "is_entry_name", "is_safe_name", "name_part", "safe_name"]

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


def is_entry_name(name: str) -> bool:
    """Whether ``name`` can only name an entry of the folder it is joined to: not empty, not ``.`` or ``..``, and without a
    separator or a NUL (which no file system takes), so that ``folder / name`` never leaves ``folder``."""
    return name not in ("", ".", "..") and not any(c in name for c in ("/", "\\", "\0"))


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


def name_part(text: str, limit: int = 40) -> str:
    """``text`` as one part of a longer folder name (a model string in a run folder's name): letters, digits, ``.``,
    ``_`` and ``-``, every other run of characters one ``_``, at most ``limit`` characters (``ollama/llama3:8b`` ->
    ``ollama_llama3_8b``). The whole name still goes through ``safe_name``; this only keeps it readable."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _UNSAFE_RUN.sub("_", folded).strip("._-")[:limit] or "model"


class NameBook:
    """Safe, unique folder names for the names of one output folder.

    The same name always gets the same folder; two names never share one, not even names equal but for case
    (which a case-insensitive disk would merge) or names whose safe forms collide.
    """

    __slots__ = ("_by_name", "_taken")

    def __init__(self, taken: set[str] | None = None) -> None:
        self._by_name: dict[str, str] = {}
        self._taken: set[str] = {t.casefold() for t in taken or ()}

    def claim(self, name: object, key: object = None) -> str:
        """The folder name of ``name`` in this book (made and kept on first use).

        Args:
            name: What the folder is named after.
            key: What tells two claims apart when it is not the name itself (two runs of one name from two places get
                two folders; the first keeps the name when it is safe).
        """
        text = name if isinstance(name, str) else str(name)
        ident = text if key is None else key if isinstance(key, str) else str(key)
        if ident in self._by_name:
            return self._by_name[ident]
        folder = safe_name(text)
        if folder.casefold() in self._taken:
            base = folder[: MAX_NAME - 15]
            folder = f"{base}-{_digest(ident)}"
            n = 2
            while folder.casefold() in self._taken:
                folder = f"{base}-{_digest(ident)}-{n}"
                n += 1
        self._taken.add(folder.casefold())
        self._by_name[ident] = folder
        return folder
