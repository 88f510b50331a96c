"""--grade-probs --batch against a server that drops log-probabilities for some batch lines (labelling.probs_fallback
through batch_results.batch_round): the real openai SDK over real HTTP to the fake batch API, whose `[[nologprobs]]`
marker makes the lines of one prompt carry none and whose `[[seq:...]]` marker plants the grade of each request for
a prompt, so which pairs go into the follow-up batch, what it costs and the shares they end with are known in advance.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from fakeapi import FakeAPI
from test_grade_probs import KEY, expected_probs, rows_of, run_label
from test_grade_probs_fallback import PLANTED, inputs  # noqa: F401 (inputs: a fixture)

from labeller.errors import BudgetExceededError
from labeller.labelling.grading import FALLBACK_SAMPLES
from labeller.store import open_store

BATCH = dict(batch=True, poll_interval=0.05)
DROPPED = [doc for doc, (_, _, drop) in PLANTED.items() if drop]
# what a row must say whichever transport bought it (not its cost, timing or cache origin)
SAME = ("query_id", "doc_id", "grade", "justification", "cache_key", "grade_probs", "expected_grade", "grade_entropy",
        "grade_probs_source", "grading", "samples", "sample_grades")


def _lines(api: FakeAPI) -> list[list[dict]]:
    """The input lines of each OpenAI batch the fake received, in the order the batches were created."""
    files = {fid: f for fid, f in api.batches.files.items() if f["info"]["purpose"] == "batch"}
    return [[json.loads(line) for line in files[b["object"]["input_file_id"]]["data"].splitlines()]
            for b in api.batches.openai.values()]


def _doc(line: dict) -> str:
    user = line["body"]["messages"][-1]["content"]
    return next(doc for doc in PLANTED if f"receipt {doc} " in user)


def _planted(doc: str, n: int) -> list[int]:
    seq = PLANTED[doc][1]
    return [seq[min(k, len(seq) - 1)] for k in range(n)]


def _shares(grades: list[int]) -> dict[str, float]:
    """The distribution the samples imply, computed here from the planted grades."""
    counts = Counter(grades)
    return {str(g): round(counts[g] / len(grades), 6) for g in range(1, 6)}


def test_pairs_whose_lines_lack_logprobs_fall_back_through_one_follow_up_batch(inputs, monkeypatch):  # noqa: F811
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, grade_probs=True, out="batched.jsonl", **BATCH)
        first, follow_up = _lines(api)  # exactly two batches
        assert [_doc(line) for line in first] == list(PLANTED)
        assert all(line["body"]["logprobs"] is True for batch in (first, follow_up) for line in batch)
        # samples 1..4 of each pair without log-probabilities, nothing else, each under a key of its own
        assert [_doc(line) for line in follow_up] == [doc for doc in DROPPED for _ in range(FALLBACK_SAMPLES - 1)]
        assert len({line["custom_id"] for line in first + follow_up}) == len(first) + len(follow_up)
        assert api.counts["/v1/chat/completions"] == 0 and not api.batched_twice
        by_doc = {label.doc_id: label for label in run.labels}
        assert list(by_doc) == list(PLANTED)
        for doc, (probs, _, drop) in PLANTED.items():
            label = by_doc[doc]
            if not drop:  # the planted distribution, from the one line
                assert label.grade_probs == expected_probs(probs) and label.grade_probs_source == "logprobs"
                assert label.samples is None and label.sample_grades is None
                continue
            grades = _planted(doc, FALLBACK_SAMPLES)
            shares = _shares(grades)
            assert label.sample_grades == grades and label.samples == FALLBACK_SAMPLES
            assert label.grade_probs == shares and label.grade_probs_source == "samples"
            assert label.expected_grade == pytest.approx(sum(int(g) * p for g, p in shares.items()))
            assert label.grade_entropy == pytest.approx(-sum(p * math.log2(p) for p in shares.values() if p), abs=1e-6)
            assert label.grading == "grade-probs logprobs top 10"
        assert by_doc["dropped"].grade_probs == {"1": 0.0, "2": 0.6, "3": 0.2, "4": 0.2, "5": 0.0}
        stats = run.stats
        assert stats.sample_counts == {"1": 2, str(FALLBACK_SAMPLES): 2}
        assert stats.batch.submitted == 2 and stats.batch.requests == len(first) + len(follow_up)
        assert stats.new == len(first) + len(follow_up) and stats.cached == 0
        notes = [w for w in stats.warnings if "log-probabilities" in w]
        assert len(notes) == 1 and notes[0].startswith("--grade-probs: 2 of 4 pairs came back without"), notes
        assert "5 samples in all" in notes[0] and "grade_probs_source: samples" in notes[0]
        assert stats.cost_usd == pytest.approx(sum(label.cost_usd for label in run.labels), abs=2e-6)  # rounded to 6 places

        api.reset()
        again = run_label(inputs, api, monkeypatch, grade_probs=True, out="again.jsonl", **BATCH)
        assert api.total == 0 and again.stats.cached == len(first) + len(follow_up)  # the rerun pays nothing
        assert [lb.grade_probs for lb in again.labels] == [lb.grade_probs for lb in run.labels]

        # the follow-up's keys are those of --samples 5: a --samples 5 batch run buys only the samples never asked
        api.reset()
        sampled = run_label(inputs, api, monkeypatch, grade_probs=True, samples=5, out="five.jsonl", **BATCH)
        assert [_doc(line) for line in _lines(api)[2]] == [
            doc for doc in PLANTED if doc not in DROPPED for _ in range(FALLBACK_SAMPLES - 1)]
        assert sampled.stats.new == 8 and sampled.stats.cached == 12

        # the synchronous fallback over a new store (the same server: its URL is in the keys) writes the same rows
        (inputs / "cache").rename(inputs / "cache-batched")
        api.reset()
        api.sampled.clear()  # the planted grade sequences restart
        run_label(inputs, api, monkeypatch, grade_probs=True, out="sync.jsonl")
        assert api.counts["/v1/chat/completions"] == len(first) + len(follow_up)
    same = [[{name: row.get(name) for name in SAME} for row in rows_of(inputs / name)]
            for name in ("batched.jsonl", "sync.jsonl")]
    assert same[0] == same[1]


def test_a_server_that_ignores_logprobs_samples_every_pair_in_the_follow_up(inputs, monkeypatch):  # noqa: F811
    with FakeAPI(logprobs=False) as api:
        run = run_label(inputs, api, monkeypatch, grade_probs=True, **BATCH)
        assert [len(batch) for batch in _lines(api)] == [4, 4 * (FALLBACK_SAMPLES - 1)]
    assert {label.doc_id: label.grade_probs for label in run.labels} == {
        doc: _shares(_planted(doc, FALLBACK_SAMPLES)) for doc in PLANTED}
    assert {label.grade_probs_source for label in run.labels} == {"samples"}
    notes = [w for w in run.stats.warnings if "log-probabilities" in w]
    assert len(notes) == 1 and "4 of 4 pairs came back without" in notes[0]


def _dry_cost(base: Path, api: FakeAPI, monkeypatch, doc: str) -> float:
    """The estimated batch cost of one request for `doc`'s prompt: a dry run over that pair alone."""
    folder = base / f"only-{doc}"
    folder.mkdir()
    for name in ("queries.jsonl", "corpus.jsonl", "rubric.md"):
        (folder / name).write_bytes((base / name).read_bytes())
    (folder / "pairs.jsonl").write_text(json.dumps({"query_id": "q1", "doc_id": doc}) + "\n", encoding="utf-8")
    return run_label(folder, api, monkeypatch, grade_probs=True, dry_run=True, **BATCH).stats.estimated_cost_usd


