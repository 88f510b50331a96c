"""The bundled bookkeeping sample and its gold set: valid, reproducible, and consistent with each other."""

from __future__ import annotations

import collections
import subprocess
import sys

import pytest

from labeller.io.inputs import check_known, read_corpus, read_gold, read_queries
from labeller.shipped import shipped_dir

SAMPLE = shipped_dir("pipelines") / "sample"
GOLD = shipped_dir("gold")
FIELDS = {"supplier", "description", "amount", "currency", "vat", "date", "category"}
VAT = {"standard 20%", "reduced 5%", "zero-rated", "exempt", "outside scope", "reverse charge"}


@pytest.fixture(scope="module")
def sample():
    return read_queries(SAMPLE / "queries.jsonl"), read_corpus(SAMPLE / "corpus.jsonl")


def test_sample_files_read_cleanly_with_the_expected_shape(sample):
    queries, corpus = sample
    assert 2500 <= len(corpus) <= 3500 and 30 <= len(queries) <= 60
    for record in [*queries.values(), *corpus.values()]:
        assert set(record.fields) == FIELDS, record
        assert record.fields["vat"] in VAT
        assert record.fields["currency"] in {"GBP", "USD", "EUR"}
        assert isinstance(record.fields["amount"], (int, float)) and record.fields["amount"] > 0
    for path in (SAMPLE / "corpus.jsonl", SAMPLE / "queries.jsonl"):
        assert path.stat().st_size < 3_000_000


def test_ledger_predates_the_new_transactions(sample):
    queries, corpus = sample
    assert max(d.fields["date"] for d in corpus.values()) < min(q.fields["date"] for q in queries.values())


def test_category_is_label_time_only_never_in_the_searchable_text(sample):
    queries, _ = sample
    for query in queries.values():
        supplier, description, amount, vat = query.text.split(" — ")
        assert (supplier, description, vat) == (query.fields["supplier"], query.fields["description"],
                                                f"VAT {query.fields['vat']}"), query.query_id
        assert f"{query.fields['amount']:,.2f}" in amount


def test_sample_has_the_traps_it_promises(sample):
    queries, corpus = sample
    ledger_categories = {d.fields["category"] for d in corpus.values()}
    no_answer = [q for q in queries.values() if q.fields["category"] not in ledger_categories]
    assert len(no_answer) >= 2
    suppliers = {d.fields["supplier"] for d in corpus.values()}
    assert len([q for q in queries.values() if q.fields["supplier"] not in suppliers]) >= 4  # unseen suppliers
    per_supplier = collections.defaultdict(set)
    for doc in corpus.values():
        per_supplier[doc.fields["supplier"]].add(doc.fields["category"])
    assert sum(len(cats) >= 3 for cats in per_supplier.values()) >= 5  # suppliers selling several categories
    assert {"zero-rated", "standard 20%"} <= {d.fields["vat"] for d in corpus.values() if d.fields["category"] == "Travel"}


def test_generator_reproduces_the_committed_files_byte_for_byte(tmp_path):
    subprocess.run([sys.executable, "-B", str(SAMPLE / "make_sample.py"), "--out", str(tmp_path)], check=True,
                   capture_output=True, timeout=120)
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / name).read_bytes() == (SAMPLE / name).read_bytes(), f"{name} differs from make_sample.py output"


@pytest.mark.parametrize("name", ["transactions.jsonl", "transactions-tuning.jsonl"])
def test_gold_ids_exist_in_the_sample_and_every_pair_has_a_note(sample, name):
    queries, corpus = sample
    gold = read_gold(GOLD / name)
    for line, row in enumerate(gold, start=1):
        check_known(row.query_id, row.doc_id, queries, corpus, GOLD / name, line)
        assert len(row.note.split()) >= 5, row
        assert row.annotator in {"maintainer-a", "maintainer-b"}
    keys = [(g.query_id, g.doc_id, g.annotator) for g in gold]
    assert len(keys) == len(set(keys)), "a pair graded twice by one annotator"


def test_held_out_gold_spans_all_grades_and_queries_with_a_second_annotator(sample):
    queries, _ = sample
    gold = read_gold(GOLD / "transactions.jsonl")
    first = {(g.query_id, g.doc_id): g.grade for g in gold if g.annotator == "maintainer-a"}
    second = {(g.query_id, g.doc_id): g.grade for g in gold if g.annotator == "maintainer-b"}
    assert 100 <= len(first) <= 200
    counts = collections.Counter(first.values())
    assert all(counts[grade] >= 20 for grade in range(1, 6)), counts
    assert {q for q, _ in first} == set(queries)
    assert len(second) >= 30 and set(second) <= set(first)
    # two careful passes mostly agree, and never by more than one grade
    assert sum(first[p] == second[p] for p in second) / len(second) >= 0.7
    assert all(abs(first[p] - second[p]) <= 1 for p in second)


def test_no_answer_queries_have_nothing_above_grade_two(sample):
    queries, corpus = sample
    ledger_categories = {d.fields["category"] for d in corpus.values()}
    no_answer = {q.query_id for q in queries.values() if q.fields["category"] not in ledger_categories}
    gold = read_gold(GOLD / "transactions.jsonl") + read_gold(GOLD / "transactions-tuning.jsonl")
    graded = [g for g in gold if g.query_id in no_answer]
    assert graded and max(g.grade for g in graded) <= 2
