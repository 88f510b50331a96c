"""The embedded default store: a directory holding a diskcache database (SQLite in WAL mode).

Entries share one database, each kind under its own prefix:

- ``verdict:<key>``: a CachedVerdict as JSON (not pickle, so the cache stays readable and never
  executes anything).
- ``lease:<key>``: the owner asking the judge about this key, with a diskcache expiry (the ttl).
  Claimed in a SQLite transaction, so two processes never pay for the same pair.
- ``failure:<key>``: the last failure for a key, for stats only.
- ``batch:<provider>\\0<batch id>``: a BatchRecord as JSON after its sequence number;
  ``batched:<key>`` marks a key covered by an open batch, so claim() can answer IN_BATCH without reading every batch.

An existing database that SQLite cannot read (truncated, a garbled header, emptied to 0 bytes) is
refused with an error naming the file: opening it as new would silently pay for every verdict again.
"""

from __future__ import annotations

import fcntl
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import diskcache

from labeller.errors import BadInputError
from labeller.records import LabelFailure
from labeller.store.base import (BUSY, DONE, IN_BATCH, LEASE_TTL, LOOKUP_CHUNK, MINE, BatchRecord, CachedVerdict,
                                 NoStoreError, StoreStats, VerdictStore, now_iso, owner_is_dead, tally_stats)
from labeller.store.cached_row import CACHED_ROW, cached_row_of
from labeller.store.damaged import failure_of, without_damaged
from labeller.store.projection import Projection, sqlite_json_object

VERDICT, LEASE, FAILURE, BATCH, BATCHED = "verdict:", "lease:", "failure:", "batch:", "batched:"
BATCH_SEQ = "batch-seq"  # a counter: open_batches() lists batches in the order they were put
DB_FILE = "cache.db"
OPEN_LOCK = DB_FILE + ".open-lock"  # diskcache's check() ignores names holding "cache.db"
_INLINE = f"mode = {diskcache.core.MODE_RAW} AND typeof(value) = 'text'"  # a value kept in the row itself, as text


def _has_json() -> bool:
    """Whether this SQLite has its JSON functions and the -> operator (3.38 and later, unless built without)."""
    connection = sqlite3.connect(":memory:")
    try:  # closed here, not left to the garbage collector (sqlite_memory waits for SQLite to be unused)
        connection.execute("SELECT json_valid('{}'), '{}' -> '$'").fetchall()
    except sqlite3.Error:
        return False
    finally:
        connection.close()
    return True


_HAS_JSON = _has_json()


