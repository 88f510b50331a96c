"""The verdict cache: keys, leases, stats and export, and several processes sharing one cache."""

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
from fakejudge import RUBRIC_TEXT, FakeJudge, sample, write_rubric

from labeller.cache import BUSY, DONE, MINE, VerdictCache
from labeller.cache_key import cache_key
from labeller.errors import BadInputError
from labeller.judges.openai import OpenAIJudge
from labeller.labelling import LabelOptions, label_pairs
from labeller.prices import ModelPrice, PriceTable
from labeller.records import LabelFailure
from labeller.rubric import load_rubric

WORKER = Path(__file__).with_name("cache_worker.py")
PRICES = PriceTable({"fake": {"scripted": ModelPrice(input=2.0, cached_input=0.5, output=8.0)}})


def _key(judge, rubric, query, doc) -> str:
    return cache_key(provider=judge.provider, model=judge.model, base_url=judge.base_url,
                     settings=judge.decoding_settings(), prompt=rubric.render(query, doc))


def test_one_changed_rubric_word_changes_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    queries, corpus, _ = sample(1, 1)
    q, d = queries["q0"], corpus["d0-0"]
    (tmp_path / "a").mkdir()
    first = load_rubric(write_rubric(tmp_path / "a"))
    second = load_rubric(write_rubric(tmp_path, RUBRIC_TEXT.replace("answers", "addresses")))
    judge = OpenAIJudge("gpt-4.1-mini")
    assert first.version != second.version
    assert _key(judge, first, q, d) != _key(judge, second, q, d)


