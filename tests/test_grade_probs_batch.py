"""--grade-probs through the provider batch APIs, and the fallback to samples where a judge gives no
log-probabilities: the real openai and anthropic SDKs over real HTTP to the fake API (tests/fakeapi.py,
tests/fakebatch.py), which plants each pair's grade distribution ([[probs:...]]) and each sample's grade
([[seq:...]]), so every distribution, source and sample count is known in advance."""

from __future__ import annotations

import json

import pytest
from fakeapi import FakeAPI
from test_grade_probs import PLANTED, expected_probs, inputs, rows_of, run_label  # noqa: F401 (inputs: a fixture)

from labeller.judges.grade_probs import expected_grade, grade_entropy
from labeller.labelling.grading import FALLBACK_SAMPLES

BATCH = dict(batch=True, poll_interval=0.05)
# what a row of the same verdict must say whichever way it was bought (not its cost, timing or cache origin)
SAME = ("query_id", "doc_id", "grade", "justification", "cache_key", "grade_probs", "expected_grade", "grade_entropy",
        "grade_probs_source", "grading", "samples", "sample_grades")


def _same(rows: list[dict]) -> list[dict]:
    return [{name: row.get(name) for name in SAME} for row in rows]


def test_openai_batch_reads_the_planted_logprobs_as_the_synchronous_path_does(inputs, monkeypatch):  # noqa: F811
    with FakeAPI(logprobs=True) as api:
        batched = run_label(inputs, api, monkeypatch, temperature=0.0, grade_probs=True, top_logprobs=4,
                            out="batched.jsonl", **BATCH)
        lines = [json.loads(line) for f in api.batches.files.values() if f["info"]["purpose"] == "batch"
                 for line in f["data"].splitlines()]
        assert len(lines) == len(PLANTED) and api.total == len(PLANTED)
        assert all(line["body"]["logprobs"] is True and line["body"]["top_logprobs"] == 4 for line in lines)
        (inputs / "cache").rename(inputs / "cache-batched")  # the same server (its URL is in the keys), a new store
        api.reset()
        api.sampled.clear()  # the planted sample sequences restart
        synchronous = run_label(inputs, api, monkeypatch, temperature=0.0, grade_probs=True, top_logprobs=4,
                                out="sync.jsonl")
        assert api.total == len(PLANTED) and not api.batched_twice
    assert all(label.grade_probs == expected_probs(PLANTED[label.doc_id][0], top=4) for label in batched.labels)
    assert {label.grade_probs_source for label in batched.labels} == {"logprobs"}
    assert {label.grading for label in batched.labels} == {"grade-probs logprobs top 4"}
    assert _same(rows_of(inputs / "batched.jsonl")) == _same(rows_of(inputs / "sync.jsonl"))
    by_doc = {label.doc_id: label for label in synchronous.labels}
    spread = expected_probs(PLANTED["spread"][0], top=4)
    assert by_doc["spread"].expected_grade == expected_grade(spread)
    assert by_doc["spread"].grade_entropy == grade_entropy(spread)


def _shares(grades: list[int]) -> dict[str, float]:
    return {str(g): round(grades.count(g) / len(grades), 6) for g in range(1, 6)}


def _planted_samples(n: int) -> dict[str, list[int]]:
    """Each pair's first n planted sample grades (a sequence's last grade repeats)."""
    return {doc: [seq[min(k, len(seq) - 1)] for k in range(n)] for doc, (_, seq) in PLANTED.items()}


@pytest.mark.parametrize("batch", [False, True])
def test_anthropic_gives_no_logprobs_so_the_distribution_comes_from_samples(inputs, monkeypatch, batch):  # noqa: F811
    options = BATCH if batch else {}
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, judge="anthropic:claude-haiku-4-5", grade_probs=True, **options)
        # five requests a pair, in a batch or one by one
        sent = sum(api.batched.values()) if batch else api.counts["/v1/messages"]
        assert sent == FALLBACK_SAMPLES * len(PLANTED) and not api.batched_twice
    notes = [w for w in run.stats.warnings if w.startswith("--grade-probs")]
    assert len(notes) == 1 and "gives no token log-probabilities" in notes[0]
    assert "falls back to samples" in notes[0] and f"over {FALLBACK_SAMPLES} samples a pair" in notes[0]
    planted = _planted_samples(FALLBACK_SAMPLES)
    assert {label.doc_id: label.sample_grades for label in run.labels} == planted
    for label in run.labels:
        assert label.grade_probs == _shares(planted[label.doc_id]), label.doc_id
        assert label.grade_probs_source == "samples" and label.samples == FALLBACK_SAMPLES
        assert label.expected_grade == expected_grade(label.grade_probs)
        assert label.grade_entropy == grade_entropy(label.grade_probs)
        assert label.grading == "grade-probs from samples; samples"
    spread = {label.doc_id: label for label in run.labels}["spread"]
    assert spread.grade_probs == {"1": 0.0, "2": 0.4, "3": 0.4, "4": 0.2, "5": 0.0}


