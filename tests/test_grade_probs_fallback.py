"""--grade-probs against a server that drops log-probabilities for some replies or all (labelling.probs_fallback):
the real openai SDK over real HTTP to the fake API, whose `[[nologprobs]]` marker makes one prompt's reply carry
none and whose `[[seq:...]]` marker plants each sample's grade, so which pairs fall back, how many requests they
take and the shares they end with are known in advance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeapi import FakeAPI
from test_grade_probs import KEY, RUBRIC, expected_probs, rows_of, run_label

# doc id -> (planted distribution at the grade, the grade of each request, whether the reply drops logprobs)
PLANTED = {
    "sure": ([0, 0, 1, 0, 0], [3], False),
    "spread": ([0.1, 0.2, 0.4, 0.2, 0.1], [3], False),
    "dropped": ([0, 0.5, 0.5, 0, 0], [2, 3, 2, 2, 4], True),
    "dropped_same": ([0, 0, 0, 1, 0], [4], True),
}


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "rubric.md").write_text(RUBRIC, encoding="utf-8")
    corpus = [{"doc_id": doc, "text": f"receipt {doc} [[probs:{','.join(map(str, probs))}]] "
                                      f"[[seq:{','.join(map(str, seq))}]]" + (" [[nologprobs]]" if drop else "")}
              for doc, (probs, seq, drop) in PLANTED.items()]
    rows = {"queries": [{"query_id": "q1", "text": "which receipt"}], "corpus": corpus,
            "pairs": [{"query_id": "q1", "doc_id": doc} for doc in PLANTED]}
    for name, items in rows.items():
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return tmp_path


def test_a_pair_without_logprobs_falls_back_to_five_samples_on_its_own(inputs, monkeypatch):
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, grade_probs=True)
        assert all(r.body["logprobs"] is True for r in api.requests)
        assert api.total == 2 + 2 * 5  # one request for each pair with a distribution, five for each without
        by_doc = {label.doc_id: label for label in run.labels}
        assert list(by_doc) == list(PLANTED)  # pair order
        for doc in ("sure", "spread"):  # one request, the planted distribution, no sample columns
            assert by_doc[doc].grade_probs == expected_probs(PLANTED[doc][0])
            assert by_doc[doc].grade_probs_source == "logprobs" and by_doc[doc].samples is None
        dropped = by_doc["dropped"]
        assert dropped.sample_grades == [2, 3, 2, 2, 4] and dropped.samples == 5 and dropped.grade == 2
        assert dropped.grade_probs == {"1": 0.0, "2": 0.6, "3": 0.2, "4": 0.2, "5": 0.0}
        assert dropped.grade_probs_source == "samples" and dropped.expected_grade == pytest.approx(2.6)
        assert by_doc["dropped_same"].grade_probs == {"1": 0.0, "2": 0.0, "3": 0.0, "4": 1.0, "5": 0.0}
        notes = [w for w in run.stats.warnings if "log-probabilities" in w]
        assert len(notes) == 1 and notes[0].startswith("--grade-probs: 2 of 4 pairs came back without")
        assert "5 samples in all" in notes[0] and "grade_probs_source: samples" in notes[0]
        assert run.stats.sample_counts == {"1": 2, "5": 2}
        written = rows_of(inputs / "labels.jsonl")
        assert [(r["doc_id"], r["grade_probs_source"]) for r in written] == [
            ("sure", "logprobs"), ("spread", "logprobs"), ("dropped", "samples"), ("dropped_same", "samples")]
        api.reset()
        again = run_label(inputs, api, monkeypatch, grade_probs=True, out="again.jsonl")
        assert api.total == 0  # every sample was keyed as --samples 5 keys it
        assert [lb.grade_probs for lb in again.labels] == [lb.grade_probs for lb in run.labels]


def test_a_server_that_ignores_logprobs_samples_every_pair(inputs, monkeypatch):
    with FakeAPI(logprobs=False) as api:
        run = run_label(inputs, api, monkeypatch, grade_probs=True)
        assert api.total == 4 * 5
    assert all(label.grade_probs_source == "samples" and label.samples == 5 for label in run.labels)
    assert {lb.doc_id: lb.grade_probs["3"] for lb in run.labels} == {"sure": 1.0, "spread": 1.0, "dropped": 0.2,
                                                                   "dropped_same": 0.0}
    notes = [w for w in run.stats.warnings if "log-probabilities" in w]
    assert len(notes) == 1 and "4 of 4 pairs came back without" in notes[0]


def test_at_temperature_zero_a_pair_cannot_fall_back_and_the_run_says_so(inputs, monkeypatch):
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, temperature=0.0, grade_probs=True)
        assert api.total == 4  # one request a pair: samples at temperature 0 would all give the same grade
    by_doc = {label.doc_id: label for label in run.labels}
    assert by_doc["dropped"].grade_probs is None and by_doc["sure"].grade_probs is not None
    notes = [w for w in run.stats.warnings if "log-probabilities" in w]
    assert len(notes) == 1 and "2 of 4 new verdicts came back without" in notes[0] and "carry none" in notes[0]
    assert "give --temperature above 0" in notes[0]


def test_a_dry_run_prices_one_request_a_pair_and_says_more_may_follow(inputs, monkeypatch):
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, grade_probs=True, dry_run=True)
        assert api.total == 0
    assert any("takes 4 more" in n for n in run.stats.estimate_notes), run.stats.estimate_notes
    assert KEY not in json.dumps(run.stats.model_dump())
