"""Acceptance metrics: required-evidence coverage, outcome classes kept apart, latency percentiles."""

import json
import statistics
import time

import numpy as np
import pytest

from labeller.acceptance import (acceptance_test, evidence_coverage, latency_stats, outcome_report, percentile,
                                 read_evidence, timed_search)
from labeller.cli import main
from labeller.errors import BadInputError
from labeller.retrieval import Hit


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# -- latency ---------------------------------------------------------------------------------------

def test_percentiles_on_known_samples():
    one_to_hundred = list(range(1, 101))
    # Position (n-1)*q/100: p50 sits halfway between 50 and 51, p95 at 95 + 0.05 * (96 - 95).
    assert percentile(one_to_hundred, 50) == pytest.approx(50.5)
    assert percentile(one_to_hundred, 95) == pytest.approx(95.05)
    assert percentile([10, 20, 30, 40, 1000], 50) == 30
    assert percentile([10, 20, 30, 40, 1000], 95) == pytest.approx(40 + 0.8 * 960)
    assert percentile([7.0], 95) == 7.0
    assert percentile([3, 1, 2], 0) == 1 and percentile([3, 1, 2], 100) == 3


def test_percentiles_agree_with_numpy_and_statistics():
    rng = np.random.default_rng(3)
    samples = rng.lognormal(mean=2.0, sigma=0.8, size=257).tolist()
    for q in (5, 50, 90, 95, 99):
        assert percentile(samples, q) == pytest.approx(np.percentile(samples, q))
    assert percentile(samples, 50) == pytest.approx(statistics.median(samples))
    # statistics.quantiles(method="inclusive") is the same type-7 definition.
    assert percentile(samples, 95) == pytest.approx(statistics.quantiles(samples, n=20, method="inclusive")[18])


def test_latency_stats_record_sample_size_and_concurrency():
    stats = latency_stats([0.010, 0.020, 0.030, 0.040, 1.000], concurrency=4)
    assert (stats.n, stats.concurrency) == (5, 4)
    assert stats.p50_ms == pytest.approx(30.0) and stats.p95_ms == pytest.approx(808.0)
    assert stats.max_ms == pytest.approx(1000.0) and stats.mean_ms == pytest.approx(220.0)
    with pytest.raises(BadInputError):
        latency_stats([])


class SleepyRetriever:
    name = "sleepy"

    def search(self, query, k):
        time.sleep(0.002 if query != "slow" else 0.05)
        return [Hit(doc_id=f"{query}-{i}", score=1.0 / (i + 1)) for i in range(k)]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_timed_search_times_every_call(concurrency):
    queries = [(f"q{i}", "slow" if i == 0 else f"t{i}") for i in range(8)]
    results, stats = timed_search(SleepyRetriever(), queries, 2, concurrency=concurrency)
    assert sorted(results) == [f"q{i}" for i in range(8)] and [h.doc_id for h in results["q3"]] == ["t3-0", "t3-1"]
    assert (stats.n, stats.concurrency) == (8, concurrency)
    # One slow call shows in the tail, not the median. Only sleep's lower bound is relied on: no speed is
    # asserted, so a loaded machine cannot fail this.
    assert stats.max_ms >= 50 and stats.p50_ms < stats.max_ms


# -- coverage --------------------------------------------------------------------------------------

