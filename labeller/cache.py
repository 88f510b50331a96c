"""The verdict cache: every paid verdict on disk under its cache key, safe to share between processes.

Built on diskcache (SQLite in WAL mode, process-safe). Three kinds of entry share one database:

- ``verdict:<key>``: a CachedVerdict as JSON (not pickle, so the cache stays readable and
  never executes anything). Never evicted: it was paid for.
- ``lease:<key>``: who is asking the judge about this key right now. Claimed in a transaction
  before sending, so two processes never pay for the same pair; it expires after
  LEASE_TTL unless its holder renews it, and a lease held by a dead process on this machine
  is taken over at once, so a killed run never blocks the next one.
- ``failure:<key>``: the last failure for a key, for stats only. A failure is never served as a
  verdict: the next run asks again.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import diskcache
from pydantic import BaseModel, ConfigDict, Field

from labeller.errors import BadInputError
from labeller.records import LabelFailure, Verdict

VERDICT, LEASE, FAILURE = "verdict:", "lease:", "failure:"
DONE, MINE, BUSY = "done", "mine", "busy"  # what claim() says about a key
LEASE_TTL = 30.0  # seconds; holders renew every LEASE_TTL / 3


class CachedVerdict(BaseModel):
    """One paid verdict with its provenance. Never holds an API key or a base URL."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    cache_key: str
    query_id: str  # the pair that first paid for it; identical pairs elsewhere reuse it
    doc_id: str
    verdict: Verdict
    judge: str
    provider: str
    model: str
    settings: dict[str, Any] = Field(default_factory=dict)
    schema_version: str
    rubric: str
    rubric_version: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    attempts: int = 1
    created_at: str


class CacheStats(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    directory: str
    entries: int
    by_judge: dict[str, int]
    by_rubric: dict[str, int]  # "name@version"
    input_tokens: int
    output_tokens: int
    cost_usd: float
    entries_without_cost: int  # models with no known price: their cost is not in cost_usd
    failures_recorded: int
    leases_held: int
    size_bytes: int


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_owner() -> str:
    """A lease owner id: host, pid and a random part (several runs may share one process)."""
    return f"{socket.gethostname()}|{os.getpid()}|{uuid.uuid4().hex[:12]}"


def owner_is_dead(owner: str) -> bool:
    """True only when the owner ran on this machine and its process is gone."""
    host, _, rest = owner.partition("|")
    pid_text = rest.partition("|")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # exists, owned by someone else
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """A killed process its parent has not reaped yet still answers kill(pid, 0) (Linux only)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].startswith(("Z", "X"))


class VerdictCache:
    def __init__(self, directory: str | Path, *, create: bool = True) -> None:
        self.directory = Path(directory)
        if not create and not (self.directory / "cache.db").is_file():
            raise BadInputError("no verdict cache here; expected a directory written by `labeller label`",
                                path=str(self.directory))
        try:
            self._db = diskcache.Cache(str(self.directory), eviction_policy="none", statistics=0)
        except OSError as exc:
            raise BadInputError(f"cannot open the cache ({exc.strerror})", path=str(self.directory)) from None

    # -- verdicts -------------------------------------------------------------------------------
    def get(self, key: str) -> CachedVerdict | None:
        raw = self._db.get(VERDICT + key)
        return None if raw is None else CachedVerdict.model_validate_json(raw)

    def __contains__(self, key: str) -> bool:
        return (VERDICT + key) in self._db

    def put(self, record: CachedVerdict) -> None:
        self.put_many([record])

    def put_many(self, records: list[CachedVerdict]) -> None:
        """Store verdicts in one transaction, dropping their leases and any old failures."""
        with self._db.transact():
            for record in records:
                key = record.cache_key
                self._db.set(VERDICT + key, record.model_dump_json())
                self._db.delete(LEASE + key)
                self._db.delete(FAILURE + key)

    def record_failure(self, failure: LabelFailure) -> None:
        with self._db.transact():
            self._db.set(FAILURE + failure.cache_key, failure.model_dump_json())
            self._db.delete(LEASE + failure.cache_key)

    # -- leases ---------------------------------------------------------------------------------
    def claim(self, keys: list[str], owner: str, ttl: float = LEASE_TTL) -> list[str]:
        """For each key, in one transaction: DONE (a verdict is cached), MINE (now leased to `owner`)
        or BUSY (another live process holds the lease). Leases of dead processes are taken over."""
        out = []
        with self._db.transact():
            for key in keys:
                if (VERDICT + key) in self._db:
                    out.append(DONE)
                elif self._db.add(LEASE + key, owner, expire=ttl):
                    out.append(MINE)
                else:
                    holder = self._db.get(LEASE + key)
                    if holder is None or holder == owner or owner_is_dead(holder):
                        self._db.set(LEASE + key, owner, expire=ttl)
                        out.append(MINE)
                    else:
                        out.append(BUSY)
        return out

    def lease_holder(self, key: str) -> str | None:
        return self._db.get(LEASE + key)

    def renew(self, keys: list[str], owner: str, ttl: float = LEASE_TTL) -> None:
        with self._db.transact():
            for key in keys:
                if self._db.get(LEASE + key) == owner:
                    self._db.touch(LEASE + key, expire=ttl)

    def release(self, keys: list[str], owner: str) -> None:
        with self._db.transact():
            for key in keys:
                if self._db.get(LEASE + key) == owner:
                    self._db.delete(LEASE + key)

    # -- inspection -----------------------------------------------------------------------------
    def records(self):
        """Every cached verdict, in key order."""
        for name in self._db.iterkeys():
            if isinstance(name, str) and name.startswith(VERDICT):
                raw = self._db.get(name)
                if raw is not None:
                    yield CachedVerdict.model_validate_json(raw)

    def stats(self) -> CacheStats:
        by_judge: dict[str, int] = {}
        by_rubric: dict[str, int] = {}
        entries = tokens_in = tokens_out = no_cost = failures = leases = 0
        cost = 0.0
        for name in self._db.iterkeys():
            if not isinstance(name, str):
                continue
            if name.startswith(FAILURE):
                failures += 1
            elif name.startswith(LEASE):
                leases += self._db.get(name) is not None  # skip expired leases not yet culled
        for rec in self.records():
            entries += 1
            by_judge[rec.judge] = by_judge.get(rec.judge, 0) + 1
            rubric = f"{rec.rubric}@{rec.rubric_version}"
            by_rubric[rubric] = by_rubric.get(rubric, 0) + 1
            tokens_in += rec.input_tokens or 0
            tokens_out += rec.output_tokens or 0
            if rec.cost_usd is None:
                no_cost += 1
            else:
                cost += rec.cost_usd
        return CacheStats(directory=str(self.directory), entries=entries, by_judge=by_judge, by_rubric=by_rubric,
                          input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=round(cost, 6),
                          entries_without_cost=no_cost, failures_recorded=failures, leases_held=leases,
                          size_bytes=self._db.volume())

    def export(self, path: str | Path) -> int:
        """Write every cached verdict as a row (JSONL, CSV or Parquet by extension). Returns the row count."""
        from labeller.io.tables import table_format, write_rows

        table_format(path)  # a bad extension fails before reading the cache
        rows = [export_row(rec) for rec in self.records()]
        write_rows(path, rows)
        return len(rows)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> VerdictCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def export_row(rec: CachedVerdict) -> dict[str, Any]:
    row = rec.model_dump(exclude={"verdict", "settings"})
    row.update(grade=rec.verdict.grade, justification=rec.verdict.justification,
               settings=json.dumps(rec.settings, sort_keys=True))
    return row
