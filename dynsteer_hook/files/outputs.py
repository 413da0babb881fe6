"""Output files that survive faults: atomic replacement, files renamed into place together,
an append-only JSON-lines log that never holds a torn record, and checks that an output
place can be written before anything is opened.

Temporary files are created with mode 0666 minus the process umask, so a replaced file
gets the mode any new file would get. A failed write (a full disk, a file-size limit)
never leaves a partial line or a temporary file behind.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import signal
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from dynsteer_hook.model.errors import OutputError
from dynsteer_hook.model.json_text import finite_value

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def temp_sibling(path: Path) -> Path:
    """A fresh hidden name beside ``path`` for its next version."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def reason(exc: OSError) -> str:
    """The operating system's words for an I/O error, without the errno prefix."""
    return exc.strerror or str(exc)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:  # a device that takes nothing is as full as a full disk
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[n:]


def _write_new(path: Path, data: bytes, durable: bool) -> None:
    # os.open applies the umask to 0o666, as open() does for any new file (mkstemp would give 0600).
    fd = os.open(path, _NEW_FILE, 0o666)
    try:
        _write_all(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold back Ctrl-C while a group of files is renamed, then deliver it.

    Only the main thread receives signals in Python; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[tuple[int, FrameType | None]] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append((signum, frame)))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if pending and callable(previous):
            previous(*pending[0])


class StagedFiles:
    """Files written beside their targets, then renamed into place together.

    Until ``commit`` the targets are untouched; ``discard`` (or leaving the ``with`` block
    with an exception) removes every temporary file.

    Args:
        durable: Sync each file to the disk before it is renamed in, so that it survives a power cut too. A killed
            process never leaves a torn file either way (the rename is atomic); the per-rollout files of a run are
            written without it, since a sync per file was most of what report writing cost a run.
    """

    def __init__(self, *, durable: bool = True) -> None:
        self._pending: list[tuple[Path, Path]] = []
        self._durable = durable

    def text(self, path: str | Path, text: str) -> None:
        """Stage ``text`` (UTF-8) as the next content of ``path``."""
        target = Path(path)
        tmp = temp_sibling(target)
        try:
            _write_new(tmp, text.encode("utf-8"), self._durable)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self._pending.append((tmp, target))

    def adopt(self, tmp: Path, path: str | Path) -> None:
        """Stage an already written temporary file as the next version of ``path``."""
        self._pending.append((Path(tmp), Path(path)))

    def commit(self) -> None:
        """Rename every staged file over its target (Ctrl-C waits until all are in place)."""
        with deferred_interrupts():
            while self._pending:
                tmp, target = self._pending[0]
                os.replace(tmp, target)
                self._pending.pop(0)

    def discard(self) -> None:
        """Remove the staged temporary files; the targets keep their previous content."""
        for tmp, _ in self._pending:
            tmp.unlink(missing_ok=True)
        self._pending.clear()

    def __enter__(self) -> StagedFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


def write_text_atomic(path: str | Path, text: str, *, durable: bool = True) -> None:
    """Replace ``path`` with ``text`` atomically (the parent folder is created; ``durable``: see ``StagedFiles``)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with StagedFiles(durable=durable) as staged:
        staged.text(p, text)
        staged.commit()


def json_text(data: Any, **options: Any) -> str:
    """JSON text that is valid JSON: a float that is no finite number (NaN, infinity), which ``json.dumps`` would write as
    ``NaN`` or ``Infinity``, is written as null (unknown), whatever input it came from (``default=str`` as everywhere)."""
    try:
        return json.dumps(data, allow_nan=False, default=str, **options)
    except ValueError:  # only a non-finite float reaches this: the rare case pays for the copy
        return json.dumps(finite_value(data), allow_nan=False, default=str, **options)


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write JSON (indented, UTF-8) atomically; a non-finite number is written as null (``json_text``)."""
    write_text_atomic(path, json_text(data, indent=2, ensure_ascii=False) + "\n")


