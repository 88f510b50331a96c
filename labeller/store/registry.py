"""open_store(spec): a directory path or a URL with a scheme, to the backend that serves it.

A string with a scheme (``name://...``) is never a directory: ``postgresql://`` and ``postgres://``
open the PostgreSQL store, any other scheme is an error (exit 2). Anything else is a directory.
A new backend is one file beside directory.py and postgres.py and one line in BACKENDS.
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from labeller.errors import BadInputError
from labeller.store.base import VerdictStore

DEFAULT_STORE = ".labeller-cache"
ENV_VAR = "LABELLER_CACHE"
BACKENDS = {  # scheme -> "module:class"
    "postgresql": "labeller.store.postgres:PostgresStore",
    "postgres": "labeller.store.postgres:PostgresStore",
}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def scheme_of(spec: str | Path) -> str | None:
    """The URL scheme of a store spec, or None for a directory."""
    match = _SCHEME.match(str(spec)) if isinstance(spec, str) else None
    return match.group(1).lower() if match else None


def is_url(spec: str | Path | None) -> bool:
    return spec is not None and scheme_of(spec) is not None


def redact_url(spec: str | Path) -> str:
    """The spec as it may be shown: a URL's password (in the netloc or a password= query) becomes ***."""
    text = str(spec)
    if not is_url(text):
        return text
    parts = urlsplit(text)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        netloc = f"{user}:***@{hostport}" if ":" in userinfo else f"{user}@{hostport}"
    query = re.sub(r"(?i)(^|&)(password)=[^&]*", r"\1\2=***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def default_spec() -> str:
    """The store to use when none is given: $LABELLER_CACHE, else .labeller-cache."""
    return os.environ.get(ENV_VAR) or DEFAULT_STORE


def check_spec(spec: str | Path) -> str | None:
    """The backend entry for a spec (None for a directory); an unknown scheme is BadInputError. Connects to nothing."""
    scheme = scheme_of(spec)
    if scheme is not None and scheme not in BACKENDS:
        known = ", ".join(f"{s}://" for s in BACKENDS)
        raise BadInputError(f"unknown store scheme '{scheme}://'; expected a directory or one of: {known}",
                            path=redact_url(spec))
    return None if scheme is None else BACKENDS[scheme]


def open_store(spec: str | Path | None = None, *, create: bool = True) -> VerdictStore:
    """Open the store `spec` names (default: default_spec()). create=False refuses to start an empty one."""
    spec = default_spec() if spec is None or str(spec) == "" else spec
    backend = check_spec(spec)
    if backend is None:
        from labeller.store.directory import DirectoryStore

        return DirectoryStore(spec, create=create)
    module, _, name = backend.partition(":")
    return getattr(importlib.import_module(module), name)(str(spec), create=create)
