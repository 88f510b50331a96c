"""A verdict store in PostgreSQL (psycopg 3), shared by every machine and CI runner of a team.

Leases use the database's own locking, not timing: claim() is one INSERT ... ON CONFLICT DO UPDATE
whose WHERE clause takes a lease only when there is none, it has expired (by the database's clock,
so machines with skewed clocks agree) or its holder is the caller; concurrent claims of one key
serialise on its unique index. A verdict written between two claims is caught by reading the
verdicts again after the insert (a later statement, so a later snapshot). Keys are locked in sorted order so two
claimers never deadlock. Lookups and writes take many keys per round trip (= ANY(array), unnest). Each verdict
is stored with the row a cached rerun writes for it (cached_row.CACHED_ROW), built once as it is written.

The schema is created on first use and versioned in labeller_schema_version; opening a store
written by a newer labeller is refused rather than guessed at. The URL's password is never shown:
`location` and every error carry the URL with the password replaced by ***.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from labeller.errors import BadInputError, redact
from labeller.records import LabelFailure
from labeller.store.damaged import failure_of, without_damaged
from labeller.store.base import (BUSY, DONE, IN_BATCH, LEASE_TTL, MINE, BatchRecord, CachedVerdict, NoStoreError,
                                 StoreStats, VerdictStore, chunks, one_line, owner_is_dead, store_errors)
from labeller.store.cached_row import CACHED_ROW, cached_row_of
from labeller.store.projection import Projection
from labeller.store.postgres_sql import (_KEPT, _LOCK_ID, _OPEN_BATCH_COVERS, _TABLES, MIGRATIONS,
                                         SCHEMA_VERSION, _found, _iso, _json_text, _split_into, _text_array)
from labeller.store.registry import redact_url

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "PostgresStore"]

def _store_errors(method):
    """The backend's errors as a StoreError (store_errors), and one call at a time on the one connection: the
    lookup thread (reads_ahead) shares it with the event loop, and psycopg's own lock covers one statement, not
    the several of a pipeline (claim), which another thread's statement must not interleave with."""
    guarded = store_errors(psycopg.Error)(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._serial:
            return guarded(self, *args, **kwargs)

    return wrapper


class PostgresStore(VerdictStore):
    backend = "postgresql"
    reads_ahead = True  # the lookup is the server's work; calls are serialised (_store_errors)

    def __init__(self, url: str, *, create: bool = True) -> None:
        self._serial = threading.RLock()  # re-entrant: a method may call another (records -> _page)
        self.location, self._password = redact_url(url), None
        try:
            self._password = conninfo_to_dict(url).get("password")
        except psycopg.ProgrammingError as exc:
            raise BadInputError(f"not a valid PostgreSQL URL ({self.redact(one_line(exc))})",
                                path=self.location) from None
        params: dict[str, Any] = {"autocommit": True, "application_name": "labeller"}
        if "connect_timeout" not in url:
            params["connect_timeout"] = 10
        try:
            self._conn = psycopg.connect(url, **params)
        except psycopg.Error as exc:
            raise BadInputError(f"cannot connect to the verdict store ({self.redact(one_line(exc))})",
                                path=self.location) from None
        try:
            # Like the directory store (SQLite WAL, synchronous=NORMAL): a commit is final once the server has
            # it, so a killed labeller loses nothing; only a crash of the server itself could drop the last
            # fraction of a second of verdicts (to be paid again, never wrong). Waiting for the disk flush on
            # every commit would stall the labelling event loop instead.
            self._conn.execute("SET synchronous_commit = off")
            self._migrate(create)
        except psycopg.Error as exc:
            self._conn.close()
            raise BadInputError(f"cannot use the verdict store ({self.redact(one_line(exc))})",
                                path=self.location) from None
        except BaseException:
            self._conn.close()
            raise

    def redact(self, text: str) -> str:
        return redact(text, [self._password])

    def _migrate(self, create: bool) -> None:
        with self._conn.transaction(), self._conn.cursor() as cur:
            cur.execute("SELECT to_regclass('labeller_schema_version') IS NOT NULL")
            if not cur.fetchone()[0]:
                if not create:
                    raise NoStoreError("no labeller verdict store in this database (nothing has been labelled into it)",
                                       path=self.location)
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))  # two first users: one creates
                cur.execute("""CREATE TABLE IF NOT EXISTS labeller_schema_version (
                                 version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())""")
            else:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
            cur.execute("SELECT coalesce(max(version), 0) FROM labeller_schema_version")
            current = cur.fetchone()[0]
            if current > SCHEMA_VERSION:
                raise BadInputError(f"this store has schema version {current}, newer than this labeller knows "
                                    f"({SCHEMA_VERSION}): upgrade labeller", path=self.location)
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    cur.execute(statement)
                cur.execute("INSERT INTO labeller_schema_version (version) VALUES (%s)", (version,))

    # -- verdicts -------------------------------------------------------------------------------
    def get_many(self, keys: Iterable[str]) -> dict[str, CachedVerdict]:
        return {key: CachedVerdict.model_validate_json(raw) for key, raw in self.get_many_raw(keys).items()}

    @_store_errors
    def get_many_raw(self, keys: Iterable[str]) -> dict[str, str | bytes]:
        found: dict[str, str | bytes] = {}
        with self._conn.cursor(binary=True) as cur:
            for chunk in chunks(dict.fromkeys(keys)):
                # A join on the unnested keys walks an index; `= ANY(array)` can fall back to a sequential scan
                # testing every row against the whole array. The rows come back as two joined strings (both
                # aggregates read the rows in one order): a third of the client's time a key, on the lookup
                # thread, went into receiving rows one by one. A record is JSON, never a raw newline; one that
                # holds one anyway (the count does not add up) has its chunk read row by row.
                found_sql, params = _found(chunk)
                cur.execute(f"SELECT count(*), string_agg(v.cache_key, E'\\n'), string_agg(v.record, E'\\n') "
                            f"{found_sql}", params)
                count, joined_keys, joined_records = cur.fetchone()
                if not count:
                    continue
                names, records = joined_keys.split("\n"), joined_records.split("\n")
                if len(names) == len(records) == count:
                    found.update(zip(names, records))
                else:
                    cur.execute(f"SELECT v.cache_key, v.record {found_sql}", params)
                    found.update(cur)
        return without_damaged(found, self.location, self._set_aside)

    @_store_errors
    def get_many_projected(self, keys: Iterable[str],
                           projection: Projection) -> tuple[dict[str, bytes], dict[str, str | bytes]]:
        """The rows kept with the verdicts (CACHED_ROW's, as written) and, for verdicts stored without one (by an
        older labeller, or under another definition of the row), their records: get_many_raw's read, with the
        kept rows as two more joined strings."""
        if projection.fingerprint != CACHED_ROW.fingerprint:
            return super().get_many_projected(keys, projection)
        projected: dict[str, bytes] = {}
        stored: dict[str, str | bytes] = {}
        with self._conn.cursor(binary=True) as cur:
            for chunk in chunks(dict.fromkeys(keys)):
                found_sql, params = _found(chunk, of=projection.fingerprint)
                cur.execute(f"""
                    SELECT count(*), count(*) FILTER (WHERE {_KEPT}),
                           string_agg(v.cache_key, E'\\n') FILTER (WHERE {_KEPT}),
                           convert_to(string_agg(v.label_row, E'\\n') FILTER (WHERE {_KEPT}), 'UTF8'),
                           string_agg(v.cache_key, E'\\n') FILTER (WHERE NOT {_KEPT}),
                           string_agg(v.record, E'\\n') FILTER (WHERE NOT {_KEPT}) {found_sql}""", params)
                count, kept, kept_keys, rows, other_keys, records = cur.fetchone()
                pairs = [(kept_keys, rows, b"\n", projected), (other_keys, records, "\n", stored)]
                if all(_split_into(joined_keys, joined, sep, into, expected)
                       for (joined_keys, joined, sep, into), expected in zip(pairs, (kept, count - kept))):
                    continue
                cur.execute(f"SELECT v.cache_key, CASE WHEN {_KEPT} THEN v.label_row END, v.record {found_sql}",
                            params)
                for key, row, record in cur:
                    if row is None:
                        stored[key] = record
                    else:
                        projected[key] = row.encode("utf-8")
        return projected, without_damaged(stored, self.location, self._set_aside)

    @_store_errors
    def put_many(self, records: list[CachedVerdict]) -> None:
        unique = sorted({r.cache_key: r for r in records}.values(), key=lambda r: r.cache_key)
        if not unique:
            return
        keys = [r.cache_key for r in unique]
        verdicts = []
        for r in unique:
            row = cached_row_of(r)
            verdicts.append({"cache_key": r.cache_key, "record": r.model_dump_json(), "judge": r.judge,
                             "rubric": f"{r.rubric}@{r.rubric_version}", "input_tokens": r.input_tokens,
                             "output_tokens": r.output_tokens, "cost_usd": r.cost_usd,
                             "label_row": row,
                             "label_row_of": None if row is None else CACHED_ROW.fingerprint})
        keys_sql, joined_keys = _text_array("keys", keys)
        # One statement, so one round trip and one transaction: the verdicts, and their leases and old
        # failures gone. The first verdict paid for a key stays (leases make a second one rare; copies
        # are idempotent). The verdicts go as one JSON text that the server takes apart (json, not jsonb: every
        # string comes back exactly): psycopg builds an array parameter in Python an element at a time; with
        # eleven of them put_many took 25-28 µs of client CPU a verdict (batches of 20) against ~20 µs.
        self._conn.execute(f"""
            WITH stored AS (
                   INSERT INTO labeller_verdicts (cache_key, record, judge, rubric, input_tokens, output_tokens, cost_usd,
                                                  label_row, label_row_of)
                   SELECT * FROM json_to_recordset(%(verdicts)s::json) AS t(
                       cache_key text, record text, judge text, rubric text, input_tokens bigint, output_tokens bigint,
                       cost_usd float8, label_row text, label_row_of text)
                   ON CONFLICT (cache_key) DO NOTHING RETURNING 1),
                 unleased AS (DELETE FROM labeller_leases WHERE cache_key = ANY({keys_sql}) RETURNING 1),
                 unfailed AS (DELETE FROM labeller_failures WHERE cache_key = ANY({keys_sql}) RETURNING 1)
            SELECT (SELECT count(*) FROM stored), (SELECT count(*) FROM unleased), (SELECT count(*) FROM unfailed)""",
                           {"verdicts": _json_text(verdicts), "keys": joined_keys})

    @_store_errors
    def record_failure(self, failure: LabelFailure) -> None:
        self._conn.execute("""
            WITH failed AS (INSERT INTO labeller_failures (cache_key, record) VALUES (%(key)s, %(record)s)
                            ON CONFLICT (cache_key) DO UPDATE SET record = EXCLUDED.record, stored_at = now()
                            RETURNING 1)
            DELETE FROM labeller_leases WHERE cache_key = %(key)s""",
                           {"key": failure.cache_key, "record": failure.model_dump_json()})

    @_store_errors
    def _set_aside(self, damaged: dict[str, str | bytes]) -> None:
        """Damaged records (store.damaged) become their keys' failures; one replaced meanwhile is left alone."""
        for key, raw in damaged.items():
            with self._conn.transaction():
                gone = self._conn.execute("DELETE FROM labeller_verdicts WHERE cache_key = %s AND record = %s "
                                          "RETURNING 1", (key, raw)).fetchone()
                if gone:
                    self.record_failure(failure_of(key, raw))

    # -- leases ---------------------------------------------------------------------------------
    @_store_errors
    def claim(self, keys: list[str], owner: str, ttl: float = LEASE_TTL) -> list[str]:
        """Each statement is atomic on its own and sees what committed before it started, so they are
        pipelined (one round trip in the usual case) rather than wrapped in one transaction."""
        wanted = sorted(set(keys))  # one lock order for every claimer: no deadlocks
        if not wanted:
            return []
        conn = self._conn
        with conn.pipeline():
            leased = conn.execute(f"""
                INSERT INTO labeller_leases AS l (cache_key, owner, expires_at)
                SELECT k, %(owner)s, now() + make_interval(secs => %(ttl)s)
                FROM unnest(%(keys)s::text[]) WITH ORDINALITY AS t(k, i)
                WHERE NOT EXISTS (SELECT 1 FROM labeller_verdicts v WHERE v.cache_key = k) AND NOT {_OPEN_BATCH_COVERS}
                ORDER BY i
                ON CONFLICT (cache_key) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
                  WHERE l.expires_at < now() OR l.owner = EXCLUDED.owner
                RETURNING l.cache_key""", {"owner": owner, "ttl": ttl, "keys": wanted})
            # Read after the insert: a verdict that landed meanwhile wins over the lease just taken.
            stored = conn.execute("SELECT cache_key FROM labeller_verdicts WHERE cache_key = ANY(%s)", (wanted,))
            holders = conn.execute("SELECT cache_key, owner FROM labeller_leases WHERE cache_key = ANY(%s)", (wanted,))
            covered = conn.execute(f"SELECT k FROM unnest(%s::text[]) AS t(k) WHERE {_OPEN_BATCH_COVERS}", (wanted,))
        mine = {row[0] for row in leased.fetchall()}
        done = {row[0] for row in stored.fetchall()}
        batched = {row[0] for row in covered.fetchall()}
        dead = sorted((k, o) for k, o in holders.fetchall() if k not in mine and k not in done and owner_is_dead(o))
        if dead:
            mine |= self._take_over(dead, owner, ttl)
            done |= {row[0] for row in conn.execute("SELECT cache_key FROM labeller_verdicts WHERE cache_key = ANY(%s)",
                                                      ([k for k, _ in dead],))}
        if stale := sorted(mine & done):
            conn.execute("DELETE FROM labeller_leases WHERE cache_key = ANY(%s) AND owner = %s", (stale, owner))
        return [DONE if k in done else MINE if k in mine else IN_BATCH if k in batched else BUSY for k in keys]

    def _take_over(self, dead: list[tuple[str, str]], owner: str, ttl: float) -> set[str]:
        """Leases whose holder died on this machine: taken at once, on the condition it still holds them."""
        rows = self._conn.execute("""
            UPDATE labeller_leases AS l SET owner = %s, expires_at = now() + make_interval(secs => %s)
            FROM unnest(%s::text[], %s::text[]) AS d(k, o)
            WHERE l.cache_key = d.k AND l.owner = d.o
            RETURNING l.cache_key""", (owner, ttl, [k for k, _ in dead], [h for _, h in dead])).fetchall()
        return {row[0] for row in rows}

    @_store_errors
    def renew(self, keys: list[str], owner: str, ttl: float = LEASE_TTL) -> None:
        self._conn.execute("""UPDATE labeller_leases SET expires_at = now() + make_interval(secs => %s)
                              WHERE cache_key = ANY(%s) AND owner = %s""", (ttl, sorted(set(keys)), owner))

    @_store_errors
    def release(self, keys: list[str], owner: str) -> None:
        self._conn.execute("DELETE FROM labeller_leases WHERE cache_key = ANY(%s) AND owner = %s",
                           (sorted(set(keys)), owner))

    @_store_errors
    def lease_holder(self, key: str) -> str | None:
        row = self._conn.execute("SELECT owner FROM labeller_leases WHERE cache_key = %s AND expires_at > now()",
                                 (key,)).fetchone()
        return None if row is None else row[0]

    # -- provider batches -----------------------------------------------------------------------
    @_store_errors
    def put_batch(self, provider: str, batch_id: str, keys: list[str],
                  meta: dict[str, Any] | None = None) -> BatchRecord:
        ordered = list(dict.fromkeys(keys))
        with self._conn.transaction(), self._conn.cursor() as cur:
            cur.execute("""INSERT INTO labeller_batches (provider, batch_id, meta) VALUES (%s, %s, %s)
                           ON CONFLICT DO NOTHING RETURNING 1""", (provider, batch_id, Jsonb(meta or {})))
            if cur.fetchone() is not None:
                cur.execute("""INSERT INTO labeller_batch_keys (provider, batch_id, position, cache_key)
                               SELECT %s, %s, i, k FROM unnest(%s::text[]) WITH ORDINALITY AS t(k, i)""",
                            (provider, batch_id, ordered))
        return self.get_batch(provider, batch_id)  # type: ignore[return-value]

    def _batch_rows(self, where: str, params: tuple) -> list[BatchRecord]:
        rows = self._conn.execute(f"""
            SELECT b.provider, b.batch_id, b.meta, b.status, b.outcome, b.created_at, b.finished_at,
                   coalesce((SELECT array_agg(cache_key ORDER BY position) FROM labeller_batch_keys bk
                             WHERE bk.provider = b.provider AND bk.batch_id = b.batch_id), '{{}}')
            FROM labeller_batches b WHERE {where} ORDER BY b.seq""", params).fetchall()
        return [BatchRecord(provider=p, batch_id=b, meta=meta, status=status, outcome=outcome, keys=list(keys),
                            created_at=_iso(created), finished_at=_iso(finished) if finished else None)
                for p, b, meta, status, outcome, created, finished, keys in rows]

    @_store_errors
    def get_batch(self, provider: str, batch_id: str) -> BatchRecord | None:
        found = self._batch_rows("b.provider = %s AND b.batch_id = %s", (provider, batch_id))
        return found[0] if found else None

    @_store_errors
    def open_batches(self, provider: str | None = None) -> list[BatchRecord]:
        if provider is None:
            return self._batch_rows("b.status = 'open'", ())
        return self._batch_rows("b.status = 'open' AND b.provider = %s", (provider,))

    @_store_errors
    def finish_batch(self, provider: str, batch_id: str, outcome: str = "completed") -> None:
        self._conn.execute("""UPDATE labeller_batches SET status = 'finished', outcome = %s, finished_at = now()
                              WHERE provider = %s AND batch_id = %s AND status = 'open'""",
                           (outcome, provider, batch_id))

    # -- inspection -----------------------------------------------------------------------------
    def records(self) -> Iterator[CachedVerdict]:
        """Keyset pages in key order: no transaction stays open while the caller works through them."""
        after = ""
        while page := self._page(after):
            sound = without_damaged(dict(page), self.location, self._set_aside)
            yield from (CachedVerdict.model_validate_json(raw) for key, raw in page if key in sound)
            after = page[-1][0]

    @_store_errors
    def _page(self, after: str, size: int = 2000) -> list[tuple[str, str]]:
        return self._conn.execute("""SELECT cache_key, record FROM labeller_verdicts WHERE cache_key > %s
                                     ORDER BY cache_key LIMIT %s""", (after, size)).fetchall()

    @_store_errors
    def stats(self) -> StoreStats:
        one = lambda sql: self._conn.execute(sql).fetchone()  # noqa: E731
        entries, tokens_in, tokens_out, cost, no_cost = one(
            """SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
                      coalesce(sum(cost_usd), 0), count(*) FILTER (WHERE cost_usd IS NULL) FROM labeller_verdicts""")
        by = {col: dict(self._conn.execute(f"SELECT {col}, count(*) FROM labeller_verdicts GROUP BY {col}").fetchall())
              for col in ("judge", "rubric")}
        size = self._conn.execute("SELECT sum(pg_total_relation_size(to_regclass(t))) FROM unnest(%s::text[]) AS t",
                                  (list(_TABLES),)).fetchone()[0]
        return StoreStats(backend=self.backend, location=self.location, entries=entries, by_judge=by["judge"],
                          by_rubric=by["rubric"], input_tokens=int(tokens_in), output_tokens=int(tokens_out),
                          cost_usd=round(float(cost), 6), entries_without_cost=no_cost,
                          failures_recorded=one("SELECT count(*) FROM labeller_failures")[0],
                          leases_held=one("SELECT count(*) FROM labeller_leases WHERE expires_at > now()")[0],
                          batches_open=one("SELECT count(*) FROM labeller_batches WHERE status = 'open'")[0],
                          size_bytes=int(size or 0))

    def close(self) -> None:
        self._conn.close()

