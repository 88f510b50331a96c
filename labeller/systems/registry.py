"""Candidate files and the registry of system kinds: one line per kind, one module per kind.

A candidate file (TOML) names the system under test and records its configuration as given::

    name = "search-v2"
    kind = "http"                     # callable | runfile | http | mcp
    retrieval_unit = "document"       # document | chunk: what its result ids are
    ingestion_cost = 41.5             # optional: what building its index cost (reported apart)
    [configuration]                   # recorded with every result, never interpreted
    index = "invoices-2026-11-30"
    chunking = "none"
    [system]                          # the kind's own settings (see each module)
    url = "http://127.0.0.1:8080/search"
    [change_hook]                     # optional: how to revoke or delete for the revocation gate
    url = "http://127.0.0.1:8080/admin/change"
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labeller.errors import BadInputError
from labeller.io.tomlfile import read_toml
from labeller.systems.base import SystemUnderTest

# kind -> module under labeller.systems with `Settings` (a pydantic model) and `open_system(settings, base_dir)`.
SYSTEMS: dict[str, str] = {
    "callable": "labeller.systems.callable",
    "runfile": "labeller.systems.runfile",
    "http": "labeller.systems.http",
    "mcp": "labeller.systems.mcp",
}


class ChangeHookSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    callable: str | None = None  # "package.module:function", called as f(action=, doc_id=, user=, groups=)
    url: str | None = None  # POSTed {"action", "doc_id", "user", "groups"}
    auth_env: str | None = None  # environment variable holding the hook's auth header value
    post_change_run: str | None = None  # run files: the run made after the change


class CandidateSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    kind: Literal["callable", "runfile", "http", "mcp"]
    retrieval_unit: Literal["document", "chunk"] = "document"
    ingestion_cost: float | None = Field(default=None, ge=0)
    configuration: dict[str, Any] = {}
    system: dict[str, Any] = {}
    change_hook: ChangeHookSpec | None = None
    path: str = ""  # where it was read from (set by read_candidate)


def pydantic_error(exc: ValidationError, path: str | Path, prefix: str = "",
                   line_of: Any = None) -> BadInputError:
    """The first validation error as a BadInputError naming the file, line (when known) and field."""
    first = exc.errors()[0]
    loc = [str(p) for p in first["loc"]]
    field = ".".join([prefix, *loc] if prefix else loc) or None
    kind = first["type"]
    message = "unknown field; not part of the format" if kind == "extra_forbidden" else first["msg"]
    message = message.removeprefix("Value error, ")
    if kind == "missing":
        message = "required field is missing"
    got = first.get("input")
    if kind not in ("missing", "extra_forbidden") and not isinstance(got, (dict, list)):
        message += f" (got {got!r})"
    line = line_of(first["loc"]) if line_of else None
    return BadInputError(message, path=str(path), line=line, field=field)


def read_candidate(path: str | Path) -> CandidateSpec:
    raw = read_toml(path, what="candidate file")
    try:
        spec = CandidateSpec.model_validate({**raw, "path": str(path)})
    except ValidationError as exc:
        raise pydantic_error(exc, path) from None
    module = importlib.import_module(SYSTEMS[spec.kind])
    try:
        module.Settings.model_validate(spec.system)
    except ValidationError as exc:
        raise pydantic_error(exc, path, prefix="system") from None
    return spec


def open_system(spec: CandidateSpec) -> SystemUnderTest:
    """Build the candidate's system; relative paths in [system] are relative to its file."""
    module = importlib.import_module(SYSTEMS[spec.kind])
    settings = module.Settings.model_validate(spec.system)
    base = Path(spec.path).parent if spec.path else Path.cwd()
    return module.open_system(settings, base, spec.name)
