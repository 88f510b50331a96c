"""The PostgreSQL store against a real server: `labeller label` processes sharing it through the real CLI
and SDKs, a killed run, the schema and its version, and no credential anywhere in a dump of the database."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest
from fakeapi import FakeAPI
from pgserver import find_bin
from test_label_fakeapi_e2e import (KEY, N_PAIRS, assert_key_not_on_disk, check_outcome, command, environment,
                                    inputs, kill_mid_run, label)

from labeller.cli import main
from labeller.errors import BadInputError
from labeller.store import LEASE_TTL, open_store, redact_url
from labeller.store.postgres import SCHEMA_VERSION

__all__ = ["inputs"]  # the fixture, shared with the end-to-end tests


def _new_pairs(stderr: str) -> int:
    return int(re.search(r"pairs: (\d+) new", stderr).group(1))


def test_two_label_processes_started_at_once_pay_for_each_pair_once(inputs: Path, tmp_path: Path, postgres_url):
    with FakeAPI(latency=0.2) as api:
        outs = [tmp_path / f"labels-{name}.jsonl" for name in ("a", "b")]
        procs = [subprocess.Popen(command(inputs, out, postgres_url, concurrency=16), env=environment(api),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for out in outs]
        results = [p.communicate(timeout=120) for p in procs]
        assert api.total == N_PAIRS, f"{api.total} requests for {N_PAIRS} pairs"
    news = []
    for proc, out, (stdout, stderr) in zip(procs, outs, results):
        assert proc.returncode == 0, stderr
        assert KEY not in stdout + stderr
        check_outcome(out, subprocess.CompletedProcess([], 0, stdout, stderr))
        news.append(_new_pairs(stderr))
    assert sum(news) == N_PAIRS and min(news) > 0, news  # both worked, neither paid what the other did
    with open_store(postgres_url, create=False) as store:
        stats = store.stats()
    assert stats.entries == N_PAIRS and stats.leases_held == 0


def test_a_killed_label_run_loses_nothing_and_the_rerun_takes_its_leases_at_once(inputs: Path, tmp_path: Path,
                                                                                  postgres_url):
    out, concurrency = tmp_path / "labels.jsonl", 8
    with FakeAPI(latency=0.1) as api:
        first = kill_mid_run(api, command(inputs, out, postgres_url, concurrency=concurrency))
        with open_store(postgres_url) as store:
            kept = store.stats().entries
        assert kept >= first - concurrency  # every answer received before the kill was stored

        api.latency = 0.0
        api.reset()
        done = label(api, command(inputs, out, postgres_url, concurrency=concurrency))
        assert check_outcome(out, done) == [] and done.returncode == 0
        assert api.total == N_PAIRS - kept and first + api.total <= N_PAIRS + concurrency, (first, kept, api.total)
        elapsed = float(re.search(r"failed[^(]*\((\d+(?:\.\d+)?)s\)", done.stderr).group(1))
        assert elapsed < LEASE_TTL / 2, f"the rerun waited {elapsed}s for the killed run's leases"
        api.reset()
        third = label(api, command(inputs, out, postgres_url, concurrency=concurrency))
        assert api.total == 0 and f"{N_PAIRS} from cache" in third.stderr


def _dump(url: str) -> str:
    """The whole database as text: pg_dump's data and schema, and every row of every table."""
    bindir = find_bin()
    dump = subprocess.run([str(bindir / "pg_dump"), "--dbname", url], capture_output=True, text=True, check=True).stdout
    with psycopg.connect(url) as conn:
        tables = [t for (t,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        rows = [str(row) for t in tables for row in conn.execute(f'SELECT t::text FROM "{t}" t')]
    assert "labeller_verdicts" in tables and len(rows) > N_PAIRS // 2
    return dump + "\n".join(rows)


def test_the_api_key_and_the_base_url_are_nowhere_in_the_database(inputs: Path, tmp_path: Path, postgres_url):
    with FakeAPI(latency=0.0) as api:
        label(api, command(inputs, tmp_path / "labels.jsonl", postgres_url))
        text = _dump(postgres_url)
        assert KEY not in text and KEY[-8:] not in text
        assert api.openai_url not in text and f":{api.port}" not in text
    assert "grade" in text  # the dump really holds the verdicts
    assert_key_not_on_disk(tmp_path)


def test_the_schema_is_created_once_and_versioned(postgres_url):
    opened: list = []
    errors: list = []

    def first_use():
        try:
            opened.append(open_store(postgres_url))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=first_use) for _ in range(4)]  # four first users at once
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(opened) == 4
    for store in opened:
        store.close()
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM labeller_schema_version ORDER BY version").fetchall() == \
            [(version,) for version in range(1, SCHEMA_VERSION + 1)]
        conn.execute("INSERT INTO labeller_schema_version (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(BadInputError, match=f"schema version {SCHEMA_VERSION + 1}, newer than this labeller"):
        open_store(postgres_url)


def test_a_store_of_schema_version_1_is_migrated_and_its_verdicts_read_as_records(postgres_url):
    """Version 2 keeps each verdict's cached-rerun row beside its record and adds a hash index on the key. A
    verdict stored under version 1 has no row: it is read as its record, and one stored after the migration
    is read as its row, in one lookup."""
    from labeller.records import Verdict
    from labeller.store import CachedVerdict
    from labeller.store.cached_row import CACHED_ROW
    from labeller.store.postgres import MIGRATIONS

    def verdict(key):
        return CachedVerdict(cache_key=key, query_id="q", doc_id="d", verdict=Verdict(justification="fits", grade=3),
                             judge="fake:scripted", provider="fake", model="scripted", schema_version="1", rubric="r",
                             rubric_version="v", created_at="2026-01-01T00:00:00.000+00:00")

    old = verdict("stored-under-v1")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE labeller_schema_version (version integer PRIMARY KEY, applied_at timestamptz "
                     "NOT NULL DEFAULT now())")
        for statement in MIGRATIONS[1]:
            conn.execute(statement)
        conn.execute("INSERT INTO labeller_schema_version (version) VALUES (1)")
        conn.execute("INSERT INTO labeller_verdicts (cache_key, record, judge, rubric) VALUES (%s, %s, 'j', 'r')",
                     (old.cache_key, old.model_dump_json()))
    with open_store(postgres_url) as store:
        store.put_many([verdict("stored-under-v2")])
        projected, stored = store.get_many_projected(["stored-under-v1", "stored-under-v2"], CACHED_ROW)
        assert stored == {"stored-under-v1": old.model_dump_json()} and list(projected) == ["stored-under-v2"]
        assert store.get("stored-under-v1") == old
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT max(version) FROM labeller_schema_version").fetchone() == (2,)
        assert conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'labeller_verdicts_by_key_hash'"
                            ).fetchone()[0].endswith("USING hash (cache_key)")