class DirectoryStore(VerdictStore):
    backend = "directory"
    # A lookup spends its time in SQLite, which lets go of the GIL (and diskcache gives each thread its own
    # connection): read chunks ahead on threads (labelling.planning), on the second core.
    reads_ahead = True

    def __init__(self, directory: str | Path, *, create: bool = True) -> None:
        self.directory = Path(directory)
        self.location = str(self.directory)
        db_file = self.directory / DB_FILE
        if not create and not db_file.is_file():
            raise NoStoreError("no verdict cache here; expected a directory written by `labeller label`",
                                path=self.location)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with _open_lock(self.directory):  # a cache another process is creating right now is not "empty"
                if db_file.is_file() and db_file.stat().st_size == 0:
                    raise _damaged(db_file, "the file is empty")
                # No memory map: SQLite's mapped pages count as the process's memory, and its 32 MB page cache
                # reads a million-verdict rerun as fast.
                self._db = diskcache.Cache(str(self.directory), eviction_policy="none", statistics=0,
                                           sqlite_mmap_size=0)
                self._probe()
        except sqlite3.DatabaseError as exc:
            raise _damaged(db_file, str(exc)) from None
        except OSError as exc:
            raise BadInputError(f"cannot open the cache ({exc.strerror or exc})", path=self.location) from None

    def _probe(self) -> None:
        """A file cut short or whose header is not SQLite's fails here, not mid-run. Opening a read transaction
        is enough: SQLite refuses a database whose header counts more pages than the file (with its WAL)
        holds. PRAGMA quick_check would read every page (1.4 s for a million verdicts, at every open); a page
        damaged further in fails the lookup that reads it, with the same error (_lookup). The file is never
        opened here another way: closing another descriptor of it would drop SQLite's locks on it."""
        # fetchall(), not fetchone(): a statement not stepped to its end keeps its read transaction open, and
        # this connection would go on seeing the store as it is now.
        self._db._sql("SELECT count(*) FROM sqlite_master").fetchall()  # noqa: SLF001

    # -- verdicts -------------------------------------------------------------------------------
    def get_many(self, keys: Iterable[str]) -> dict[str, CachedVerdict]:
        return {key: CachedVerdict.model_validate_json(raw) for key, raw in self.get_many_raw(keys).items()}

    def get_many_raw(self, keys: Iterable[str]) -> dict[str, str | bytes]:
        """One statement per LOOKUP_CHUNK keys on diskcache's own table (Cache: key, raw, mode, value, ...),
        instead of one per key through Cache.get. A str key is stored as it is (raw = 1); a value shorter
        than diskcache's min_file_size is inline (MODE_RAW); a longer one lives in a file and is read
        through Cache.get like any other. Entries expired are skipped, as Cache.get skips them.

        The rows come back as one string (group_concat): SQLite does the whole lookup in one step, and Python
        builds one string per row instead of a tuple of three values. A stored value is JSON, never a raw
        newline; anything unexpected in the string (a count that does not add up, a key not asked for) reads
        the rows one by one."""
        found: dict[str, str | bytes] = {}
        for keys_found, values in self._lookup(keys, f"CASE WHEN {_INLINE} THEN char(30) || value ELSE '' END"):
            for key, inline in zip(keys_found, values):
                value = inline[1:] if inline else self._db.get(VERDICT + key)  # a value kept in a file or a blob
                if value is not None:
                    found[key] = value
        return without_damaged(found, self.location, self._set_aside)

    def get_many_projected(self, keys: Iterable[str],
                           projection: Projection) -> tuple[dict[str, bytes], dict[str, str | bytes]]:
        """get_many_raw's lookup with each verdict's row in the same statement: the one kept in its entry's tag
        (put_many: CACHED_ROW's, as written), else its inline record's projected object built by SQLite's JSON
        functions (off the GIL either way: a cached rerun reads chunks ahead on threads)."""
        if projection.fingerprint != CACHED_ROW.fingerprint and not _HAS_JSON:
            return super().get_many_projected(keys, projection)
        projected: dict[str, bytes] = {}
        stored: dict[str, str | bytes] = {}
        built = sqlite_json_object(projection, "value") if _HAS_JSON else "''"
        kept = f"'{projection.fingerprint}:'"  # hex digits and a colon: a plain SQL literal
        column = (f"CASE WHEN typeof(tag) = 'text' AND substr(tag, 1, {len(kept) - 2}) = {kept} "
                  f"THEN substr(tag, {len(kept) - 1}) WHEN {_INLINE} THEN {built} ELSE '' END")
        for keys_found, values in self._lookup(keys, column, encoded=True):
            if b"" not in values:  # the usual chunk: whole, in C
                projected.update(zip(keys_found, values))
                continue
            for key, value in zip(keys_found, values):
                if value:
                    projected[key] = value
                elif (raw := self._db.get(VERDICT + key)) is not None:  # in a file, a blob, or not projectable
                    stored[key] = raw
        return projected, without_damaged(stored, self.location, self._set_aside)

    def _lookup(self, keys: Iterable[str], column: str,
                encoded: bool = False) -> Iterator[tuple[list[str], list[Any]]]:
        """For each LOOKUP_CHUNK of the keys, the keys of its live verdict entries and their `column`, read as
        two joined strings (`column` as UTF-8 bytes if encoded): on a lookup thread, Python's part is a few calls
        a chunk, none a row (it holds the GIL the planner needs). `column` is '' for a row to read one by one; a
        chunk whose strings do not split as expected (a newline in a key or a value) is read again as rows of
        keys with '' for each."""
        wanted = list(dict.fromkeys(keys))
        for lo in range(0, len(wanted), LOOKUP_CHUNK):
            chunk = wanted[lo:lo + LOOKUP_CHUNK]
            where = (f"FROM Cache WHERE raw = 1 AND key IN ({','.join('?' * len(chunk))}) "
                     "AND (expire_time IS NULL OR expire_time > ?)")
            args = (*[VERDICT + key for key in chunk], time.time())
            unprefixed = f"substr(key, {len(VERDICT) + 1})"
            try:
                ((count, joined_keys, joined), ) = self._db._sql(  # noqa: SLF001 - diskcache's documented schema
                    f"SELECT count(*), group_concat({unprefixed}, char(10)), group_concat({column}, char(10)) {where}",
                    args).fetchall()
            except sqlite3.DatabaseError as exc:  # a page damaged past the header (_probe)
                raise _damaged(self.directory / DB_FILE, str(exc)) from None
            if not count:
                continue
            found = joined_keys.split("\n")
            values = joined.encode("utf-8").split(b"\n") if encoded else joined.split("\n")  # one call a chunk
            if len(found) != count or len(values) != count or not set(chunk).issuperset(found):
                found = [key for (key,) in self._db._sql(f"SELECT {unprefixed} {where}", args)]  # noqa: SLF001
                values = [b"" if encoded else ""] * len(found)
            yield found, values

    def __contains__(self, key: str) -> bool:
        return (VERDICT + key) in self._db

    def put_many(self, records: list[CachedVerdict]) -> None:
        """Each verdict with its cached-rerun row in the entry's tag (written and replaced with the record in one
        row; a labeller that knows no tags writes None over it; read without SQLite's JSON functions, ~6 µs a
        key of the lookup threads' CPU in a cached rerun), and its key's lease and failure gone, in one
        transaction. A new key's entry is one row of an executemany, as Cache.set would write it: Cache.set
        a key (a SELECT, an INSERT, a cull) and two Cache.delete took ~140 µs a verdict in Python and SQLite,
        most of a bulk fill's time. A key already held, or a value too long to stay inline, goes through
        Cache.set (which removes the file an old value lived in), a lease or failure present through
        Cache.delete."""
        entries: dict[str, tuple[str, str | None]] = {}
        for record in records:  # a key twice: the later record, as one Cache.set after another left it
            row = cached_row_of(record)
            entries[record.cache_key] = (record.model_dump_json(),
                                         None if row is None else f"{CACHED_ROW.fingerprint}:{row}")
        inline_below = self._db.disk.min_file_size
        with self._db.transact():
            present = self._present([prefix + key for key in entries for prefix in (VERDICT, LEASE, FAILURE)])
            now, fresh = time.time(), []
            for key in sorted(entries):  # in key order: the inserts walk the key index's pages in order
                value, tag = entries[key]
                if VERDICT + key in present or len(value) >= inline_below:
                    self._db.set(VERDICT + key, value, tag=tag)
                else:
                    fresh.append((VERDICT + key, now, now, tag, diskcache.core.MODE_RAW, value))
                for name in (LEASE + key, FAILURE + key):
                    if name in present:
                        self._db.delete(name)
            self._db._con.executemany(  # noqa: SLF001 - diskcache's documented schema, as _lookup reads it
                "INSERT INTO Cache(key, raw, store_time, expire_time, access_time, access_count, tag, size, mode, "
                "filename, value) VALUES (?, 1, ?, NULL, ?, 0, ?, 0, ?, NULL, ?)", fresh)

    def _present(self, names: list[str]) -> set[str]:
        """Which of these entry names (str keys) have a row, expired or not."""
        found: set[str] = set()
        for lo in range(0, len(names), LOOKUP_CHUNK):
            chunk = names[lo:lo + LOOKUP_CHUNK]
            found.update(name for (name,) in self._db._sql(  # noqa: SLF001
                f"SELECT key FROM Cache WHERE raw = 1 AND key IN ({','.join('?' * len(chunk))})", chunk))
        return found

    def record_failure(self, failure: LabelFailure) -> None:
        with self._db.transact():
            self._db.set(FAILURE + failure.cache_key, failure.model_dump_json())
            self._db.delete(LEASE + failure.cache_key)

    def _set_aside(self, damaged: dict[str, str | bytes]) -> None:
        """Damaged records (store.damaged) become their keys' failures; one replaced meanwhile is left alone."""
        with self._db.transact():
            for key, raw in damaged.items():
                if self._db.get(VERDICT + key) == raw:
                    self._db.delete(VERDICT + key)
                    self._db.set(FAILURE + key, failure_of(key, raw).model_dump_json())

    # -- leases ---------------------------------------------------------------------------------
    def claim(self, keys: list[str], owner: str, ttl: float = LEASE_TTL) -> list[str]:
        out = []
        with self._db.transact():
            for key in keys:
                if (VERDICT + key) in self._db:
                    out.append(DONE)
                elif (BATCHED + key) in self._db:
                    out.append(IN_BATCH)
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

    # -- provider batches -----------------------------------------------------------------------
    def put_batch(self, provider: str, batch_id: str, keys: list[str],
                  meta: dict[str, Any] | None = None) -> BatchRecord:
        name = f"{BATCH}{provider}\0{batch_id}"
        with self._db.transact():
            if (existing := self._db.get(name)) is not None:
                return _load_batch(existing)[1]
            record = BatchRecord(provider=provider, batch_id=batch_id, keys=list(keys), meta=meta or {},
                                 created_at=now_iso())
            self._db.set(name, _dump_batch(self._db.incr(BATCH_SEQ), record))
            for key in record.keys:
                self._db.set(BATCHED + key, f"{provider}\0{batch_id}")
        return record

    def get_batch(self, provider: str, batch_id: str) -> BatchRecord | None:
        raw = self._db.get(f"{BATCH}{provider}\0{batch_id}")
        return None if raw is None else _load_batch(raw)[1]

    def open_batches(self, provider: str | None = None) -> list[BatchRecord]:
        found = []
        for name in self._db.iterkeys():
            if isinstance(name, str) and name.startswith(BATCH) and (raw := self._db.get(name)) is not None:
                seq, batch = _load_batch(raw)
                if batch.status == "open" and provider in (None, batch.provider):
                    found.append((seq, batch))
        return [batch for _, batch in sorted(found, key=lambda sb: sb[0])]  # in the order they were put

    def finish_batch(self, provider: str, batch_id: str, outcome: str = "completed") -> None:
        name = f"{BATCH}{provider}\0{batch_id}"
        with self._db.transact():
            raw = self._db.get(name)
            if raw is None:
                return
            seq, record = _load_batch(raw)
            if record.status == "finished":
                return
            for key in record.keys:
                if self._db.get(BATCHED + key) == f"{provider}\0{batch_id}":
                    self._db.delete(BATCHED + key)
            done = record.model_copy(update=dict(status="finished", outcome=outcome, finished_at=now_iso()))
            self._db.set(name, _dump_batch(seq, done))

    # -- inspection -----------------------------------------------------------------------------
    def records(self) -> Iterator[CachedVerdict]:
        for name in self._db.iterkeys():
            if isinstance(name, str) and name.startswith(VERDICT):
                raw = self._db.get(name)
                if raw is not None and without_damaged({name[len(VERDICT):]: raw}, self.location, self._set_aside):
                    yield CachedVerdict.model_validate_json(raw)

    def stats(self) -> StoreStats:
        failures = leases = 0
        for name in self._db.iterkeys():
            if not isinstance(name, str):
                continue
            if name.startswith(FAILURE):
                failures += 1
            elif name.startswith(LEASE):
                leases += self._db.get(name) is not None  # skip expired leases not yet culled
        return StoreStats(backend=self.backend, location=self.location, **tally_stats(self.records()),
                          failures_recorded=failures, leases_held=leases, batches_open=len(self.open_batches()),
                          size_bytes=self._db.volume())

    def check(self) -> list:
        """SQLite and file consistency problems (empty when sound)."""
        return self._db.check()

    def close(self) -> None:
        self._db.close()


def _dump_batch(seq: int, batch: BatchRecord) -> str:
    return f"{seq} {batch.model_dump_json()}"  # JSON, not pickle, like every other entry


def _load_batch(raw: str) -> tuple[int, BatchRecord]:
    seq, _, body = raw.partition(" ")
    return int(seq), BatchRecord.model_validate_json(body)


@contextmanager
def _open_lock(directory: Path) -> Iterator[None]:
    """Serialise opening among labeller processes: SQLite leaves a new database at 0 bytes until its
    first commit, which must not be mistaken for a cache truncated to nothing."""
    with open(directory / OPEN_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _damaged(db_file: Path, reason: str) -> BadInputError:
    return BadInputError(f"the verdict cache cannot be read ({reason}): it is damaged or not a labeller cache. "
                         "Restore it from a backup, or move the directory aside to start a new cache "
                         "(its verdicts would then be paid for again)", path=str(db_file))