class JsonlSink:
    """Appends one JSON record per line; a record is on disk whole or not at all.

    Each line is written with ``os.write`` straight to the file (a killed process leaves
    complete lines). When a write fails (a full disk, a file-size limit) the partial line
    is cut off again, the error is kept, and later records are counted but not written:
    the log stays a clean prefix and the caller is never interrupted.

    Attributes:
        path: The file written.
        records: Records written whole.
        error: Why writing stopped, or ``None``.
        dropped: Records not written after the error.
    """

    def __init__(self, path: str | Path, *, truncate: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | (os.O_TRUNC if truncate else 0)
        self._fd: int | None = os.open(self.path, flags, 0o666)
        self._size = os.fstat(self._fd).st_size
        self.records = 0
        self.error: str | None = None
        self.dropped = 0

    @classmethod
    def broken(cls, path: str | Path, error: str) -> JsonlSink:
        """A sink whose file could not even be created: every record is counted as not written."""
        sink = cls.__new__(cls)
        sink.path, sink._fd, sink._size = Path(path), None, 0
        sink.records, sink.error, sink.dropped = 0, error, 0
        return sink

    def write(self, record: dict[str, Any]) -> None:
        """Append one record (never raises for an I/O error; see ``error``)."""
        if self._fd is None or self.error is not None:
            self.dropped += 1
            return
        try:
            line = json_text(record, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError) as exc:
            line = json.dumps({"type": str(record.get("type", "?")), "unserialisable": f"{type(exc).__name__}: {exc}"[:300]})
        try:
            data = (line + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: escaped, so the line stays valid UTF-8 JSON
            data = (json_text(record, ensure_ascii=True) + "\n").encode("ascii")
        try:
            _write_all(self._fd, data)
        except OSError as exc:
            self._cut_back()
            self.error = reason(exc)
            self.dropped += 1
            return
        self._size += len(data)
        self.records += 1

    def _cut_back(self) -> None:
        assert self._fd is not None
        try:
            if stat.S_ISREG(os.fstat(self._fd).st_mode):
                os.ftruncate(self._fd, self._size)
        except OSError:
            pass  # truncating frees space, so this only fails on a broken device; nothing more can be done

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()



def open_log(path: str | Path) -> JsonlSink:
    """A fresh log at ``path``; one that cannot be created (a full disk) is a broken sink, recorded as missing from record 0."""
    try:
        return JsonlSink(path)
    except OSError as exc:
        return JsonlSink.broken(path, reason(exc))

def _first_existing(path: Path) -> Path:
    p = path.absolute()
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


def _kind(p: Path) -> str:
    if p.is_symlink() and not p.exists():
        return "a link to nowhere"
    return "a file" if p.is_file() else "a device or a pipe"


def check_output_dir(path: str | Path, flag: str, files: Iterable[str] = ()) -> None:
    """Check, writing nothing, that ``path`` can be (or already is) a writable folder.

    Args:
        path: The output folder.
        flag: The command-line flag that named it, for the message.
        files: Names of files that will be written inside it (each must not be a folder).

    Raises:
        OutputError: One sentence naming the place and the fix.
    """
    p = Path(path)
    fix = f"pass a writable directory path with {flag}"
    if os.path.lexists(p) and not p.is_dir():
        raise OutputError(f"{flag} {p} is {_kind(p)}, not a directory; {fix}")
    base = _first_existing(p)
    if not base.is_dir():
        raise OutputError(f"{flag} {p} cannot be created: {base} is {_kind(base)}, not a directory; {fix}")
    for name in files:
        target = p / name
        if os.path.lexists(target) and not target.is_file():
            kind = "a directory" if target.is_dir() else "not a regular file"
            raise OutputError(f"{target} is {kind}, where a file will be written; remove it or {fix}")
    try:
        # An unnamed file where supported: a probe that leaves nothing behind, and works as root
        # (permission bits do not stop root; a read-only or pseudo file system does).
        with tempfile.TemporaryFile(dir=base):
            pass
    except OSError as exc:
        raise OutputError(f"{flag} {p} cannot be written: creating a file in {base} fails ({reason(exc)}); {fix}") from None


def create_dir(path: str | Path, flag: str) -> Path:
    """Create ``path`` (and its parents) or raise one sentence saying why it cannot be."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{flag} {p} cannot be created ({reason(exc)}); pass a writable directory path with {flag}") from None
    return p


def claim_new_dir(path: str | Path, flag: str) -> Path:
    """Create a folder no other run uses: ``path``, or ``path_2``, ``path_3``... when it exists."""
    p = Path(path)
    create_dir(p.parent, flag)
    for n in range(1, 1000):
        candidate = p if n == 1 else p.with_name(f"{p.name}_{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(f"{flag} {candidate} cannot be created ({reason(exc)}); pass a writable directory path with {flag}") from None
        return candidate
    raise OutputError(f"{flag} {p.parent} already holds 999 runs named {p.name}; pass another directory with {flag}")


MAX_INPUT_ENTRIES = 200_000
"""Entries of input folders compared with an output file by identity before a command stops looking (and refuses)."""


def _identities(given: Path, seen_dirs: set[tuple[int, int]], budget: list[int]) -> Iterator[tuple[tuple[int, int], Path]]:
    """(device, inode) of ``given`` and, for a folder, of every file below it, links followed (each folder once)."""
    try:
        info = os.stat(given)
    except OSError:
        return
    yield (info.st_dev, info.st_ino), given
    if not stat.S_ISDIR(info.st_mode) or (info.st_dev, info.st_ino) in seen_dirs:
        return
    seen_dirs.add((info.st_dev, info.st_ino))
    try:
        entries = list(os.scandir(given))
    except OSError:
        return
    for entry in entries:
        budget[0] -= 1
        if budget[0] < 0:
            raise RecursionError("too many entries")  # as too deep: no answer within bounds
        yield from _identities(Path(entry.path), seen_dirs, budget)


def check_not_an_input(output: str | Path, inputs: Iterable[str | Path | None], flag: str) -> None:
    """Refuse an output file that is an input file or a file of an input folder by identity (device and inode), whatever
    path reaches it: a hard link to the events file, a link inside the blueprints folder. Appending to it would change
    what is read. (``check_apart`` compares paths; this compares files.)

    Raises:
        OutputError: One sentence naming the output, the input it is, and the fix.
    """
    try:
        info = os.stat(output)
    except OSError:
        return  # not there yet: a new file is no input
    wanted = (info.st_dev, info.st_ino)
    seen: set[tuple[int, int]] = set()
    budget = [MAX_INPUT_ENTRIES]
    try:
        for given in inputs:
            if given is None:
                continue
            for ident, path in _identities(Path(given), seen, budget):
                if ident == wanted:
                    raise OutputError(f"{flag} {output} is the input file {path} under another name (a link to it); writing to it would "
                                      f"change what is read, so pass a file that is no input with {flag}")
    except RecursionError:
        raise OutputError(f"{flag} {output} cannot be checked against the inputs (their folders nest too deeply or hold more than "
                          f"{MAX_INPUT_ENTRIES:,} entries); pass a new file outside them with {flag}") from None


def check_below(root: Path, folder: Path, flag: str, files: Iterable[str] = ()) -> None:
    """Refuse a folder a command will write in below its output folder ``root`` when it is, or passes through, a link or
    something other than a folder, or when one of the ``files`` to be appended to in it (logs: the others are renamed in,
    which replaces a link) is a link: a link planted there (to the recording being read, say) would take the writes
    elsewhere. Nothing is made.

    Raises:
        OutputError: One sentence naming the entry and the fix.
    """
    here = Path(root)
    for part in Path(folder).relative_to(root).parts:
        here = here / part
        if here.is_symlink():
            raise OutputError(f"{flag} {root}: {here} is a symbolic link (to {os.readlink(here)}), where a folder of the output "
                              f"will be written; writing through it would write outside {root}, so remove it or pass another {flag}")
        if os.path.lexists(here) and not here.is_dir():
            raise OutputError(f"{flag} {root}: {here} is {_kind(here)}, where a folder of the output will be written; remove it or "
                              f"pass another {flag}")
    for name in files:
        if (here / name).is_symlink():
            raise OutputError(f"{flag} {root}: {here / name} is a symbolic link (to {os.readlink(here / name)}), where a log of the "
                              f"output will be written; writing through it would write outside {root}, so remove it or pass another {flag}")


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a loop of links
        return path.absolute()


def check_apart(output: str | Path, inputs: Iterable[str | Path], flag: str, *, kind: str = "folder") -> None:
    """Refuse an output (a ``kind``: folder or file) that is, contains or lies inside one of the inputs (links
    resolved), since writing there would overwrite or mix with what is being read.

    Raises:
        OutputError: One sentence naming the output, the input and the fix.
    """
    out = _resolved(Path(output))
    for given in inputs:
        src = _resolved(Path(given))
        if out == src:
            how = "is"
        elif src.is_relative_to(out):
            how = "contains"
        elif out.is_relative_to(src):
            how = "lies inside"
        else:
            continue
        raise OutputError(f"{flag} {output} {how} the input {given}; writing there would overwrite or mix with what is "
                          f"read, so pass a {kind} outside every input with {flag}")