def test_timeouts_do_not_change_the_key_but_temperature_does(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    queries, corpus, _ = sample(1, 1)
    q, d = queries["q0"], corpus["d0-0"]
    rubric = load_rubric(write_rubric(tmp_path))
    base = _key(OpenAIJudge("gpt-4.1-mini", timeout=60.0), rubric, q, d)
    assert _key(OpenAIJudge("gpt-4.1-mini", timeout=5.0), rubric, q, d) == base
    assert _key(OpenAIJudge("gpt-4.1-mini", temperature=0.7), rubric, q, d) != base
    assert _key(OpenAIJudge("gpt-4.1", timeout=60.0), rubric, q, d) != base


def test_leases_are_exclusive_until_released_or_expired(tmp_path):
    with VerdictCache(tmp_path / "c") as cache:
        assert cache.claim(["k", "j"], "host|1|a") == [MINE, MINE]
        assert cache.claim(["k", "new"], "other|2|b") == [BUSY, MINE]
        cache.release(["k"], "other|2|b")  # not the holder: nothing happens
        assert cache.lease_holder("k") == "host|1|a"
        cache.release(["k"], "host|1|a")
        assert cache.claim(["k"], "other|2|b") == [MINE]
        assert cache.claim(["short"], "other|2|b", ttl=0.05) == [MINE]
        time.sleep(0.1)
        assert cache.claim(["short"], "host|1|a") == [MINE]


def test_a_cached_verdict_is_never_claimed_and_storing_it_drops_its_lease(tmp_path):
    run, _ = _label(tmp_path, FakeJudge(), n=1)
    key = run.labels[0].cache_key
    with VerdictCache(tmp_path / "cache") as cache:
        assert cache.claim([key, "other"], "me|1|x") == [DONE, MINE]
        assert cache.lease_holder(key) is None
        record = cache.get(key).model_copy(update={"cache_key": "other"})
        cache.put(record)
        assert cache.lease_holder("other") is None and cache.claim(["other"], "you|2|y") == [DONE]


def test_a_lease_of_a_dead_process_is_taken_over_at_once(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    unreaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    unreaped.kill()  # killed but not waited for: a zombie until reaped
    time.sleep(0.2)
    host = socket.gethostname()
    try:
        with VerdictCache(tmp_path / "c") as cache:
            assert cache.claim(["dead"], f"{host}|{gone.pid}|x") == [MINE]
            assert cache.claim(["zombie"], f"{host}|{unreaped.pid}|x") == [MINE]
            assert cache.claim(["live"], f"{host}|{os.getppid()}|x") == [MINE]
            assert cache.claim(["dead", "zombie", "live"], "me|1|y") == [MINE, MINE, BUSY]
            assert cache.lease_holder("dead") == "me|1|y"
    finally:
        unreaped.wait()


def _label(tmp_path, judge, n=2):
    queries, corpus, pairs = sample(n)
    rubric = load_rubric(write_rubric(tmp_path))
    with VerdictCache(tmp_path / "cache") as cache:
        return asyncio.run(label_pairs(pairs, queries, corpus, judge, rubric, cache,
                                       LabelOptions(progress=False), prices=PRICES)), rubric


def test_stats_count_verdicts_tokens_and_cost(tmp_path):
    run, rubric = _label(tmp_path, FakeJudge(script={"d1-1": ["malformed"] * 3}))
    with VerdictCache(tmp_path / "cache", create=False) as cache:
        stats = cache.stats()
    assert stats.entries == 7 and stats.failures_recorded == 1 and stats.leases_held == 0
    assert stats.by_judge == {"fake:scripted": 7}
    assert stats.by_rubric == {f"testing@{rubric.version}": 7}
    assert stats.input_tokens == sum(lb.input_tokens for lb in run.labels)
    assert stats.cost_usd == pytest.approx(sum(lb.cost_usd for lb in run.labels))
    assert stats.size_bytes > 0


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_export_writes_every_verdict(tmp_path, suffix):
    run, _ = _label(tmp_path, FakeJudge())
    out = tmp_path / f"export{suffix}"
    with VerdictCache(tmp_path / "cache") as cache:
        assert cache.export(out) == 8
    frame = pd.read_json(out, lines=True) if suffix == ".jsonl" else (
        pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out))
    assert len(frame) == 8
    exported = {(r.query_id, r.doc_id): r.grade for r in frame.itertuples()}
    assert exported == {(lb.query_id, lb.doc_id): lb.grade for lb in run.labels}


def test_a_recorded_failure_is_never_served_as_a_verdict(tmp_path):
    with VerdictCache(tmp_path / "c") as cache:
        cache.record_failure(LabelFailure(query_id="q", doc_id="d", judge="j", rubric="r", rubric_version="v",
                                          cache_key="k", reason="gave up", attempts=3, created_at="now"))
        assert cache.get("k") is None and "k" not in cache
        assert cache.stats().failures_recorded == 1


def test_stats_on_a_missing_cache_is_bad_input(tmp_path):
    with pytest.raises(BadInputError, match="no verdict cache here"):
        VerdictCache(tmp_path / "nothing", create=False)
    assert not (tmp_path / "nothing").exists()


def _worker(tmp_path, name, n, latency, concurrency, go=None):
    args = [sys.executable, str(WORKER), str(tmp_path / "cache"), str(tmp_path / "rubric.md"),
            str(tmp_path / "calls.txt"), str(tmp_path / f"{name}.json"), str(n), str(latency), str(concurrency)]
    return subprocess.Popen(args + ([str(go)] if go else []))


def _calls(tmp_path) -> Counter:
    path = tmp_path / "calls.txt"
    lines = path.read_text().splitlines() if path.exists() else []
    return Counter(tuple(line.split()[1:]) for line in lines)


def test_two_processes_sharing_a_cache_never_pay_twice(tmp_path):
    write_rubric(tmp_path)
    go = tmp_path / "go"
    workers = [_worker(tmp_path, name, 10, 0.03, 4, go) for name in ("a", "b")]
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
    with VerdictCache(tmp_path / "cache") as cache:
        assert cache.stats().entries == 40 and cache.stats().leases_held == 0
        assert cache._db.check() == []  # SQLite and file consistency


def test_a_killed_run_loses_nothing_and_its_leases_do_not_block_the_rerun(tmp_path):
    write_rubric(tmp_path)
    worker = _worker(tmp_path, "killed", 6, 0.3, 4)
    cache = VerdictCache(tmp_path / "cache")
    deadline = time.monotonic() + 30
    while cache.stats().entries < 8 and time.monotonic() < deadline:
        time.sleep(0.02)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    kept = cache.stats().entries
    assert 8 <= kept < 24
    queries, corpus, pairs = sample(6)
    judge = FakeJudge()
    started = time.monotonic()
    run = asyncio.run(label_pairs(pairs, queries, corpus, judge, load_rubric(tmp_path / "rubric.md"), cache,
                                  LabelOptions(progress=False)))
    assert time.monotonic() - started < 10  # no waiting for the dead process's leases to expire
    assert len(judge.calls) == 24 - kept and run.stats.cached == kept
    assert len(run.labels) == 24
    paid_before = _calls(tmp_path)
    paid_twice = [pair for pair in judge.calls if pair in paid_before]
    assert len(paid_twice) <= 4  # only what was in flight when it was killed
    cache.close()
