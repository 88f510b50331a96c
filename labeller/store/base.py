"""The verdict store: one small interface, and the records every backend stores.

A store holds four kinds of record under a cache key (labeller.cache_key):

- a CachedVerdict: one paid verdict with its provenance. Never evicted, never holds an API key,
  a base URL or any credential: it was paid for and it may be shared with a whole team.
- a lease: who is asking the judge about a key right now. claim() takes leases for many keys in
  one transaction, so two processes (on one machine or several) never pay for the same pair; a
  lease expires after its ttl unless renewed, and a lease of a process that died on this machine
  is taken over at once.
- a failure: the last failure for a key, for stats only. Never served as a verdict.
- a BatchRecord: a provider batch in flight and the keys it covers, persisted before polling
  starts, so a killed run resumes it instead of paying again. While a batch is open claim() answers
  IN_BATCH for its keys: nobody sends them again, and a synchronous run says so instead of waiting.

Backends (directory.py, postgres.py) implement the abstract methods; the engine sees only this class.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from labeller.errors import BadInputError, StoreError
from labeller.records import LabelFailure, Verdict
from labeller.store.projection import Projection

DONE, MINE, BUSY, IN_BATCH = "done", "mine", "busy", "in_batch"  # what claim() says about each key
LEASE_TTL = 30.0  # seconds; holders renew every LEASE_TTL / 3
LOOKUP_CHUNK = 5000  # keys per round trip for get_many and friends


class NoStoreError(BadInputError):
    """open_store(..., create=False) found no store where the spec points (nothing was created)."""


class CachedVerdict(BaseModel):
    """One paid verdict with its provenance. Never holds an API key or a base URL."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    cache_key: str
    query_id: str  # the pair that first paid for it; identical pairs elsewhere reuse it
    doc_id: str
    verdict: Verdict | dict[str, Any]  # the relevance Verdict, or another task's reply as JSON (labeller.tasks)
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
    # Which model answered, as the server reported it. Optional: records written before these existed
    # read as None.
    served_model: str | None = None
    system_fingerprint: str | None = None
    # --grade-probs: the grade's distribution from the same request (judges.grade_probs). Left out of the stored
    # JSON when None, so a verdict stored without it is byte for byte what it was.
    grade_probs: dict[str, float] | None = None

    @model_serializer(mode="wrap")
    def _without_unset_probs(self, handler: Any) -> dict[str, Any]:
        record = handler(self)
        if record.get("grade_probs", 0) is None:
            del record["grade_probs"]
        return record


