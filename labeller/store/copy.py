"""copy_store: move verdicts from one store into another (a laptop cache into the team store, or back).

Only verdicts travel: leases, failures and batch records describe work in flight in the source.
Verdicts the target already holds are left alone, so a copy can be rerun or interrupted safely.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from labeller.store.registry import open_store

COPY_CHUNK = 2000  # verdicts read, looked up in the target and written per round trip


class CopyResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str  # passwords redacted
    target: str
    read: int
    copied: int
    already: int


def copy_store(src: str | Path, dst: str | Path) -> CopyResult:
    """Copy every verdict of `src` (which must exist) into `dst` (created if new)."""
    read = copied = 0
    with open_store(src, create=False) as source, open_store(dst) as target:
        pending = []
        for record in source.records():
            pending.append(record)
            if len(pending) >= COPY_CHUNK:
                copied += copy_new(pending, target)
                read += len(pending)
                pending = []
        if pending:
            copied += copy_new(pending, target)
            read += len(pending)
        return CopyResult(source=source.location, target=target.location, read=read, copied=copied,
                          already=read - copied)


def copy_new(records, target) -> int:
    """Store those of `records` the target does not hold yet; how many that was."""
    have = target.get_many(r.cache_key for r in records)
    new = [r for r in records if r.cache_key not in have]
    if new:
        target.put_many(new)
    return len(new)
