"""Flat memory (issue 28): a run planned, looked up, judged and written in tiny chunks, with every index of the
slice in temporary files (io.spill at tiny sizes: buckets of 4 values, buffers of 16 bytes, maps let go every 64
bytes read), writes what the same run writes in one chunk with every index in memory: the same bytes for a
cached rerun, the same rows (but for when and how fast) for a first run and for one stopped and resumed; pairs
given twice and pairs sharing a prompt paid once; failures the same."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fakeapi import FakeAPI

import labeller.io.inputs as inputs_module
import labeller.io.spill as spill
import labeller.labelling.engine as engine
from labeller.errors import BudgetExceededError, LabellingFailedError
from labeller.io.id_index import index_of
from labeller.io.inputs import read_corpus, read_pairs, read_queries
from labeller.labelling import LabelInputs, LabelOptions
from labeller.labelling.job import label_job
from labeller.retry import RetryPolicy

FAST = RetryPolicy(initial_wait=0, max_wait=0, max_retry_after=0)
POISON = "[[never-gradable]]"
N_DOCS, N_QUERIES = 50, 7
# what differs between two runs that both paid for a verdict: when, how fast, and whether the fake server's
# prompt cache already held the system prompt (its first request of all does not: cost and cached tokens)
TIMED = {"created_at", "latency_s", "cached_input_tokens", "cost_usd"}


def _write(folder: Path, poisoned: bool) -> Path:
    folder.mkdir()
    docs = [{"doc_id": f"d{i}", "text": f"receipt {i} for office supplies [[grade:{i % 5 + 1}]]"
             + (f" {POISON}" if poisoned and i in (11, 37) else "")} for i in range(N_DOCS)]
    docs += [{"doc_id": f"twin{i}", "text": docs[i]["text"]} for i in (0, 3, 22)]  # one prompt with d0/d3/d22's
    pairs = [(f"q{i % N_QUERIES}", f"d{i}") for i in range(N_DOCS)]
    pairs += [(f"q{i % N_QUERIES}", f"twin{i}") for i in (0, 3, 22)]
    pairs[20:20] = [pairs[2], pairs[19]]  # given twice: the second just after a chunk boundary, and just before
    pairs += [pairs[0], pairs[5], ("q1", "d1")]  # given twice at the very end (the last, once more)
    for name, rows in (("queries", [{"query_id": f"q{i}", "text": f"expense question {i}"} for i in range(N_QUERIES)]),
                       ("corpus", docs), ("pairs", [{"query_id": q, "doc_id": d} for q, d in pairs])):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return folder


def _tiny(monkeypatch, chunk: int = 3) -> None:
    monkeypatch.setattr(engine, "PLAN_CHUNK", chunk)
    monkeypatch.setattr(spill, "SPILL_BUFFER", 16)
    monkeypatch.setattr(spill, "BUCKET_BUFFER", 16)
    monkeypatch.setattr(spill, "BUCKET", 4)
    monkeypatch.setattr(spill, "RELEASE_BYTES", 64)
    monkeypatch.setattr(inputs_module, "PYARROW_PAIRS_FROM", 0)  # the pairs read by pyarrow, into spills


def _label(api: FakeAPI, folder: Path, out: Path, cache: Path, **options):
    try:
        return label_job(LabelInputs(queries=folder / "queries.jsonl", corpus=folder / "corpus.jsonl",
                                     pairs=folder / "pairs.jsonl", cache=cache, out=out, base_url=api.url + "/v1",
                                     options=LabelOptions(progress=False, retry=FAST, concurrency=4, **options)),
                         "openai:gpt-4.1-mini", keep_labels=False)
    except (LabellingFailedError, BudgetExceededError) as exc:
        return exc.run


def _rows(path: Path, drop=frozenset()) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in drop} for line in path.read_text().splitlines()]


@pytest.fixture
def api(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-flat-memory")
    with FakeAPI() as server:
        server.poison = {POISON: "range"}
        yield server


def _sent(api: FakeAPI) -> int:
    return sum(1 for r in api.requests if r.path.endswith("/chat/completions"))


def test_tiny_chunks_and_spilled_indexes_write_what_one_chunk_writes(tmp_path, api, monkeypatch):
    folder = _write(tmp_path / "in", poisoned=True)
    distinct = N_DOCS  # the twins share d0/d3/d22's prompts; pairs given twice are folded
    whole = _label(api, folder, tmp_path / "whole.jsonl", tmp_path / "store-whole")
    paid_whole = _sent(api)
    assert paid_whole == distinct - 2 + 2 * 3  # every prompt once; the two poisoned three times each
    with monkeypatch.context() as tiny:
        _tiny(tiny)
        chunked = _label(api, folder, tmp_path / "chunked.jsonl", tmp_path / "store-chunked")
    assert _sent(api) - paid_whole == paid_whole  # the same requests: nothing paid twice across chunks
    assert _rows(tmp_path / "chunked.jsonl", TIMED) == _rows(tmp_path / "whole.jsonl", TIMED)
    assert len(_rows(tmp_path / "whole.jsonl")) == N_DOCS + 3 - 2  # folded, the failed two not labelled
    for run in (whole, chunked):
        assert (run.stats.new, run.stats.cached, run.stats.failed) == (distinct - 2, 3, 2)
    assert [f.model_dump(exclude={"created_at"}) for f in chunked.failures] == \
           [f.model_dump(exclude={"created_at"}) for f in whole.failures]
    assert [f.doc_id for f in whole.failures] == ["d11", "d37"]
    assert whole.stats.model_dump(exclude={"elapsed_s", "cost_usd", "cached_input_tokens"}) == \
           chunked.stats.model_dump(exclude={"elapsed_s", "cost_usd", "cached_input_tokens"})

    # a cached rerun of one store, in one chunk and in tiny ones: the same bytes, JSONL and CSV
    for suffix in (".jsonl", ".csv"):
        _label(api, folder, tmp_path / f"rerun-whole{suffix}", tmp_path / "store-whole")
        with monkeypatch.context() as tiny:
            _tiny(tiny, chunk=2)
            _label(api, folder, tmp_path / f"rerun-chunked{suffix}", tmp_path / "store-whole")
        assert (tmp_path / f"rerun-whole{suffix}").read_bytes() == (tmp_path / f"rerun-chunked{suffix}").read_bytes()
    assert (tmp_path / "rerun-whole.jsonl").read_bytes().count(b"\n") == N_DOCS + 3 - 2


def test_a_run_stopped_midway_and_resumed_in_tiny_chunks_pays_each_prompt_once(tmp_path, api, monkeypatch):
    folder = _write(tmp_path / "in", poisoned=False)
    _label(api, folder, tmp_path / "whole.jsonl", tmp_path / "store-whole")
    paid_whole = _sent(api)
    assert paid_whole == N_DOCS
    with monkeypatch.context() as tiny:
        _tiny(tiny)
        stopped = _label(api, folder, tmp_path / "part.jsonl", tmp_path / "store", max_cost=0.004)
        assert stopped.stats.budget_stopped and 0 < stopped.stats.new < N_DOCS
        resumed = _label(api, folder, tmp_path / "resumed.jsonl", tmp_path / "store")
    assert _sent(api) - paid_whole == N_DOCS  # the stopped run's verdicts were not bought again
    assert resumed.stats.new == N_DOCS - stopped.stats.new and not resumed.failures
    drop = TIMED | {"from_cache"}
    assert _rows(tmp_path / "resumed.jsonl", drop) == _rows(tmp_path / "whole.jsonl", drop)


@pytest.mark.parametrize("n", [0, 1, 5, 37])
def test_bucketed_sorts_and_spilled_indexes_answer_as_in_memory_ones(monkeypatch, n):
    monkeypatch.setattr(spill, "SPILL_BUFFER", 16)
    monkeypatch.setattr(spill, "BUCKET_BUFFER", 8)
    monkeypatch.setattr(spill, "BUCKET", 4)
    monkeypatch.setattr(spill, "RELEASE_BYTES", 32)
    rng = np.random.default_rng(n)
    values = rng.integers(-2**63, 2**63 - 1, size=n, dtype=np.int64)
    values[::3] = values[0] if n else values[::3]  # equal values, several
    mapped = spill.spilled("q", values)
    assert list(mapped) == values.tolist() and (n < 3 or mapped.mapped)
    buckets = list(spill.bucket_sorted(mapped))
    assert np.concatenate([v for v, _ in buckets] or [np.zeros(0)]).tolist() == sorted(values.tolist())
    assert np.concatenate([p for _, p in buckets] or [np.zeros(0)]).tolist() == \
           np.argsort(values, kind="stable").tolist()
    seen, twins = set(), []
    for i, v in enumerate(values.tolist()):
        (twins.append(i) if v in seen else seen.add(v))
    assert spill.later_twins(mapped).tolist() == twins
    ids = [f"id-{i}-é" for i in range(n)] + ["id-1-é"] * (n > 2)
    index = index_of(ids[:n])
    assert dict(index) == {key: number for number, key in enumerate(ids[:n])}
    assert [index.get(key) for key in ids[:n]] == list(range(n)) and index.get("nope") is None
    assert index.numbers(ids[:n] + ["nope"]).tolist() == list(range(n)) + [-1]
    backwards = list(range(n))[::-1] + list(range(n))
    assert index.names.many(backwards) == [index.names[number] for number in backwards] == \
           [ids[number] for number in backwards]


@pytest.mark.parametrize("by_pyarrow", [True, False])
def test_pairs_read_into_spills_fold_duplicates_as_line_by_line(tmp_path, monkeypatch, by_pyarrow):
    """Numbered pairs (pyarrow's reading, or line by line) in tiny spills: the pairs the plain line-by-line
    reading gives, each pair given twice folded to its first line."""
    folder = _write(tmp_path / "in", poisoned=False)
    plain = read_pairs(folder / "pairs.jsonl")  # not numbered: strings, folded as they are read
    _tiny(monkeypatch)
    if not by_pyarrow:
        monkeypatch.setattr(inputs_module, "PYARROW_PAIRS_FROM", 1 << 40)
    queries, corpus = read_queries(folder / "queries.jsonl", lean=True), read_corpus(folder / "corpus.jsonl", lean=True)
    spilled = read_pairs(folder / "pairs.jsonl", queries, corpus, lean=True)
    assert spilled.doc_ids.numbers.mapped and corpus.starts.mapped  # in temporary files, read through maps
    assert list(zip(spilled.query_ids, spilled.doc_ids)) == [(p.query_id, p.doc_id) for p in plain]
    assert len(spilled) == N_DOCS + 3
