"""The verdict store, on both backends (a directory, and a real PostgreSQL server): leases, stats,
export, batch records, batched lookups, copies between backends, and several processes sharing one store."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from fakejudge import FakeJudge, sample, write_rubric

from labeller.labelling import LabelOptions, label_pairs
from labeller.prices import ModelPrice, PriceTable
from labeller.records import LabelFailure
from labeller.rubric import load_rubric
from labeller.store import BUSY, DONE, IN_BATCH, MINE, copy_store, open_store
from labeller.store.base import LOOKUP_CHUNK, NoStoreError

WORKER = Path(__file__).with_name("cache_worker.py")
PRICES = PriceTable({"fake": {"scripted": ModelPrice(input=2.0, cached_input=0.5, output=8.0)}})


def test_leases_are_exclusive_until_released_or_expired(store_spec):
    with open_store(store_spec) as store:
        assert store.claim(["k", "j"], "host|1|a") == [MINE, MINE]
        assert store.claim(["k", "new"], "other|2|b") == [BUSY, MINE]
        store.release(["k"], "other|2|b")  # not the holder: nothing happens
        assert store.lease_holder("k") == "host|1|a"
        store.release(["k"], "host|1|a")
        assert store.claim(["k"], "other|2|b") == [MINE]
        assert store.claim(["short"], "other|2|b", ttl=0.05) == [MINE]
        time.sleep(0.1)
        assert store.claim(["short"], "host|1|a") == [MINE]


def test_renewing_a_lease_keeps_it_past_its_first_expiry(store_spec):
    with open_store(store_spec) as store:
        assert store.claim(["k"], "host|1|a", ttl=0.3) == [MINE]
        store.renew(["k"], "host|1|a", ttl=5.0)
        store.renew(["k"], "other|2|b", ttl=0.01)  # not the holder: nothing happens
        time.sleep(0.4)
        assert store.claim(["k"], "other|2|b") == [BUSY]


def test_a_cached_verdict_is_never_claimed_and_storing_it_drops_its_lease(store_spec, tmp_path):
    run, _ = _label(tmp_path, store_spec, FakeJudge(), n=1)
    key = run.labels[0].cache_key
    with open_store(store_spec) as store:
        assert store.claim([key, "other"], "me|1|x") == [DONE, MINE]
        assert store.lease_holder(key) is None
        record = store.get(key).model_copy(update={"cache_key": "other"})
        store.put(record)
        assert store.lease_holder("other") is None and store.claim(["other"], "you|2|y") == [DONE]


def test_a_lease_of_a_dead_process_is_taken_over_at_once(store_spec):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    unreaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    unreaped.kill()  # killed but not waited for: a zombie until reaped
    time.sleep(0.2)
    host = socket.gethostname()
    try:
        with open_store(store_spec) as store:
            assert store.claim(["dead"], f"{host}|{gone.pid}|x") == [MINE]
            assert store.claim(["zombie"], f"{host}|{unreaped.pid}|x") == [MINE]
            assert store.claim(["live"], f"{host}|{os.getppid()}|x") == [MINE]
            assert store.claim(["dead", "zombie", "live"], "me|1|y") == [MINE, MINE, BUSY]
            assert store.lease_holder("dead") == "me|1|y"
    finally:
        unreaped.wait()


def _label(tmp_path, spec, judge, n=2):
    queries, corpus, pairs = sample(n)
    rubric = load_rubric(write_rubric(tmp_path))
    with open_store(spec) as store:
        return asyncio.run(label_pairs(pairs, queries, corpus, judge, rubric, store,
                                       LabelOptions(progress=False), prices=PRICES)), rubric


def test_stats_count_verdicts_tokens_and_cost(store_spec, tmp_path):
    run, rubric = _label(tmp_path, store_spec, FakeJudge(script={"d1-1": ["malformed"] * 3}))
    with open_store(store_spec, create=False) as store:
        stats = store.stats()
    assert stats.entries == 7 and stats.failures_recorded == 1 and stats.leases_held == 0
    assert stats.by_judge == {"fake:scripted": 7}
    assert stats.by_rubric == {f"testing@{rubric.version}": 7}
    assert stats.input_tokens == sum(lb.input_tokens for lb in run.labels)
    assert stats.cost_usd == pytest.approx(sum(lb.cost_usd for lb in run.labels))
    assert stats.size_bytes > 0 and stats.batches_open == 0


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_export_writes_every_verdict(store_spec, tmp_path, suffix):
    run, _ = _label(tmp_path, store_spec, FakeJudge())
    out = tmp_path / f"export{suffix}"
    with open_store(store_spec) as store:
        assert store.export(out) == 8
    frame = pd.read_json(out, lines=True) if suffix == ".jsonl" else (
        pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out))
    assert len(frame) == 8
    exported = {(r.query_id, r.doc_id): r.grade for r in frame.itertuples()}
    assert exported == {(lb.query_id, lb.doc_id): lb.grade for lb in run.labels}


def test_a_recorded_failure_is_never_served_as_a_verdict(store_spec):
    with open_store(store_spec) as store:
        store.record_failure(LabelFailure(query_id="q", doc_id="d", judge="j", rubric="r", rubric_version="v",
                                          cache_key="k", reason="gave up", attempts=3, created_at="now"))
        assert store.get("k") is None and "k" not in store
        assert store.stats().failures_recorded == 1


def test_stats_on_a_missing_store_is_bad_input_and_creates_nothing(store_spec, tmp_path):
    with pytest.raises(NoStoreError, match="no (labeller )?verdict (cache|store)"):
        open_store(store_spec, create=False)
    assert not (tmp_path / "store").exists()
    with open_store(store_spec) as store:  # the same spec, allowed to create: an empty store
        assert store.stats().entries == 0


def test_lookups_and_writes_take_many_keys_at_once(store_spec, tmp_path):
    _label(tmp_path, store_spec, FakeJudge(), n=1)
    with open_store(store_spec) as store:
        template = next(store.records())
        many = [template.model_copy(update={"cache_key": f"k{i:05d}"}) for i in range(LOOKUP_CHUNK * 2 + 7)]
        store.put_many(many)
        store.put_many(many[:10])  # idempotent
        wanted = [r.cache_key for r in many] + ["absent", many[0].cache_key]
        found = store.get_many(wanted)
        assert set(found) == {r.cache_key for r in many} and found["k00003"].cache_key == "k00003"
        assert store.stats().entries == len(many) + 4
        assert [r.cache_key for r in store.records()] == sorted(r.cache_key for r in store.records())
        assert store.claim(["k00001", "absent", "k10000"], "me|1|x") == [DONE, MINE, DONE]


def test_a_batch_is_persisted_and_its_keys_are_busy_until_it_finishes(store_spec):
    with open_store(store_spec) as store:
        first = store.put_batch("openai", "batch_1", ["k3", "k1", "k2"], {"input_file_id": "file-1", "requests": 3})
        assert first.keys == ["k3", "k1", "k2"] and first.status == "open" and first.meta["requests"] == 3
        again = store.put_batch("openai", "batch_1", ["other"], {"changed": True})  # idempotent: the first stays
        assert again.keys == first.keys and again.meta == first.meta
        store.put_batch("anthropic", "msgbatch_2", ["k9"])
        assert store.claim(["k1", "k9", "free"], "me|1|x") == [IN_BATCH, IN_BATCH, MINE]
    with open_store(store_spec) as reopened:  # a killed run's successor finds them
        assert [(b.provider, b.batch_id) for b in reopened.open_batches()] == [("openai", "batch_1"),
                                                                               ("anthropic", "msgbatch_2")]
        assert [b.batch_id for b in reopened.open_batches("anthropic")] == ["msgbatch_2"]
        assert reopened.stats().batches_open == 2
        reopened.finish_batch("openai", "batch_1", "completed")
        reopened.finish_batch("openai", "batch_1", "cancelled")  # finished once: the outcome stays
        done = reopened.get_batch("openai", "batch_1")
        assert done.status == "finished" and done.outcome == "completed" and done.finished_at
        assert reopened.get_batch("openai", "nope") is None
        assert [b.batch_id for b in reopened.open_batches()] == ["msgbatch_2"]
        assert reopened.claim(["k1", "k9"], "me|1|x") == [MINE, IN_BATCH]


def test_a_synchronous_run_sends_nothing_an_open_batch_covers_and_does_not_wait_for_it(store_spec, tmp_path):
    queries, corpus, pairs = sample(2)
    rubric = load_rubric(write_rubric(tmp_path))
    with open_store(tmp_path / "keys-only") as scratch:  # the engine's keys for these pairs
        keys = [lb.cache_key for lb in asyncio.run(label_pairs(pairs, queries, corpus, FakeJudge(), rubric, scratch,
                                                               LabelOptions(progress=False))).labels]
    with open_store(store_spec) as store:
        store.put_batch("openai", "batch_x", keys[:3])
        judge = FakeJudge()
        started = time.monotonic()
        run = asyncio.run(label_pairs(pairs, queries, corpus, judge, rubric, store, LabelOptions(progress=False)))
        assert time.monotonic() - started < 5  # not waiting for the batch
        assert len(judge.calls) == len(pairs) - 3 and run.stats.skipped == 3
        assert {f.cache_key for f in run.failures} == set(keys[:3])
        assert all("open provider batch" in f.reason for f in run.failures)
        store.finish_batch("openai", "batch_x", "expired")
        rerun = asyncio.run(label_pairs(pairs, queries, corpus, judge, rubric, store, LabelOptions(progress=False)))
        assert len(judge.calls) == len(pairs) and not rerun.failures and rerun.stats.cached == len(pairs) - 3


def test_copy_moves_verdicts_between_backends_idempotently(tmp_path, postgres_url):
    run, _ = _label(tmp_path, str(tmp_path / "laptop"), FakeJudge())
    first = copy_store(tmp_path / "laptop", postgres_url)
    assert (first.read, first.copied, first.already) == (8, 8, 0)
    again = copy_store(tmp_path / "laptop", postgres_url)
    assert (again.read, again.copied, again.already) == (8, 0, 8)
    back = copy_store(postgres_url, tmp_path / "other-laptop")
    assert back.copied == 8
    with open_store(tmp_path / "other-laptop") as store:
        assert {k: v.verdict.grade for k, v in store.get_many(lb.cache_key for lb in run.labels).items()} == \
            {lb.cache_key: lb.grade for lb in run.labels}
    with pytest.raises(NoStoreError):
        copy_store(tmp_path / "nothing", postgres_url)
    assert not (tmp_path / "nothing").exists()


def _worker(tmp_path, spec, name, n, latency, concurrency, go=None):
    args = [sys.executable, str(WORKER), spec, str(tmp_path / "rubric.md"),
            str(tmp_path / "calls.txt"), str(tmp_path / f"{name}.json"), str(n), str(latency), str(concurrency)]
    return subprocess.Popen(args + ([str(go)] if go else []))


def _calls(tmp_path) -> Counter:
    path = tmp_path / "calls.txt"
    lines = path.read_text().splitlines() if path.exists() else []
    return Counter(tuple(line.split()[1:]) for line in lines)


def test_two_processes_sharing_a_store_never_pay_twice(store_spec, tmp_path):
    write_rubric(tmp_path)
    go = tmp_path / "go"
    workers = [_worker(tmp_path, store_spec, name, 10, 0.03, 4, go) for name in ("a", "b")]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"{n}.json.ready").exists() for n in ("a", "b")) and time.monotonic() < deadline:
        time.sleep(0.01)  # both imported and waiting
    go.touch()
    assert [w.wait(60) for w in workers] == [0, 0]
    calls = _calls(tmp_path)
    assert len(calls) == 40 and max(calls.values()) == 1  # every pair asked exactly once, by one process
    results = [json.loads((tmp_path / f"{n}.json").read_text()) for n in ("a", "b")]
    assert all(r["labels"] == 40 and r["failures"] == 0 for r in results)
    assert sum(r["stats"]["new"] for r in results) == 40
    assert min(r["stats"]["new"] for r in results) > 0  # the work really was shared
    with open_store(store_spec) as store:
        assert store.stats().entries == 40 and store.stats().leases_held == 0
        if hasattr(store, "check"):
            assert store.check() == []  # SQLite and file consistency


def test_a_killed_run_loses_nothing_and_its_leases_do_not_block_the_rerun(store_spec, tmp_path):
    write_rubric(tmp_path)
    worker = _worker(tmp_path, store_spec, "killed", 6, 0.3, 4)
    store = open_store(store_spec)
    deadline = time.monotonic() + 30
    while store.stats().entries < 8 and time.monotonic() < deadline:
        time.sleep(0.02)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    kept = store.stats().entries
    assert 8 <= kept < 24
    queries, corpus, pairs = sample(6)
    judge = FakeJudge()
    started = time.monotonic()
    run = asyncio.run(label_pairs(pairs, queries, corpus, judge, load_rubric(tmp_path / "rubric.md"), store,
                                  LabelOptions(progress=False)))
    assert time.monotonic() - started < 10  # no waiting for the dead process's leases to expire
    assert len(judge.calls) == 24 - kept and run.stats.cached == kept
    assert len(run.labels) == 24
    paid_before = _calls(tmp_path)
    paid_twice = [pair for pair in judge.calls if pair in paid_before]
    assert len(paid_twice) <= 4  # only what was in flight when it was killed
    store.close()



def _damage(spec: str, key: str, *, keep_row: bool) -> None:
    """The stored record of `key` overwritten with text that is not JSON (a disk fault, a hand edit); its
    cached-rerun row kept or, as a store written by an older labeller has it, absent."""
    if spec.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(spec, autocommit=True) as conn:
            conn.execute("UPDATE labeller_verdicts SET record = 'not json {', "
                         "label_row = CASE WHEN %s THEN label_row END WHERE cache_key = %s", (keep_row, key))
        return
    import diskcache

    with diskcache.Cache(spec) as cache:
        _, tag = cache.get("verdict:" + key, tag=True)
        cache.set("verdict:" + key, "not json {", tag=tag if keep_row else None)


def test_a_damaged_record_is_named_set_aside_and_judged_again(store_spec, tmp_path, monkeypatch, capsys):
    """issue 25: one record that is not JSON stopped every run on its pair, and `cache export`, with a traceback.
    On both stores: it is named on stderr, kept as that key's failure, and its pair judged again; export goes on."""
    from fakeapi import FakeAPI
    from test_hostile_inputs import workspace

    from labeller.cli import main

    (tmp_path / "ws").mkdir()
    root = workspace(tmp_path / "ws")
    monkeypatch.chdir(root)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-store-test")

    def cli(*args: str) -> str:
        with pytest.raises(SystemExit) as done:
            main(list(args))
        err = capsys.readouterr().err
        assert done.value.code in (0, None) and "Traceback" not in err, err
        return err

    with FakeAPI() as api:
        label = ["label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl", "--pairs", "pairs.jsonl",
                 "--rubric", "rubric.md", "--judge", "openai:gpt-4.1-mini", "--base-url", api.openai_url,
                 "--cache", store_spec, "--out", "labels.jsonl"]
        cli(*label)
        keys = [json.loads(line)["cache_key"] for line in (root / "labels.jsonl").read_text().splitlines()]
        grades = _grades(root / "labels.jsonl")
        _damage(store_spec, keys[0], keep_row=True)
        _damage(store_spec, keys[1], keep_row=False)
        api.reset()
        err = cli(*label)
        assert api.total == 1 and "damaged" in err and keys[1] in err and _grades(root / "labels.jsonl") == grades, err  # re-judged; its row served keys[0]
        err = cli("cache", "export", "--cache", store_spec, "--out", "export.jsonl")
        assert keys[0] in err and "damaged" in err and len((root / "export.jsonl").read_text().splitlines()) == 5
        api.reset()
        cli(*label)
        assert api.total == 1 and _grades(root / "labels.jsonl") == grades
        err = cli("cache", "export", "--cache", store_spec, "--out", "export.jsonl")
        assert "damaged" not in err and len((root / "export.jsonl").read_text().splitlines()) == 6
    with open_store(store_spec) as store:
        assert store.stats().failures_recorded == 0  # a new verdict replaced each failure


