"""Probing with canaries: a real BM25 retriever passes, a broken one fails; runs, answers, cross-source, judge."""

import json
import random

import pytest

from labeller.canaries import CanaryProbeOptions, load_canaries, plant_files, probe_files
from labeller.cli import main
from labeller.errors import BadInputError
from labeller.io import read_corpus
from labeller.retrieval import Retriever, make_retriever

SUPPLIERS = ["Paperline Stationers", "Viking Direct", "Octopus Energy", "Thames Water", "BT Business",
             "Screwfix", "Pret A Manger", "Trainline", "Zoom", "Adobe"]
ITEMS = ["A4 copier paper", "toner cartridge", "electricity bill", "water rates", "broadband",
         "drill bits", "team lunch", "rail fare to Leeds", "video meetings plan", "design software"]

CANARIES = """
[[canary]]
id = "kite"
question = "Which consignment number did Kite Couriers put on the same-day courier invoice?"
payload = "Kite Couriers same-day courier invoice, consignment number X9-KITE-42."
store = "ledger"
planted_at = "2026-01-05T09:00:00Z"
[[canary.facts]]
value = "X9-KITE-42"
aliases = ["X9 KITE 42"]

[[canary]]
id = "fan"
question = "Which server fan model did Coolhaus Components supply?"
payload = "Coolhaus Components supplied the server fan model NF-A12x25."
planted_at = "2026-01-05T09:00:00Z"
facts = [{ value = "NF-A12x25", aliases = ["NF A12x25"] }]

[[canary]]
id = "deposit"
question = "What is the Harbourline Freight storage deposit booking and the refund ticket Priya confirmed?"
planted_at = "2026-01-05T09:00:00Z"
[canary.sources.chat]
payload = "Priya in chat: Harbourline Freight confirmed the refund, ticket RF-5520-HL."
facts = [{ value = "RF-5520-HL" }]
[canary.sources.ledger]
payload = "Harbourline Freight storage deposit, booking HB-7731-Q."
facts = [{ value = "HB-7731-Q" }]

[[canary]]
id = "no-iban"
question = "What is the IBAN of Zephyr Mills?"
planted_at = "2026-01-05T09:00:00Z"
forbidden = ["GB82 WEST 1234 5698 7654 32", "as an ai language model"]
"""


@pytest.fixture
def planted(tmp_path):
    rng = random.Random(0)
    rows = []
    for i in range(120):
        supplier, item = rng.choice(SUPPLIERS), rng.choice(ITEMS)
        rows.append({"doc_id": f"tx-{i:03d}", "text": f"{supplier} — {item} — £{rng.uniform(5, 500):.2f}",
                     "supplier": supplier})
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    canaries = tmp_path / "canaries.toml"
    canaries.write_text(CANARIES)
    out = tmp_path / "corpus.test.jsonl"
    plant_files(corpus=corpus, canaries=canaries, out=out)
    return tmp_path, out, canaries


def write_run(path, ranking):
    path.write_text("".join(f"{q} Q0 {d} {i} {100 - i} test\n" for q, docs in ranking.items()
                            for i, d in enumerate(docs, start=1)))
    return path


def test_bm25_finds_every_canary_and_the_probe_passes(planted):
    _, corpus, canaries = planted
    report = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, retriever="bm25", k=10))
    assert report.passed and report.n_passed == report.n_canaries == 4
    by_id = {c.canary_id: c for c in report.canaries}
    assert by_id["kite"].ranks == {"canary-kite": 1}
    assert by_id["kite"].passages.found == ["X9-KITE-42"]
    assert set(by_id["deposit"].ranks) == {"canary-deposit-chat", "canary-deposit-ledger"}
    assert all(r is not None and r <= 10 for r in by_id["deposit"].ranks.values())
    assert by_id["deposit"].passages.per_store == {"chat": 1.0, "ledger": 1.0}
    assert by_id["no-iban"].kind == "no-hallucination" and by_id["no-iban"].passed
    assert report.latency.n == 4 and report.latency.concurrency == 1
    assert 0 < report.latency.p50_ms <= report.latency.p95_ms


def test_a_retriever_returning_random_documents_fails_the_probe(planted):
    _, corpus, canaries = planted
    broken = make_retriever("random", read_corpus(corpus))
    assert isinstance(broken, Retriever)
    report = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, retriever=broken, k=10))
    assert not report.passed
    failed = {c.canary_id for c in report.canaries if not c.passed}
    assert {"kite", "fan", "deposit"} <= failed
    assert "fact recall of top 10 retrieved passages 0.00" in {c.canary_id: c for c in report.canaries}["kite"].reasons[0]


def test_run_ranks_are_reported_and_k_decides(planted):
    tmp, corpus, canaries = planted
    filler = ["tx-001", "tx-002"]
    run = write_run(tmp / "run.trec", {"kite": filler + ["canary-kite"], "fan": ["canary-fan"],
                                       "deposit": ["canary-deposit-ledger", "canary-deposit-chat"],
                                       "no-iban": filler})
    at2 = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, run=run, k=2))
    kite = {c.canary_id: c for c in at2.canaries}["kite"]
    assert kite.ranks == {"canary-kite": 3} and not kite.passed and not at2.passed
    at3 = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, run=run, k=3))
    assert at3.passed and at3.latency is None


def test_cross_source_fails_when_one_store_is_missing(planted):
    tmp, corpus, canaries = planted
    run = write_run(tmp / "run.trec", {"kite": ["canary-kite"], "fan": ["canary-fan"],
                                       "deposit": ["canary-deposit-chat", "tx-005"], "no-iban": ["tx-001"]})
    report = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, run=run, k=5))
    deposit = {c.canary_id: c for c in report.canaries}["deposit"]
    assert deposit.passages.per_store == {"chat": 1.0, "ledger": 0.0}
    assert deposit.ranks == {"canary-deposit-chat": 1, "canary-deposit-ledger": None}
    assert not deposit.passed and not report.passed and report.n_passed == 3


