"""The user's cache folders: where work that every process would repeat is kept between processes.

Each is a subfolder of ``$XDG_CACHE_HOME/dynsteer-hook`` (else ``~/.cache/dynsteer-hook``; a relative
``XDG_CACHE_HOME`` is ignored, as the XDG Base Directory rules say, since it would name a folder that
changes with the working directory) and is used only when it belongs to the user and nobody else may
write to it: what is read back from it (compiled templates, ToolSandbox's built scenarios) is trusted
as the user's own files are. A folder that cannot be made or is not private is ``None``: the caller
does the work again.

An entry of a cache (these folders, or the judge cache a flag names) is read with ``read_entry``:
opened without following a link and without blocking, and read only when it is a regular file of
bounded size. A pipe put in an entry's place would otherwise hold the command forever, and a link to
``/dev/zero`` would be read until memory runs out.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

CACHE_VARIABLE = "XDG_CACHE_HOME"


class EntryRefusedError(OSError):
    """A cache entry that is no regular file of bounded size (its message says what it is instead)."""


def cache_folder(name: str) -> Path:
    """The cache folder ``name`` (not made)."""
    base = os.environ.get(CACHE_VARIABLE, "")
    if not os.path.isabs(base):  # unset, empty or relative: the XDG default
        base = str(Path.home() / ".cache")
    return Path(base) / "dynsteer-hook" / name


def read_entry(path: Path, limit: int) -> tuple[bytes, os.stat_result]:
    """The bytes of a cache entry and its status, read only when it is a regular file of at most ``limit`` bytes.

    Raises:
        FileNotFoundError: There is no entry (a miss).
        EntryRefusedError: It is a link, a pipe, a device or a folder, or larger than ``limit``.
        OSError: It cannot be read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link
            raise EntryRefusedError(errno.ELOOP, "a symbolic link, which no cache entry is") from None
        raise
    info = os.fstat(fd)  # of what was opened, not of what the name pointed to a moment before
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise EntryRefusedError(errno.EINVAL, "a pipe, a device or a folder, not a file")
        raise EntryRefusedError(errno.EFBIG, f"{info.st_size:,} bytes, more than the {limit:,} an entry may have")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)  # a file growing while it is read is still read within the limit
    if len(data) > limit:
        raise EntryRefusedError(errno.EFBIG, f"more than the {limit:,} bytes an entry may have")
    return data, info


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