def _grades(path: Path) -> dict[tuple[str, str], int]:
    return {(r["query_id"], r["doc_id"]): r["grade"] for r in map(json.loads, path.read_text().splitlines())}


def test_a_directory_store_bulk_write_leaves_the_rows_cache_set_would(tmp_path):
    """DirectoryStore.put_many inserts new keys' entries itself (one executemany): the table it leaves must be the
    one diskcache's own Cache.set and Cache.delete leave, written one by one, for new keys, a key held, a key
    twice in one call, a lease and a failure to drop, and a value too long to stay in its row."""
    import diskcache

    from labeller.store.cached_row import CACHED_ROW, cached_row_of
    from labeller.store.directory import FAILURE, LEASE, VERDICT, DirectoryStore

    _label(tmp_path, str(tmp_path / "seed"), FakeJudge(), n=1)
    with open_store(str(tmp_path / "seed")) as seed:
        template = next(seed.records())

    def verdict(key: str, grade: int, words: int = 3) -> object:
        return template.model_copy(update={"cache_key": key, "verdict": template.verdict.model_copy(
            update={"grade": grade, "justification": " ".join(["why"] * words)})})

    first = [verdict("held", 1), verdict("leased", 2)]
    second = [verdict(f"new{i}", i % 4) for i in range(30)] + [
        verdict("held", 3), verdict("twice", 1), verdict("twice", 2), verdict("leased", 0), verdict("failed", 3),
        verdict("long", 2, words=20_000)]  # ~80 kB of JSON: kept in a file of its own
    failure = LabelFailure(query_id="q", doc_id="d", judge="j", rubric="r", rubric_version="v", cache_key="failed",
                           reason="gave up", attempts=3, created_at="now")

    bulk = DirectoryStore(tmp_path / "bulk")
    bulk.put_many(first)
    assert bulk.claim(["leased", "other"], "me|1|x") == [DONE, MINE]
    bulk.record_failure(failure)
    bulk.put_many(second)
    assert bulk.get("twice").verdict.grade == 2 and bulk.get("held").verdict.grade == 3
    assert len(bulk.get("long").verdict.justification) > 70_000
    assert bulk.lease_holder("other") == "me|1|x" and bulk.stats().failures_recorded == 0
    assert bulk.check() == []
    bulk.close()

    plain = diskcache.Cache(str(tmp_path / "plain"), eviction_policy="none", statistics=0)

    def write_one_by_one(batch: list) -> None:
        for record in batch:
            row = cached_row_of(record)
            plain.set(VERDICT + record.cache_key, record.model_dump_json(),
                      tag=None if row is None else f"{CACHED_ROW.fingerprint}:{row}")
            plain.delete(LEASE + record.cache_key)
            plain.delete(FAILURE + record.cache_key)

    write_one_by_one(first)
    plain.add(LEASE + "other", "me|1|x", expire=30)
    plain.set(FAILURE + "failed", failure.model_dump_json())
    write_one_by_one(second)
    plain.close()

    def table(folder: Path) -> tuple[list, list]:
        cache = diskcache.Cache(str(folder))
        try:
            rows = cache._sql("SELECT key, raw, expire_time IS NULL, tag, size, mode, filename IS NULL, value "  # noqa: SLF001
                              "FROM Cache WHERE key NOT LIKE 'lease:%' ORDER BY key").fetchall()
            return rows, cache._sql("SELECT key, value FROM Settings WHERE key IN ('count', 'size')").fetchall()  # noqa: SLF001
        finally:
            cache.close()

    bulk_rows, plain_rows = table(tmp_path / "bulk"), table(tmp_path / "plain")
    assert len(bulk_rows[0]) == 2 + 30 + 3 and bulk_rows == plain_rows
