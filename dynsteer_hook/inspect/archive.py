"""An Inspect ``.eval`` log checked as a zip archive before Inspect reads it: a regular file whose every member inflates
to at most ``MAX_MEMBER_BYTES``, exactly to the size it declares, with the checksum it declares.

Inspect reads a member by inflating all of its compressed bytes at once, trusting the archive: a 2 MB log whose sample
inflates to 2 GiB takes gigabytes of memory and ends in a ``MemoryError``, and a pipe named ``x.eval`` is waited on
forever. ``check_archive`` opens the file without blocking, refuses anything but a regular file, and inflates each
member once in bounded chunks (deflate or Zstandard, a megabyte at a time, stopping as soon as a member passes its limit or its declared
size), so the members it passes inflate in Inspect to what they declare. It returns the members that fail, with the
reason, so that one bad sample is skipped and the others are replayed.
"""

from __future__ import annotations

import os
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from dynsteer_hook.model.errors import DynsteerError

MAX_MEMBER_BYTES = 256 * 2**20
"""Most bytes one member of a log (a sample, the header) may inflate to."""
ZIP_ZSTD = 93
"""The zip method number of Zstandard, which Inspect writes its members with (besides deflate and stored)."""
_CHUNK = 2**20
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")


class ArchiveError(DynsteerError):
    """The log as a whole cannot be read; the message completes "<log> ..." (one sentence)."""


def _open_regular(path: Path) -> BinaryIO:
    """The file for reading, opened without blocking on a pipe; anything but a regular file is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ArchiveError(f"cannot be opened ({exc.strerror or exc})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ArchiveError("is a pipe, a device or a socket, not a file; pass a .eval file Inspect wrote")
    return os.fdopen(fd, "rb")


def _data_start(handle: BinaryIO, info: zipfile.ZipInfo) -> int:
    handle.seek(info.header_offset)
    header = handle.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise ValueError("its local header is damaged")
    name_len, extra_len = _LOCAL_HEADER.unpack(header)[-2:]
    return int(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)


class _Compressed:
    """The compressed bytes of one member as a file to read from (what the zstd reader takes), never past its end."""

    def __init__(self, handle: BinaryIO, start: int, size: int) -> None:
        self._handle, self._left = handle, size
        handle.seek(start)

    def read(self, n: int = -1) -> bytes:
        n = self._left if n < 0 else min(n, self._left, _CHUNK)
        data = self._handle.read(n)
        self._left -= len(data)
        return data


def _chunks(handle: BinaryIO, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The member inflated, a megabyte or less at a time (the caller stops reading when it has seen enough)."""
    source = _Compressed(handle, _data_start(handle, info), info.compress_size)
    if info.compress_type == zipfile.ZIP_STORED:
        while chunk := source.read(_CHUNK):
            yield chunk
    elif info.compress_type == ZIP_ZSTD:
        import zstandard  # Inspect's own dependency (the inspect extra): how it compresses the members it writes

        reader = zstandard.ZstdDecompressor().stream_reader(source, read_across_frames=True)  # type: ignore[arg-type]  # any object with read()
        while chunk := reader.read(_CHUNK):
            yield chunk
    else:
        inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        while data := source.read(_CHUNK):
            while data:
                yield inflate.decompress(data, _CHUNK)
                data = inflate.unconsumed_tail
        if not inflate.eof:
            raise ValueError("its compressed data ends early")


def _inflated(handle: BinaryIO, info: zipfile.ZipInfo, limit: int) -> tuple[int, int]:
    """How many bytes the member inflates to (counting stops just past ``limit``: no more is ever inflated) and their CRC-32."""
    size, crc = 0, 0
    for chunk in _chunks(handle, info):
        size += len(chunk)
        crc = zlib.crc32(chunk, crc)
        if size > limit:
            break
    return size, crc


def _member_problem(handle: BinaryIO, info: zipfile.ZipInfo, limit: int) -> str | None:
    """Why one member cannot be handed to Inspect, or None."""
    if info.file_size > limit:
        return f"declares {info.file_size:,} bytes inflated, more than the {limit // 2**20} MiB a member may have"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, ZIP_ZSTD):
        return f"is compressed with method {info.compress_type}, which Inspect does not write"
    try:
        size, crc = _inflated(handle, info, info.file_size)  # never past what it declares, itself within the limit
    except Exception as exc:  # zlib.error, OSError, our ValueError, zstandard.ZstdError (an Exception only): damaged data
        return f"is damaged ({str(exc)[:160] or type(exc).__name__})"
    if size > info.file_size:
        return f"inflates to more than the {info.file_size:,} bytes it declares (a zip bomb, or a damaged archive)"
    if size != info.file_size or crc != info.CRC:
        return f"is damaged (it inflates to {size:,} bytes, or with another checksum, than the {info.file_size:,} it declares)"
    return None


def check_archive(path: Path, limit: int = MAX_MEMBER_BYTES) -> dict[str, str]:
    """The members of the log that cannot be read, each with the reason (a clause completing "member <name> ...").

    Raises:
        ArchiveError: The log is no regular file or no zip archive at all.
    """
    with _open_regular(path) as handle:
        try:
            members = zipfile.ZipFile(handle).infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
            raise ArchiveError(f"is not a whole zip archive ({str(exc)[:200] or type(exc).__name__}); it is truncated or no Inspect log") from None
        problems: dict[str, str] = {}
        for info in members:
            problem = _member_problem(handle, info, limit)
            if problem is not None:
                problems[info.filename] = problem
        return problems