def test_answers_are_scored_and_forbidden_text_fails_them(planted):
    tmp, corpus, canaries = planted
    answers = tmp / "answers.jsonl"
    rows = [{"canary_id": "kite", "answer": "The consignment was x9-kite-42."},
            {"canary_id": "fan", "answer": "It was an NF A12x25."},
            {"canary_id": "deposit", "answer": "Booking HB-7731-Q; refund ticket RF-5520-HL."},
            {"canary_id": "no-iban", "answer": "Their IBAN is GB82 WEST 1234 5698 7654 32."}]
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, retriever="bm25", answers=answers))
    by_id = {c.canary_id: c for c in report.canaries}
    assert by_id["fan"].answer.found == ["NF-A12x25"] and by_id["kite"].passed
    assert by_id["no-iban"].answer.score == 0.0 and not by_id["no-iban"].passed
    assert by_id["no-iban"].passages.passed  # retrieval itself fabricated nothing
    assert "forbidden text in answer" in by_id["no-iban"].reasons[0]
    answers.write_text(json.dumps(rows[0]) + "\n")
    partial = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, retriever="bm25", answers=answers))
    assert {c.canary_id for c in partial.canaries if not c.passed} == {"fan", "deposit", "no-iban"}
    assert {c.canary_id: c for c in partial.canaries}["fan"].reasons == ["no answer given"]


def test_probe_refuses_a_corpus_without_the_canaries(planted):
    tmp, _, canaries = planted
    with pytest.raises(BadInputError, match="canary document 'canary-kite' is not in the corpus"):
        probe_files(CanaryProbeOptions(canaries=canaries, corpus=tmp / "corpus.jsonl", retriever="bm25"))


def test_probe_refuses_a_run_with_no_canary_queries(planted):
    tmp, corpus, canaries = planted
    run = write_run(tmp / "run.trec", {"q1": ["tx-001"]})
    with pytest.raises(BadInputError, match="no entries for any canary"):
        probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, run=run))


def test_cli_probe_exit_codes(planted, capsys):
    tmp, corpus, canaries = planted
    with pytest.raises(SystemExit) as ok:
        main(["canaries", "probe", "--canaries", str(canaries), "--corpus", str(corpus), "--retriever", "bm25",
              "--json"])
    assert ok.value.code == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True
    run = write_run(tmp / "run.trec", {c.canary_id: ["tx-001", "tx-002"] for c in load_canaries(canaries)})
    with pytest.raises(SystemExit) as failed:
        main(["canaries", "probe", "--canaries", str(canaries), "--corpus", str(corpus), "--run", str(run)])
    assert failed.value.code == 1
    captured = capsys.readouterr()
    assert "FAIL kite (single): canary-kite rank -" in captured.out
    assert "labeller: error: canary probe failed: 3 of 4 canaries failed" in captured.err


TERSE = """
[[canary]]
id = "terse"
question = "Which parking permit number did the landlord issue for the rear car park?"
payload = "Permit PK-3317-RR."
planted_at = "2026-01-05T09:00:00Z"
facts = [{ value = "PK-3317-RR" }]
"""

RUBRIC = """+++
name = "canary-check"
+++
Grade 5 when the document fully answers the question, 1 when it is unrelated.
"""


def test_the_judge_must_give_each_canary_document_the_top_grade(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": f"d{i}", "text": f"Office chair order {i}"}) + "\n"
                              for i in range(20)))
    canaries = tmp_path / "canaries.toml"
    canaries.write_text(CANARIES + TERSE)
    planted = tmp_path / "corpus.canary.jsonl"
    plant_files(corpus=corpus, canaries=canaries, out=planted)
    rubric = tmp_path / "canary-check.md"
    rubric.write_text(RUBRIC)
    args = dict(canaries=canaries, corpus=planted, retriever="bm25", judge="offline:lexical", rubric=str(rubric),
                cache_dir=tmp_path / "cache")
    report = probe_files(CanaryProbeOptions(**args))
    by_id = {c.canary_id: c for c in report.canaries}
    assert by_id["kite"].judge_grades == {"canary-kite": 5} and by_id["fan"].judge_grades == {"canary-fan": 5}
    # Cross-source documents each hold part of the answer and no-hallucination canaries have none: not checked.
    assert by_id["deposit"].judge_grades is None and by_id["no-iban"].judge_grades is None
    terse = by_id["terse"]
    assert terse.passages.passed and terse.judge_grades["canary-terse"] < 5 and not terse.passed
    assert terse.reasons == [f"the judge gave its own document canary-terse grade {terse.judge_grades['canary-terse']}"
                             ", expected 5"]
    assert not report.passed and report.n_passed == 4
    assert (report.judge_check.new, report.judge_check.cached) == (3, 0)
    again = probe_files(CanaryProbeOptions(**args))
    assert (again.judge_check.new, again.judge_check.cached) == (0, 3)
    assert again.judge_check.grades == report.judge_check.grades


def test_a_judge_without_its_key_fails_before_anything_runs(planted, capsys):
    _, corpus, canaries = planted
    with pytest.raises(SystemExit) as exit_:
        main(["canaries", "probe", "--canaries", str(canaries), "--corpus", str(corpus), "--retriever", "bm25",
              "--judge", "openai:gpt-4.1-mini"])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert "OPENAI_API_KEY" in captured.err and captured.out == ""
