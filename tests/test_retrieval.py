"""Retrievers on bm25s: sensible hits on the sample, scores that match the BM25 formula, deterministic runs."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from labeller.errors import ConfigError
from labeller.io.inputs import read_corpus, read_gold, read_queries
from labeller.records import Doc, Query, RunEntry
from labeller.retrieval import BM25Retriever, Retriever, available_retrievers, make_retriever, make_run, tokenize
from labeller.shipped import shipped_dir

SAMPLE = shipped_dir("pipelines") / "sample"


@pytest.fixture(scope="module")
def sample():
    return read_queries(SAMPLE / "queries.jsonl"), read_corpus(SAMPLE / "corpus.jsonl")


def docs(*texts: str, **fields) -> list[Doc]:
    return [Doc(doc_id=f"d{i}", text=t, fields={k: v[i] for k, v in fields.items()}) for i, t in enumerate(texts)]


def test_tokenizer_folds_case_accents_plurals_and_drops_stopwords():
    assert tokenize("The Café's INK Cartridges, for 2 printers & batteries") == [
        "cafe", "ink", "cartridge", "printer", "battery"]
    assert tokenize("business glass status") == ["business", "glass", "status"]  # -ss/-us are not plurals
    assert tokenize("") == []


def test_registry_names_and_protocol():
    names = available_retrievers()
    assert {"bm25", "bm25-desc", "bm25-weak"} <= set(names)
    retriever = make_retriever("bm25", docs("copier paper", "printer ink"))
    assert isinstance(retriever, Retriever) and retriever.name == "bm25"


def test_scores_match_the_lucene_bm25_formula():
    corpus = docs("red apple red", "green apple pie with cream", "blue sky", "apple apple apple tart")
    k1, b = 1.2, 0.75
    retriever = BM25Retriever(corpus, k1=k1, b=b)
    toks = [tokenize(d.text) for d in corpus]
    avgdl = sum(map(len, toks)) / len(toks)

    def expected(query: str, doc: list[str]) -> float:
        tf, total = Counter(doc), 0.0
        for term in tokenize(query):
            df = sum(term in t for t in toks)
            if not df or not tf[term]:
                continue
            idf = math.log(1 + (len(toks) - df + 0.5) / (df + 0.5))
            total += idf * tf[term] / (tf[term] + k1 * (1 - b + b * len(doc) / avgdl))
        return total

    hits = retriever.search("apple tart", 10)
    assert [h.doc_id for h in hits] == sorted((d.doc_id for d, t in zip(corpus, toks) if expected("apple tart", t) > 0),
                                              key=lambda i: -expected("apple tart", toks[int(i[1:])]))
    for hit in hits:
        assert hit.score == pytest.approx(expected("apple tart", toks[int(hit.doc_id[1:])]), rel=1e-5)


def test_only_matching_documents_are_returned_and_unknown_words_return_nothing():
    retriever = make_retriever("bm25", docs("copier paper", "printer ink", "train fare"))
    assert [h.doc_id for h in retriever.search("paper", 10)] == ["d0"]
    assert retriever.search("zebra", 10) == []
    assert retriever.search("paper", 0) == []


def test_ties_are_broken_by_doc_id_and_k_cuts_after_the_tie_break():
    corpus = [Doc(doc_id=i, text="copier paper") for i in ("z9", "a1", "m5", "b2")]
    retriever = make_retriever("bm25", corpus)
    assert [h.doc_id for h in retriever.search("paper", 10)] == ["a1", "b2", "m5", "z9"]
    assert [h.doc_id for h in retriever.search("paper", 2)] == ["a1", "b2"]


def test_building_and_searching_print_nothing(capfd):
    retriever = make_retriever("bm25", docs(*[f"item {i} paper" for i in range(50)]))
    make_run(retriever, [Query(query_id="q", text="paper")], 5)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_bad_configuration_is_a_clear_error():
    with pytest.raises(ConfigError, match="unknown retriever 'bm26'.*bm25"):
        make_retriever("bm26", docs("a b"))
    with pytest.raises(ConfigError, match="no parameter 'k3'.*k1"):
        make_retriever("bm25", docs("copier paper"), k3=1.0)
    tuned = make_retriever("bm25", docs("copier paper"), k1=0.9, b=0.4)
    assert (tuned.k1, tuned.b) == (0.9, 0.4)
    with pytest.raises(ConfigError, match="description"):
        make_retriever("bm25-desc", docs("copier paper"))  # no description column
    with pytest.raises(ConfigError, match="empty corpus"):
        make_retriever("bm25", [])


def test_make_run_ranks_queries_in_order_and_never_searches_hidden_fields():
    corpus = docs("travel agent invoice", "copier paper", category=["Office supplies", "Travel"])
    queries = {"q2": Query(query_id="q2", text="copier paper", fields={"category": "Travel"}),
               "q1": Query(query_id="q1", text="unknown words", fields={"category": "Travel"})}
    run = make_run(make_retriever("bm25", corpus), queries, 5)
    # q1 matches nothing: its category ('Travel') is never part of the search text
    assert run == [RunEntry(query_id="q2", doc_id="d1", score=run[0].score, rank=1)]


def test_a_query_from_a_supplier_with_its_own_name_finds_that_supplier_first(sample):
    queries, corpus = sample
    retriever = make_retriever("bm25", corpus)
    for qid in ("q19", "q14", "q25"):  # Tasklane, Severnside Energy, Kestrel Insurance Brokers
        supplier = queries[qid].fields["supplier"]
        assert sum(d.fields["supplier"] == supplier for d in corpus.values()) >= 3
        hits = retriever.search(retriever.query_text(queries[qid]), 3)
        assert [corpus[h.doc_id].fields["supplier"] for h in hits] == [supplier] * 3, qid


def test_description_variant_searches_the_query_description_only(sample):
    queries, corpus = sample
    retriever = make_retriever("bm25-desc", corpus)
    query = queries["q02"]
    assert retriever.query_text(query) == query.fields["description"]
    top = retriever.search(retriever.query_text(query), 5)
    assert all("305" in corpus[h.doc_id].fields["description"] for h in top)


def _recall_at(run: list[RunEntry], gold: dict[str, set[str]], k: int) -> float:
    got: dict[str, set[str]] = {}
    for entry in run:
        if entry.rank is not None and entry.rank <= k:
            got.setdefault(entry.query_id, set()).add(entry.doc_id)
    return sum(len(rel & got.get(q, set())) / len(rel) for q, rel in gold.items()) / len(gold)


def test_weak_variant_recalls_less_of_the_gold_than_bm25(sample):
    queries, corpus = sample
    relevant: dict[str, set[str]] = {}
    for g in read_gold(shipped_dir("gold") / "transactions.jsonl"):
        if g.annotator == "maintainer-a" and g.grade >= 4:
            relevant.setdefault(g.query_id, set()).add(g.doc_id)
    recall = {name: _recall_at(make_run(make_retriever(name, corpus), queries, 10), relevant, 10)
              for name in ("bm25", "bm25-desc", "bm25-weak")}
    assert recall["bm25"] > recall["bm25-desc"] > recall["bm25-weak"], recall
    assert recall["bm25"] >= 0.6


def test_runs_are_deterministic_across_builds(sample):
    queries, corpus = sample
    first = make_run(make_retriever("bm25", corpus), queries, 20)
    second = make_run(make_retriever("bm25", reversed(list(corpus.values()))), queries, 20)
    assert first == second
    for qid in queries:
        ranks = [e.rank for e in first if e.query_id == qid]
        assert ranks == list(range(1, len(ranks) + 1))
