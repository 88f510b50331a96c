"""The shipped canaries, planted into a test copy of the bundled sample and probed with real retrievers."""

import shutil

import pytest

from labeller.canaries import CanaryProbeOptions, load_canaries, plant_files, probe_files
from labeller.io import read_corpus
from labeller.retrieval import make_retriever
from labeller.shipped import shipped_dir

SAMPLE = shipped_dir("pipelines") / "sample"


class OneStore:
    """A real BM25 retriever that can only see the ledger: blind to anything said in chat."""

    def __init__(self, corpus, store="ledger"):
        self.name = f"bm25-{store}-only"
        self.inner = make_retriever("bm25", [d for d in corpus.values() if d.fields.get("store", "ledger") == store])

    def search(self, query, k):
        return self.inner.search(query, k)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sample")
    corpus = shutil.copy(SAMPLE / "corpus.jsonl", tmp / "corpus.jsonl")
    out = tmp / "corpus.test.jsonl"
    result = plant_files(corpus=corpus, canaries=SAMPLE / "canaries.toml", out=out)
    assert result.canary_docs == 5 and result.corpus_docs == len(read_corpus(corpus))
    return out, SAMPLE / "canaries.toml"


def test_the_sample_canaries_cover_every_kind():
    kinds = [c.kind for c in load_canaries(SAMPLE / "canaries.toml")]
    assert {"single", "cross-source", "no-hallucination"} == set(kinds)
    cross = next(c for c in load_canaries(SAMPLE / "canaries.toml") if c.kind == "cross-source")
    assert set(cross.facts_by_store()) == {"chat", "ledger"}


def test_bm25_passes_the_sample_probe(planted):
    corpus, canaries = planted
    report = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, retriever="bm25", k=10))
    assert report.passed, [c.reasons for c in report.canaries]
    assert all(r is not None and r <= 10 for c in report.canaries for r in c.ranks.values())


def test_a_random_retriever_fails_the_sample_probe(planted):
    corpus, canaries = planted
    broken = make_retriever("random", read_corpus(corpus))
    report = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, retriever=broken, k=10))
    assert not report.passed
    assert all(not c.passed for c in report.canaries if c.kind != "no-hallucination")


def test_a_retriever_blind_to_chat_fails_the_cross_source_canary(planted):
    corpus, canaries = planted
    report = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, retriever=OneStore(read_corpus(corpus)),
                                            k=10))
    by_kind = {c.canary_id: c for c in report.canaries}
    cross = by_kind["harbourline-deposit"]
    assert cross.passages.per_store == {"chat": 0.0, "ledger": 1.0} and not cross.passed
    assert by_kind["kite-consignment"].passed and not by_kind["key-safe"].passed and not report.passed


def test_the_judge_check_on_the_sample_goes_through_the_cache(planted, tmp_path, capsys):
    from labeller.cli import main

    corpus, canaries = planted
    args = ["canaries", "probe", "--canaries", str(canaries), "--corpus", str(corpus), "--retriever", "bm25",
            "--judge", "offline:lexical", "--rubric", "general", "--cache", str(tmp_path / "cache")]
    for expected in ("3 graded now, 0 from the cache", "0 graded now, 3 from the cache"):
        with pytest.raises(SystemExit) as exit_:
            main(args)
        out = capsys.readouterr().out
        assert exit_.value.code == 0 and expected in out, out
        assert out.count("; judge 5") == 3