def test_max_cost_counts_the_follow_up_batch(inputs, monkeypatch):  # noqa: F811
    """The follow-up batch is sent within what round 0 left of --max-cost: its keys go in input order while
    their estimates fit in the budget minus what round 0 cost; the rest are not sent, and the run's cost counts
    both batches."""
    with FakeAPI(logprobs=True) as api:
        estimate = {doc: _dry_cost(inputs, api, monkeypatch, doc) for doc in PLANTED}
        budget = 2.2 * sum(estimate.values())
        with pytest.raises(BudgetExceededError) as stopped:
            run_label(inputs, api, monkeypatch, grade_probs=True, max_cost=budget, **BATCH)
        run = stopped.value.run
        first, follow_up = _lines(api)
    assert len(first) == 4 and run.stats.budget_stopped
    with open_store(inputs / "cache", create=False) as store:
        follow_up_cost = sum(v.cost_usd for v in store.get_many([line["custom_id"] for line in follow_up]).values())
    round0 = run.stats.cost_usd - follow_up_cost
    left = budget - round0
    asked = [estimate[doc] for doc in DROPPED for _ in range(FALLBACK_SAMPLES - 1)]
    fits = next((k for k in range(len(asked) + 1) if k == len(asked) or sum(asked[:k + 1]) > left))
    assert 0 < len(follow_up) == fits < len(asked), (len(follow_up), fits, left)
    assert sum(asked[:fits + 1]) <= budget, "with the whole budget the follow-up would have sent more"
    assert run.stats.cost_usd == pytest.approx(sum(label.cost_usd for label in run.labels), abs=2e-6)  # rounded to 6 places
    not_sent = [f for f in run.failures if "--max-cost" in f.reason]
    assert len(not_sent) == len(asked) - fits == run.stats.skipped_by_budget