def test_a_password_never_shows_in_location_stats_or_errors(postgres_url, capsys):
    secret = "s3cret-Pa55word"
    assert redact_url(f"postgresql://bob:{secret}@db.example:5432/labels?sslmode=require") == \
        "postgresql://***:***@db.example:5432/labels?sslmode=require"
    assert secret not in redact_url(f"postgres://h/db?password={secret}&user=u")
    with_password = postgres_url.replace("postgresql://postgres@", f"postgresql://postgres:{secret}@")
    with open_store(with_password) as store:  # trust auth: the password is accepted and ignored
        assert secret not in store.location and secret not in store.stats().model_dump_json()
    with pytest.raises(SystemExit) as stopped:
        main(["cache", "stats", "--cache", with_password.rsplit("/", 1)[0] + "/no_such_db"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "no_such_db" in err and secret not in err and ":***@127.0.0.1" in err


def test_a_url_is_never_taken_for_a_directory(tmp_path, monkeypatch, postgres_url):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main(["cache", "stats", "--cache", postgres_url])  # an empty database: nothing labelled into it yet
    assert stopped.value.code == 2
    monkeypatch.setenv("LABELLER_CACHE", postgres_url)
    with open_store() as store:  # the environment variable picks the default store
        assert store.backend == "postgresql"
    assert list(tmp_path.iterdir()) == []  # no "postgresql:" directory, nothing at all


def test_in_ci_a_missing_server_fails_the_store_tests_instead_of_skipping():
    tests = Path(__file__).resolve().parent
    env = {k: v for k, v in os.environ.items() if k != "LABELLER_TEST_POSTGRES"}
    env["CI"] = "true"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_store.py::test_leases_are_exclusive_until_released_or_expired"],
                          cwd=tests.parent, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout
    errored = "ERROR tests/test_store.py::test_leases_are_exclusive_until_released_or_expired[postgresql]"
    assert errored in done.stdout and "LABELLER_TEST_POSTGRES is not" in done.stdout, done.stdout
    assert "[directory]" not in done.stdout and "skip" not in done.stdout.lower(), done.stdout