def test_required_evidence_coverage_counts_items_not_documents(tmp_path):
    path = write(tmp_path / "evidence.jsonl", [
        {"query_id": "q1", "evidence_id": "invoice", "doc_id": "d1"},
        {"query_id": "q1", "evidence_id": "invoice", "doc_id": "d1-copy"},  # a duplicate carries the same item
        {"query_id": "q1", "evidence_id": "contract", "doc_id": "d2"},
        {"query_id": "q1", "evidence_id": "po", "doc_id": "d3"},
        {"query_id": "q2", "doc_id": "d9"},
    ])
    evidence = read_evidence(path)
    assert evidence["q1"]["invoice"] == {"d1", "d1-copy"} and evidence["q2"] == {"d9": {"d9"}}
    ranked = {"q1": ["d1-copy", "x", "d2", "d3"], "q2": ["x", "y"]}
    report = evidence_coverage(evidence, ranked, k=3)
    q1, q2 = report.queries
    assert (q1.required, q1.retrieved, q1.missing) == (3, 2, ["po"]) and q1.coverage == pytest.approx(2 / 3)
    assert q2.coverage == 0.0 and report.mean_coverage == pytest.approx(1 / 3) and report.fully_covered == 0
    assert evidence_coverage(evidence, ranked, k=4).queries[0].coverage == 1.0
    # A query the run never answered retrieved nothing: coverage 0, not skipped.
    assert evidence_coverage(evidence, {"q1": ranked["q1"]}, k=4).mean_coverage == pytest.approx(0.5)


# -- outcomes --------------------------------------------------------------------------------------

def test_outcome_classes_are_scored_apart():
    expected = {"a1": "answerable", "a2": "answerable", "n1": "no_answer", "n2": "no_answer", "x1": "access_denied"}
    abstained = {"a1": False, "a2": True, "n1": True, "n2": False, "x1": False}
    report = {o.outcome: o for o in outcome_report(expected, abstained).outcomes}
    assert (report["answerable"].correct, report["answerable"].wrong) == (1, ["a2"])
    assert (report["no_answer"].correct, report["no_answer"].rate, report["no_answer"].wrong) == (1, 0.5, ["n2"])
    assert (report["access_denied"].correct, report["access_denied"].wrong) == (0, ["x1"])
    assert not hasattr(outcome_report(expected, abstained), "mean")
    with pytest.raises(BadInputError, match="no response for 1 query"):
        outcome_report(expected, {k: v for k, v in abstained.items() if k != "x1"})


def test_acceptance_test_from_a_run_keeps_unanswerable_queries_out_of_relevance(tmp_path):
    queries = write(tmp_path / "queries.jsonl", [{"query_id": q, "text": f"text {q}"} for q in ("a1", "a2", "n1", "x1")])
    outcomes = write(tmp_path / "outcomes.csv", [])
    outcomes.write_text("query_id,outcome\nn1,no_answer\nx1,access_denied\n")
    evidence = write(tmp_path / "evidence.jsonl", [{"query_id": "a1", "doc_id": "d1"}, {"query_id": "a2", "doc_id": "d2"}])
    run = tmp_path / "run.trec"
    run.write_text("a1 Q0 d1 1 3.0 t\na1 Q0 d5 2 2.0 t\na2 Q0 d7 1 1.0 t\nx1 Q0 secret 1 0.2 t\n")
    report = acceptance_test(queries=queries, run=run, evidence=evidence, outcomes=outcomes, k=5)
    assert report.answerable_queries == ["a1", "a2"]
    assert report.coverage.mean_coverage == 0.5
    by = {o.outcome: o for o in report.outcomes.outcomes}
    assert by["no_answer"].correct == 1  # n1 returned nothing: a correct abstention
    assert by["access_denied"].wrong == ["x1"]  # x1 leaked a document
    # With a minimum score, x1's weak result counts as abstaining.
    strict = acceptance_test(queries=queries, run=run, outcomes=outcomes, k=5, min_score=0.5)
    assert {o.outcome: o for o in strict.outcomes.outcomes}["access_denied"].correct == 1


def test_evidence_for_an_unanswerable_query_is_refused(tmp_path):
    queries = write(tmp_path / "queries.jsonl", [{"query_id": "n1", "text": "t"}])
    outcomes = write(tmp_path / "outcomes.jsonl", [{"query_id": "n1", "outcome": "no_answer"}])
    evidence = write(tmp_path / "evidence.jsonl", [{"query_id": "n1", "doc_id": "d1"}])
    run = tmp_path / "run.trec"
    run.write_text("n1 Q0 d1 1 1.0 t\n")
    with pytest.raises(BadInputError, match="marked no_answer"):
        acceptance_test(queries=queries, run=run, evidence=evidence, outcomes=outcomes)