class BatchRecord(BaseModel):
    """A provider batch: its id, the cache keys it covers and whatever the batch client needs to resume."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    provider: str
    batch_id: str
    keys: list[str]
    meta: dict[str, Any] = Field(default_factory=dict)  # JSON only; never a key or a credential
    status: Literal["open", "finished"] = "open"
    outcome: str | None = None  # set by finish_batch: "completed", "cancelled", "expired", ...
    created_at: str
    finished_at: str | None = None


class StoreStats(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    backend: str  # "directory" or "postgresql"
    location: str  # the directory, or the URL with its password redacted
    entries: int
    by_judge: dict[str, int]
    by_rubric: dict[str, int]  # "name@version"
    input_tokens: int
    output_tokens: int
    cost_usd: float
    entries_without_cost: int  # models with no known price: their cost is not in cost_usd
    failures_recorded: int
    leases_held: int
    batches_open: int
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


def chunks(items: Iterable[str], size: int = LOOKUP_CHUNK) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def one_line(exc: BaseException) -> str:
    """A driver's message (libpq's are several lines) as one line, for `labeller: error: ...`."""
    return " ".join(str(exc).split())


def store_errors(*kinds: type[BaseException]):
    """Turn a backend's own errors (a database gone away, a file damaged mid-run) into a StoreError naming
    the store, with any secret the backend knows redacted: never a traceback, never a password."""

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except kinds as exc:
                raise StoreError(f"{self.location}: the verdict store failed ({self.redact(one_line(exc))})") from None

        return wrapper

    return decorate


class VerdictStore(ABC):
    """Where verdicts, leases, failures and batch records live. Every method is safe to call from
    several processes at once; every write is durable when it returns."""

    backend: str = ""
    location: str = ""  # for messages: never holds a password
    # A lookup that mostly waits on a server is worth running on a thread while the caller hashes the next
    # keys (labelling.planning reads chunks ahead): get_many_raw and get_many_projected must then be safe to
    # call from a thread other than the one using the store's other methods.
    reads_ahead: bool = False

    def redact(self, text: str) -> str:
        """`text` with any credential this store knows removed (a backend with a password overrides this)."""
        return text

    # -- verdicts -------------------------------------------------------------------------------
    @abstractmethod
    def get_many(self, keys: Iterable[str]) -> dict[str, CachedVerdict]:
        """The cached verdicts among `keys` (missing keys are absent), in as few round trips as possible."""

    @abstractmethod
    def put_many(self, records: list[CachedVerdict]) -> None:
        """Store verdicts in one transaction, dropping their leases and any old failures. Idempotent."""

    @abstractmethod
    def record_failure(self, failure: LabelFailure) -> None:
        """Remember the last failure for a key (for stats) and drop its lease."""

    def get_many_raw(self, keys: Iterable[str]) -> dict[str, str | bytes]:
        """get_many with each verdict as its stored JSON (a CachedVerdict's model_dump_json()), for callers
        that read many verdicts written by labeller itself and need no model of each (a cached rerun).
        Backends that keep the JSON as it is return it without parsing it."""
        return {key: rec.model_dump_json() for key, rec in self.get_many(keys).items()}

    def get_many_projected(self, keys: Iterable[str],
                           projection: Projection) -> tuple[dict[str, bytes], dict[str, str | bytes]]:
        """The verdicts among `keys`, each as the JSON object `projection` reads from it (UTF-8, no newline),
        or as its stored JSON (get_many_raw's) for the caller's own reading: where a record lacks what the
        projection requires, and for every record of a backend that cannot build the objects itself (this
        default). Both stores keep CACHED_ROW's object with each verdict they write (cached_row.py)."""
        return {}, self.get_many_raw(keys)

    def get(self, key: str) -> CachedVerdict | None:
        return self.get_many([key]).get(key)

    def put(self, record: CachedVerdict) -> None:
        self.put_many([record])

    def __contains__(self, key: str) -> bool:
        return key in self.get_many([key])

    # -- leases ---------------------------------------------------------------------------------
    @abstractmethod
    def claim(self, keys: list[str], owner: str, ttl: float = LEASE_TTL) -> list[str]:
        """For each key, in one transaction: DONE (a verdict is stored), MINE (now leased to `owner`)
        BUSY (another live process holds the lease) or IN_BATCH (an open provider batch covers it). Expired
        leases and leases of dead processes on this machine are taken over."""

    @abstractmethod
    def renew(self, keys: list[str], owner: str, ttl: float = LEASE_TTL) -> None:
        """Push back the expiry of the leases `owner` holds among `keys`."""

    @abstractmethod
    def release(self, keys: list[str], owner: str) -> None:
        """Drop the leases `owner` holds among `keys` (others' leases are left alone)."""

    @abstractmethod
    def lease_holder(self, key: str) -> str | None:
        """Who holds a live lease on `key`, if anyone."""

    # -- provider batches -----------------------------------------------------------------------
    @abstractmethod
    def put_batch(self, provider: str, batch_id: str, keys: list[str],
                  meta: dict[str, Any] | None = None) -> BatchRecord:
        """Persist a submitted batch and the keys it covers (before polling starts). Idempotent."""

    @abstractmethod
    def open_batches(self, provider: str | None = None) -> list[BatchRecord]:
        """Batches not yet finished, oldest first (all providers unless one is named)."""

    @abstractmethod
    def get_batch(self, provider: str, batch_id: str) -> BatchRecord | None:
        """One batch record, open or finished."""

    @abstractmethod
    def finish_batch(self, provider: str, batch_id: str, outcome: str = "completed") -> None:
        """Mark a batch finished: its keys are no longer IN_BATCH (those without a verdict can be sent again)."""

    # -- inspection -----------------------------------------------------------------------------
    @abstractmethod
    def records(self) -> Iterator[CachedVerdict]:
        """Every stored verdict, in key order, read in chunks (never all in memory at once)."""

    @abstractmethod
    def stats(self) -> StoreStats:
        """Counts, tokens, cost and size."""

    def export(self, path: str | Path) -> int:
        """Write every stored verdict as a row (JSONL, CSV or Parquet by extension). Returns the row count."""
        from labeller.io.tables import table_format
        from labeller.io.writing import write_rows

        table_format(path)  # a bad extension fails before reading the store
        rows = [export_row(rec) for rec in self.records()]
        write_rows(path, rows)
        return len(rows)

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> VerdictStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def export_row(rec: CachedVerdict) -> dict[str, Any]:
    row = rec.model_dump(exclude={"verdict", "settings"})
    if isinstance(rec.verdict, Verdict):
        row.update(grade=rec.verdict.grade, justification=rec.verdict.justification)
    else:  # another task's reply (labeller.tasks): its justification, and the whole reply as JSON
        row.update(grade=None, justification=rec.verdict.get("justification", ""),
                   reply=json.dumps(rec.verdict, ensure_ascii=False))  # as stored: `cache import` keeps its order
    row["settings"] = json.dumps(rec.settings, sort_keys=True)
    return row


def tally_stats(records: Iterable[CachedVerdict]) -> dict[str, Any]:
    """The verdict part of StoreStats, for backends that count by reading every record."""
    by_judge: dict[str, int] = {}
    by_rubric: dict[str, int] = {}
    entries = tokens_in = tokens_out = no_cost = 0
    cost = 0.0
    for rec in records:
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
    return dict(entries=entries, by_judge=by_judge, by_rubric=by_rubric, input_tokens=tokens_in,
                output_tokens=tokens_out, cost_usd=round(cost, 6), entries_without_cost=no_cost)
