"""Tests marked ``unprivileged`` run as a user bound by permission bits, even when the suite runs as root.

Root ignores permission bits through two capabilities, CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH.
Linux keeps capabilities per thread, so the test body runs in a thread of its own that drops both
(from its effective and permitted sets, which ``access`` consults for root) and ends with them:
the test still runs as uid 0 and owns the files it creates, a read-only folder is really read-only
to it, and the rest of the session keeps its powers (fixtures, clean-up). Elsewhere than as root
the mark changes nothing.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

import pytest

_CAPABILITY_VERSION_3 = 0x20080522
_PERMISSION_BYPASS = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_permission_bypass() -> None:
    """Drop, in the calling thread only, root's power to ignore permission bits (capset(2) acts on one thread)."""
    libc = ctypes.CDLL(None, use_errno=True)
    header = _Header(_CAPABILITY_VERSION_3, 0)
    data = (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    for d in data:
        d.effective &= ~_PERMISSION_BYPASS
        d.permitted &= ~_PERMISSION_BYPASS
        d.inheritable &= ~_PERMISSION_BYPASS
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def call_unprivileged(item: pytest.Function) -> None:
    """Call the test function of ``item`` in a thread without root's permission bypass; its exception, if any, is raised here."""
    args = {name: item.funcargs[name] for name in item._fixtureinfo.argnames}
    failure: list[BaseException] = []

    def body() -> None:
        try:
            drop_permission_bypass()
            item.obj(**args)
        except BaseException as exc:  # handed to the main thread, which reports it as the test's own
            failure.append(exc)

    thread = threading.Thread(target=body, name=f"unprivileged {item.name}")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def pyfunc_call(item: pytest.Function) -> Any:
    """The ``pytest_pyfunc_call`` hook's work: True when the test ran here (marked, as root), None to let pytest call it."""
    if item.get_closest_marker("unprivileged") is None or not as_root():
        return None
    call_unprivileged(item)
    return True
