"""The Jinja2 environments of the report pages: the package's templates, every value autoescaped, compiled once per machine.

Compiling the templates costs a process about a quarter of a second (more than rendering a page),
so their compiled form is kept, as Python keeps ``__pycache__``, in the user's cache folder
(``$XDG_CACHE_HOME/dynsteer-hook/templates``, else ``~/.cache/...``). Jinja2 checks each entry
against the template's source and recompiles a stale or broken one. The folder is used only when
it belongs to the user and nobody else may write to it; a folder that cannot be made or written
only means compiling again, never a failed page.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynsteer_hook.files.cache import CACHE_VARIABLE, private_folder, read_entry

if TYPE_CHECKING:
    import jinja2

__all__ = ["CACHE_VARIABLE", "environment"]


MAX_TEMPLATE_BYTES = 16 * 2**20
"""Largest compiled template read back (the largest is some tens of kilobytes)."""


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    import jinja2

    class QuietCache(jinja2.FileSystemBytecodeCache):
        """Jinja2's file cache, whose faults (a full disk, a read-only or vanished folder, a torn entry) are only misses."""

        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                # Jinja2's own loader opens the entry as it finds it: a pipe put there would hold the page forever.
                data, _ = read_entry(Path(self._get_cache_filename(bucket)), MAX_TEMPLATE_BYTES)
                bucket.bytecode_from_string(data)
            except Exception:  # a missing, refused or broken entry is a miss: the template is compiled again
                bucket.reset()

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            with contextlib.suppress(OSError):  # not kept: the next process compiles the template again
                super().dump_bytecode(bucket)

    folder = private_folder("templates")
    return None if folder is None else QuietCache(str(folder))


@functools.cache
def environment(*, keep_trailing_newline: bool = False) -> jinja2.Environment:
    """The report templates (package data under ``report/templates``), autoescaped, strict about undefined names."""
    import jinja2

    options: dict[str, Any] = {"keep_trailing_newline": keep_trailing_newline}
    return jinja2.Environment(loader=jinja2.PackageLoader("dynsteer_hook.report", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              auto_reload=False,  # package data: never changes while the process runs
                              bytecode_cache=_bytecode_cache(), **options)
