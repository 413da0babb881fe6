"""The user's cache folders: where work that every process would repeat is kept between processes.

Each is a subfolder of ``$XDG_CACHE_HOME/dynsteer-hook`` (else ``~/.cache/dynsteer-hook``) and is
used only when it belongs to the user and nobody else may write to it: what is read back from it
(compiled templates, ToolSandbox's built scenarios) is trusted as the user's own files are. A
folder that cannot be made or is not private is ``None``: the caller does the work again.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

CACHE_VARIABLE = "XDG_CACHE_HOME"


def cache_folder(name: str) -> Path:
    """The cache folder ``name`` (not made)."""
    base = os.environ.get(CACHE_VARIABLE) or str(Path.home() / ".cache")
    return Path(base) / "dynsteer-hook" / name


def owned_privately(info: os.stat_result) -> bool:
    """Whether an entry belongs to this user and only this user may write to it."""
    owner = getattr(os, "getuid", lambda: info.st_uid)()
    return info.st_uid == owner and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def private_folder(name: str) -> Path | None:
    """The cache folder ``name``, made if missing, when it is a real folder of this user that nobody else may write to."""
    try:
        folder = cache_folder(name)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.lstat()
    except (OSError, RuntimeError, KeyError):  # no home folder to be found, or none to be made
        return None
    return folder if stat.S_ISDIR(info.st_mode) and owned_privately(info) else None