def _label_cmd(folder: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "labeller", "label", "--queries", str(folder / "queries.jsonl"),
            "--corpus", str(folder / "corpus.jsonl"), "--pairs", str(folder / "pairs.jsonl"),
            "--rubric", str(folder / "rubric.md"), "--judge", "openai:gpt-4.1-mini", "--cache", str(folder / "cache"),
            "--out", str(folder / "labels.jsonl"), "--grade-probs", "--temperature", "0.7", *extra]


def _run(api: FakeAPI, cmd: list[str]) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, env=api.environment(KEY), capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr and KEY not in done.stdout + done.stderr, done.stderr
    return done


@pytest.mark.parametrize("rerun_batch", [True, False], ids=["rerun-with-batch", "rerun-without-batch"])
def test_a_run_killed_while_polling_the_follow_up_batch_pays_nothing_twice(inputs, monkeypatch,  # noqa: F811
                                                                          rerun_batch):
    """SIGKILL once the follow-up batch is created and polled; the rerun (with --batch, or without it: it polls
    the open batches that cover its pairs' samples first) collects that batch instead of buying it again."""
    with FakeAPI(api_key=KEY, logprobs=True, batch_delay=1.0) as api:
        cmd = _label_cmd(inputs, "--batch", "--poll-interval", "0.05")
        proc = subprocess.Popen(cmd, env=api.environment(KEY), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            ids = list(api.batches.openai)
            if len(ids) == 2 and api.counts[f"/v1/batches/{ids[1]}"]:
                break
            time.sleep(0.02)
        proc.kill()
        proc.wait(10)
        assert len(api.batches.openai) == 2 and not (inputs / "labels.jsonl").exists()
        paid = sum(api.batched.values())
        api.reset()
        second = _run(api, cmd if rerun_batch else [a for a in cmd if a != "--batch"])
        assert second.returncode == 0, second.stderr
        assert "(4 pairs: 2 x 1, 2 x 5; at most 5 a pair)" in second.stderr, second.stderr
        assert not rerun_batch or "0 submitted, 1 resumed, 1 completed" in second.stderr, second.stderr
        assert sum(api.batched.values()) == paid and not api.batched_twice
        assert api.counts["/v1/batches"] == 0 and api.counts["/v1/chat/completions"] == 0
        rows = {row["doc_id"]: row for row in rows_of(inputs / "labels.jsonl")}
        assert {doc: row["grade_probs_source"] for doc, row in rows.items()} == {
            doc: "samples" if drop else "logprobs" for doc, (_, _, drop) in PLANTED.items()}
        for doc in DROPPED:
            assert rows[doc]["grade_probs"] == _shares(_planted(doc, FALLBACK_SAMPLES))
        api.reset()
        third = _run(api, cmd)
        assert third.returncode == 0 and api.total == 0


def test_anthropic_batches_go_to_samples_in_one_batch(inputs, monkeypatch):  # noqa: F811
    """No log-probabilities at all: every pair is sampled from the start, in one batch (no follow-up)."""
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, judge="anthropic:claude-haiku-4-5", grade_probs=True, **BATCH)
        assert api.counts["/v1/messages/batches"] == 1
        assert sum(api.batched.values()) == FALLBACK_SAMPLES * len(PLANTED)
    assert {label.doc_id: label.grade_probs for label in run.labels} == {
        doc: _shares(_planted(doc, FALLBACK_SAMPLES)) for doc in PLANTED}
    assert {label.grade_probs_source for label in run.labels} == {"samples"}


def test_a_batch_dry_run_prices_the_first_batch_and_says_more_may_follow(inputs, monkeypatch):  # noqa: F811
    with FakeAPI(logprobs=True) as api:
        dry = run_label(inputs, api, monkeypatch, grade_probs=True, dry_run=True, **BATCH)
        assert api.counts["/v1/batches"] == 0 and api.counts["/v1/chat/completions"] == 0
    assert dry.stats.new == len(PLANTED) and dry.stats.estimated_cost_usd > 0
    assert any("takes 4 more" in note for note in dry.stats.estimate_notes), dry.stats.estimate_notes
    assert not (inputs / "labels.jsonl").exists()
