"""Where a model is reached and with which key: an endpoint as reports may show it, and the key a
named environment variable holds. Keys never travel in settings or reports."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from dynsteer_hook.model.errors import ConfigError

LOCAL_PLACEHOLDER_KEY = "no-key"
"""Sent to a custom ``api_base`` when no key is configured: local servers ignore it."""


def endpoint_without_secrets(url: str | None) -> str | None:
    """The endpoint as a report may show it: scheme, host, port and path; no user, password, query or fragment.

    Keys sometimes ride in an endpoint (``https://user:key@host/v1``, ``...?api_key=...``); none of that is kept.
    """
    if not url:
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # not a URL (a malformed port): keep only what cannot be a secret
        return "(unreadable endpoint)"
    if not parts.scheme or not host:
        return "(unreadable endpoint)"
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def api_key_from_env(variable: str | None, flag: str) -> str | None:
    """The API key held in ``variable`` (None when no variable is named).

    Raises:
        ConfigError: The variable is named but not set (``flag`` is the option that named it).
    """
    if not variable:
        return None
    key = os.environ.get(variable)
    if not key:
        raise ConfigError(f"environment variable {variable} (from {flag}) is not set; export it or drop the flag")
    return key