def test_bad_outcome_value_names_file_line_and_field(tmp_path):
    queries = write(tmp_path / "queries.jsonl", [{"query_id": "q", "text": "t"}])
    outcomes = write(tmp_path / "outcomes.jsonl", [{"query_id": "q", "outcome": "unanswerable"}])
    run = tmp_path / "run.trec"
    run.write_text("q Q0 d 1 1.0 t\n")
    with pytest.raises(BadInputError) as err:
        acceptance_test(queries=queries, run=run, outcomes=outcomes)
    assert err.value.line == 1 and err.value.field == "outcome" and "no_answer" in str(err.value)


def test_an_unknown_query_in_outcomes_or_evidence_names_its_line(tmp_path):
    queries = write(tmp_path / "queries.jsonl", [{"query_id": "q", "text": "t"}])
    run = tmp_path / "run.trec"
    run.write_text("q Q0 d 1 1.0 t\n")
    outcomes = write(tmp_path / "outcomes.jsonl", [{"query_id": "q", "outcome": "answerable"},
                                                   {"query_id": "qX", "outcome": "no_answer"}])
    evidence = write(tmp_path / "evidence.jsonl", [{"query_id": "q", "doc_id": "d"}, {"query_id": "qY", "doc_id": "d"}])
    for kwargs, unknown in (({"outcomes": outcomes}, "qX"), ({"evidence": evidence}, "qY")):
        with pytest.raises(BadInputError) as err:
            acceptance_test(queries=queries, run=run, **kwargs)
        assert (err.value.line, err.value.field) == (2, "query_id") and f"unknown query '{unknown}'" in str(err.value)


def test_cli_acceptance_with_a_live_retriever_records_latency(tmp_path, capsys):
    corpus = write(tmp_path / "corpus.jsonl", [{"doc_id": f"d{i}", "text": f"invoice {w} supplies"}
                                               for i, w in enumerate(["paper", "toner", "pens", "desk"])])
    queries = write(tmp_path / "queries.jsonl", [{"query_id": "q1", "text": "toner invoice"},
                                                 {"query_id": "q2", "text": "zebra"}])
    outcomes = write(tmp_path / "outcomes.jsonl", [{"query_id": "q2", "outcome": "no_answer"}])
    evidence = write(tmp_path / "evidence.jsonl", [{"query_id": "q1", "doc_id": "d1"}])
    with pytest.raises(SystemExit) as exit_:
        main(["acceptance", "--queries", str(queries), "--retriever", "bm25", "--corpus", str(corpus),
              "--evidence", str(evidence), "--outcomes", str(outcomes), "--k", "1", "--json"])
    assert exit_.value.code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["coverage"]["mean_coverage"] == 1.0
    assert {o["outcome"]: o["correct"] for o in report["outcomes"]["outcomes"]} == {
        "answerable": 1, "no_answer": 1, "access_denied": 0}
    assert report["latency"]["n"] == 2 and report["latency"]["concurrency"] == 1


@pytest.mark.parametrize("name, row", [
    ("evidence", {"query_id": "q", "doc_id": "d", "revision": "r2"}),
    ("outcomes", {"query_id": "q", "outcome": "answerable", "identity": "alice"}),
    ("answers", {"query_id": "q", "abstained": False, "reviewer": "rita"}),
])
def test_fields_the_older_files_cannot_use_are_refused_not_dropped(tmp_path, name, row):
    queries = write(tmp_path / "queries.jsonl", [{"query_id": "q", "text": "t"}])
    run = tmp_path / "run.trec"
    run.write_text("q Q0 d 1 1.0 t\n")
    path = write(tmp_path / f"{name}.jsonl", [row])
    with pytest.raises(BadInputError) as err:
        acceptance_test(queries=queries, run=run, **{name: path})
    extra = next(k for k in row if k not in ("query_id", "doc_id", "outcome", "abstained"))
    assert (err.value.line, err.value.field) == (1, extra) and "docs/acceptance.md" in str(err.value)
