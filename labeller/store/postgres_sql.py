"""The PostgreSQL store's schema (its migrations, by version) and the SQL text its lookups are built from
(store.postgres): what the server is asked, apart from how the store asks it."""

from __future__ import annotations

import json
from typing import Any

import orjson

SCHEMA_VERSION = 2
_LOCK_ID = 0x6C61_6265_6C6C  # pg_advisory_xact_lock id serialising schema creation ("label" in hex-ish)
_TABLES = ("labeller_verdicts", "labeller_leases", "labeller_failures", "labeller_batches", "labeller_batch_keys",
           "labeller_schema_version")
MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE labeller_verdicts (
             cache_key text PRIMARY KEY,
             record text NOT NULL,               -- CachedVerdict JSON, exactly as the directory store keeps it
             judge text NOT NULL,
             rubric text NOT NULL,               -- name@version
             input_tokens bigint, output_tokens bigint, cost_usd double precision,
             stored_at timestamptz NOT NULL DEFAULT now())""",
        """CREATE TABLE labeller_leases (
             cache_key text PRIMARY KEY, owner text NOT NULL, expires_at timestamptz NOT NULL)""",
        """CREATE TABLE labeller_failures (
             cache_key text PRIMARY KEY, record text NOT NULL, stored_at timestamptz NOT NULL DEFAULT now())""",
        """CREATE TABLE labeller_batches (
             seq bigserial, provider text NOT NULL, batch_id text NOT NULL, meta jsonb NOT NULL,
             status text NOT NULL DEFAULT 'open', outcome text,
             created_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz,
             PRIMARY KEY (provider, batch_id))""",
        """CREATE TABLE labeller_batch_keys (
             provider text NOT NULL, batch_id text NOT NULL, position integer NOT NULL, cache_key text NOT NULL,
             PRIMARY KEY (provider, batch_id, cache_key),
             FOREIGN KEY (provider, batch_id) REFERENCES labeller_batches ON DELETE CASCADE)""",
        "CREATE INDEX labeller_batch_keys_by_key ON labeller_batch_keys (cache_key)",
    ],
    2: [
        # A verdict's cached-rerun row (cached_row.CACHED_ROW's object, built once as it is written) and the
        # fingerprint of the projection that built it: a rerun reads the rows as they are, instead of turning
        # every record into a row in Python (~7 µs a key, on the thread that also hashes the prompts). Verdicts
        # stored before have none, and are read as records.
        "ALTER TABLE labeller_verdicts ADD COLUMN label_row text, ADD COLUMN label_row_of text",
        # A lookup walks one bucket of a hash index instead of the levels of the primary key's btree: 5.5 µs a
        # key of server time became 2.7 in a cached rerun's join of 5,000 unnested keys.
        "CREATE INDEX labeller_verdicts_by_key_hash ON labeller_verdicts USING hash (cache_key)",
    ],
}
# The verdicts among {keys}: one text that the server splits at newlines (_found), or an array
_FOUND = "FROM unnest({keys}) AS k(cache_key) JOIN labeller_verdicts v USING (cache_key)"
_KEPT = "v.label_row_of IS NOT DISTINCT FROM %(of)s"  # the row kept with the verdict is the one asked for
_OPEN_BATCH_COVERS = """EXISTS (SELECT 1 FROM labeller_batch_keys bk JOIN labeller_batches b USING (provider, batch_id)
                                WHERE bk.cache_key = k AND b.status = 'open')"""


def _found(keys: list[str], **params: str) -> tuple[str, dict[str, Any]]:
    """_FOUND for these keys, and its parameters."""
    keys_sql, value = _text_array("keys", keys)
    return _FOUND.format(keys=keys_sql), {"keys": value, **params}


def _text_array(name: str, texts: list[str]) -> tuple[str, str | list[str]]:
    """SQL for a text[] parameter `name`, and its value: one newline-joined text that the server splits, or (a
    text holding a newline) the list. psycopg builds an array parameter in Python, an element at a time (2.8 µs
    a key, holding the GIL the planner needs); the joined text costs 0.1 µs a key."""
    joined = "\n".join(texts)
    if joined and joined.count("\n") == len(texts) - 1:  # the server splits '' into no text at all
        return f"string_to_array(%({name})s, E'\\n')", joined
    return f"%({name})b::text[]", texts


def _json_text(values: list[dict[str, Any]]) -> str:
    try:
        return orjson.dumps(values).decode("utf-8")
    except TypeError:  # an integer past 64 bits (the bigint column refuses it, with the server's own error)
        return json.dumps(values, ensure_ascii=False)


def _split_into(joined_keys: str | None, joined: Any, sep: Any, into: dict[str, Any], expected: int) -> bool:
    """Whether two joined strings split into `expected` keys and values (then put into `into`)."""
    if not expected:
        return True
    names, values = joined_keys.split("\n"), joined.split(sep)
    if len(names) == len(values) == expected:
        into.update(zip(names, values))
        return True
    return False


def _iso(value) -> str:
    return value.isoformat(timespec="milliseconds")