def test_the_fallback_takes_the_samples_asked(inputs, monkeypatch):  # noqa: F811
    with FakeAPI() as api:
        run = run_label(inputs, api, monkeypatch, judge="anthropic:claude-haiku-4-5", grade_probs=True, samples=3)
        assert api.total == 3 * len(PLANTED)
    assert {label.doc_id: label.grade_probs for label in run.labels} == {
        doc: _shares(grades) for doc, grades in _planted_samples(3).items()}


def test_a_judge_that_cannot_sample_says_it_has_no_distribution(inputs, monkeypatch):  # noqa: F811
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, output_mode="tool", temperature=0.0, grade_probs=True)
        assert api.total == len(PLANTED) and all("logprobs" not in r.body for r in api.requests)
    notes = [w for w in run.stats.warnings if w.startswith("--grade-probs")]
    assert len(notes) == 1 and "at temperature 0 every sample would give the same grade" in notes[0]
    assert all(label.grade_probs is None and label.grading is None for label in run.labels)


def test_batched_samples_carry_the_first_samples_logprobs_and_the_planted_grades(inputs, monkeypatch):  # noqa: F811
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, grade_probs=True, samples=3, out="batched.jsonl", **BATCH)
        assert sum(api.batched.values()) == 3 * len(PLANTED)
    planted = _planted_samples(3)
    for label in run.labels:
        assert label.grade_probs == expected_probs(PLANTED[label.doc_id][0])  # read from the line's logprobs
        assert label.grade_probs_source == "logprobs" and label.grading == "grade-probs logprobs top 10; samples"
        assert sorted(label.sample_grades) == sorted(planted[label.doc_id])


def test_escalation_on_entropy_uses_the_sampled_distribution_of_a_judge_without_logprobs(inputs, monkeypatch):  # noqa: F811
    """An Anthropic first judge: its distributions come from five samples; spread (2, 3 twice and 4: 1.52 bits) and
    split_late (1 four times, 2 once: 0.72 bits) go above 0.6 bits to the arbiter; the others are unanimous."""
    from labeller.cli import main

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-grade-probs")
    with FakeAPI(logprobs=True) as api, pytest.raises(SystemExit) as done:
        main(["label", "--queries", str(inputs / "queries.jsonl"), "--corpus", str(inputs / "corpus.jsonl"),
              "--pairs", str(inputs / "pairs.jsonl"), "--rubric", str(inputs / "rubric.md"), "--base-url", api.url,
              "--cache", str(inputs / "cache"), "--out", str(inputs / "labels.jsonl"),
              "--judge", "anthropic:claude-haiku-4-5", "--escalate-to", "anthropic:claude-big", "--grade-probs",
              "--no-escalate-near-cut", "--escalate-above-entropy", "0.6"])
    assert done.value.code in (0, None)
    big = [r.body for r in api.requests if r.body.get("model") == "claude-big"]
    rows = {row["doc_id"]: row for row in rows_of(inputs / "labels.jsonl")}
    assert {doc for doc, row in rows.items() if row["escalated"]} == {"spread", "split_late"} and len(big) == 2


@pytest.mark.parametrize("batch", [False, True])
def test_a_dry_run_prices_the_fallbacks_samples_and_says_why(inputs, monkeypatch, batch):  # noqa: F811
    with FakeAPI() as api:
        dry = run_label(inputs, api, monkeypatch, judge="anthropic:claude-haiku-4-5", grade_probs=True, dry_run=True,
                        **(BATCH if batch else {}))
        assert api.total == 0
    assert dry.stats.samples == FALLBACK_SAMPLES and dry.stats.new == FALLBACK_SAMPLES * len(PLANTED)
    assert any("falls back to samples" in w for w in dry.stats.warnings)
    assert not (inputs / "labels.jsonl").exists()


def test_a_batch_whose_lines_carry_no_logprobs_is_noted(inputs, monkeypatch):  # noqa: F811
    with FakeAPI(logprobs=False) as api:  # a server that takes `logprobs` and sends none back
        run = run_label(inputs, api, monkeypatch, temperature=0.0, grade_probs=True, **BATCH)
        assert sum(api.batched.values()) == len(PLANTED)
    assert all(label.grade_probs is None for label in run.labels)
    notes = [w for w in run.stats.warnings if "without token log-probabilities" in w]
    assert len(notes) == 1 and f"{len(PLANTED)} of {len(PLANTED)} new verdicts" in notes[0]
