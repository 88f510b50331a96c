"""Self-consistency (`--samples N`) combined with juries and escalation, end to end: the real command line,
the real openai SDK, real HTTP to the fake API, which answers a noisy grade at temperature > 0 (`noise`)
and the planted grade at temperature 0. Every document carries its planted grade, which is also the gold."""

from __future__ import annotations

import json

import pytest
from fakeapi import FakeAPI
from jury_helpers import BASE, N, by_model, cli, doc_of, planted, read, write_slice

from labeller.labelling.samples import aggregate_grade

KEY = "sk-samples-jury-secret-0123456789"
CHEAP, EXPENSIVE = "gpt-4.1-mini", "gpt-4.1"


@pytest.fixture
def api():
    with FakeAPI(noise=0.35, noise_seed=7) as server:
        yield server


@pytest.fixture
def files(tmp_path, monkeypatch, api):
    return write_slice(tmp_path, monkeypatch, api, KEY)


SAMPLED = ["--samples", "5", "--temperature", "0.7"]
ESCALATE = ["--judge", f"openai:{CHEAP}", "--escalate-to", f"openai:{EXPENSIVE}", "--escalate-below", "0.8"]


def test_escalation_on_sample_agreement_sends_exactly_the_uncertain_pairs_once(files, api, capsys):
    code, out, err = cli(capsys, *BASE, *ESCALATE, *SAMPLED, "--no-escalate-near-cut", "--json")
    assert code == 0, err
    cheap = {r["doc_id"]: r for r in read(files / "labels.judges.jsonl") if r["model"] == CHEAP}
    assert len(cheap) == N and all(r["samples"] == 5 and len(r["sample_grades"]) == 5 for r in cheap.values())
    uncertain = {d for d, r in cheap.items() if r["sample_agreement"] < 0.8}
    assert 0 < len(uncertain) < N  # the noise splits some pairs' samples, not all
    # the cheap judge is sampled 5 times per pair; the expensive one once per uncertain pair, at temperature 0
    assert by_model(api) == {CHEAP: 5 * N, EXPENSIVE: len(uncertain)}
    expensive = [r for r in api.requests if r.body["model"] == EXPENSIVE]
    assert {doc_of(r) for r in expensive} == uncertain and len(expensive) == len(uncertain)
    assert all(r.body.get("temperature", 0) == 0 for r in expensive)
    assert all(r.body["temperature"] == 0.7 for r in api.requests if r.body["model"] == CHEAP)
    for row in read(files / "labels.jsonl"):
        i = int(row["doc_id"][1:])
        assert row["escalated"] == (row["doc_id"] in uncertain)
        if row["escalated"]:  # the expensive judge, asked once at temperature 0, gives the planted grade
            assert row["grade"] == planted(i) and row["model"] == EXPENSIVE and row.get("samples") is None
        else:
            assert row["grade"] == aggregate_grade(cheap[row["doc_id"]]["sample_grades"], "median")
            assert row["sample_agreement"] >= 0.8
    esc = json.loads(out)["escalation"]
    assert esc["escalated"] == esc["for_low_agreement"] == len(uncertain) and esc["for_near_cut"] == 0
    assert esc["notes"] == []  # --escalate-below took effect: the cheap labels carry sample agreement
    assert esc["graded"] == N and f"escalation: {len(uncertain)} of {N} pairs" in err  # pairs, not samples
    assert f"openai:{CHEAP}: {5 * N} samples ({N} pairs x 5), {5 * N} new" in err
    assert f"openai:{EXPENSIVE}: {len(uncertain)} pairs, {len(uncertain)} new" in err

    # near the cut too (the default): only the pairs newly selected by it are paid, and only at the expensive judge
    api.reset()
    code, out, err = cli(capsys, *BASE, *ESCALATE, *SAMPLED, "--out", "near.jsonl", "--json")
    near = {d for d, r in cheap.items() if r["sample_agreement"] >= 0.8 and r["grade"] in (2, 3)}
    assert code == 0, err
    assert by_model(api) == ({EXPENSIVE: len(near)} if near else {})
    assert {r["doc_id"] for r in read(files / "near.jsonl") if r["escalated"]} == uncertain | near

    api.reset()  # a rerun sends nothing
    code, _, err = cli(capsys, *BASE, *ESCALATE, *SAMPLED, "--out", "again.jsonl")
    assert code == 0 and api.total == 0, err
    assert [r["grade"] for r in read(files / "again.jsonl")] == [r["grade"] for r in read(files / "near.jsonl")]

    # agree on the escalation file: per-judge rows and uncertainty bands (the pairs the cheap judge kept)
    code, out, err = cli(capsys, "agree", "--labels", "near.jsonl", "--gold", "gold.jsonl", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert [r["name"] for r in report["judges"]] == [f"openai:{CHEAP}", f"openai:{EXPENSIVE}",
                                                     "escalated (final labels)"]
    bands = report["uncertainty"]
    assert bands["pairs"] == N - len(uncertain | near) and bands["without_samples"] == len(uncertain | near)


def test_escalation_dry_run_prices_the_cheap_samples_and_one_expensive_request_per_pair(files, api, capsys):
    code, out, err = cli(capsys, *BASE, *ESCALATE, *SAMPLED, "--dry-run", "--json")
    assert code == 0 and api.total == 0, err
    judges = json.loads(out)["judges"]
    assert judges[f"openai:{CHEAP}"]["new"] == 5 * N and judges[f"openai:{CHEAP}"]["samples"] == 5
    assert judges[f"openai:{EXPENSIVE}"]["new"] == N and judges[f"openai:{EXPENSIVE}"]["samples"] == 1


def test_a_jury_with_samples_aggregates_each_judge_then_the_judges(files, api, capsys):
    jury = ["--judge", f"openai:{CHEAP}", "--judge", f"openai:{EXPENSIVE}", "--samples", "3", "--temperature", "0.7"]
    code, _, err = cli(capsys, *BASE, *jury, "--out", "jury.jsonl")
    assert code == 0, err
    assert by_model(api) == {CHEAP: 3 * N, EXPENSIVE: 3 * N}
    own = {(r["model"], r["doc_id"]): r for r in read(files / "jury.judges.jsonl")}
    for row in read(files / "jury.jsonl"):
        votes = [own[(m, row["doc_id"])] for m in (CHEAP, EXPENSIVE)]
        for v in votes:  # each judge's label is the median of its own 3 samples
            assert v["samples"] == 3 and v["grade"] == aggregate_grade(v["sample_grades"], "median")
        assert row["grade"] == min(v["grade"] for v in votes)  # median of two judges: the lower
        assert row["judge_grades"] == {f"openai:{m}": v["grade"] for m, v in zip((CHEAP, EXPENSIVE), votes)}
        pooled = votes[0]["sample_grades"] + votes[1]["sample_grades"]
        assert row["samples"] == 6 and row["sample_grades"] == pooled
        assert row["sample_agreement"] == pytest.approx(pooled.count(row["grade"]) / 6, abs=1e-6)
    api.reset()
    code, _, err = cli(capsys, *BASE, *jury, "--out", "again.jsonl")
    assert code == 0 and api.total == 0, err
    # agree on the jury file: each judge and the jury against gold, and the jury's uncertainty bands
    code, out, err = cli(capsys, "agree", "--labels", "jury.jsonl", "--gold", "gold.jsonl", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert len(report["judges"]) == 3 and report["judges"][2]["name"].startswith("jury:median(")
    assert report["uncertainty"]["pairs"] == N and report["uncertainty"]["without_samples"] == 0
    assert sum(b["n"] for b in report["uncertainty"]["bands"]) == N
    code, text, _ = cli(capsys, "agree", "--labels", "jury.jsonl", "--gold", "gold.jsonl")
    assert "uncertain" in text.lower() and "jury:median(" in text


def test_the_pipeline_failure_sentence_counts_samples_and_the_pairs_left_out(files, api):
    from labeller.errors import LabellingFailedError
    from labeller.labelling import LabelInputs, LabelOptions, label_job
    from labeller.pipelines.steps import failure_lines

    api.poison["passage 3 "] = "400"  # every sample of d3 is refused: d3 gets no label
    api.script(["400"])  # and one sample of some other pair: that pair is labelled from the other two
    with pytest.raises(LabellingFailedError) as failed:
        label_job(LabelInputs(queries="queries.jsonl", corpus="corpus.jsonl", pairs="pairs.jsonl", rubric="rubric.md",
                              cache="cache", out="labels.jsonl", temperature=0.7,
                              options=LabelOptions(samples=3, progress=False, concurrency=1)), f"openai:{CHEAP}")
    run = failed.value.run
    assert len(run.failures) == 4 and len(run.labels) == N - 1
    (line,) = failure_lines(run)
    assert line.startswith("FAILED: 4 samples (pair x sample) could not be graded after retries")
    assert "1 pair with no successful sample left out, never given a grade" in line


def test_samples_go_through_provider_batches_and_raising_n_batches_only_the_new_samples(files, api, capsys):
    batch = ["--judge", f"openai:{CHEAP}", "--batch", "--poll-interval", "0.05", "--temperature", "0.7", "--json"]
    code, out, err = cli(capsys, *BASE, *batch, "--samples", "3")
    assert code == 0, err
    assert api.counts["/v1/chat/completions"] == 0  # nothing sent synchronously
    assert sum(api.batched.values()) == 3 * N and api.batched_twice == 0  # one batched request per sample
    stats = json.loads(out)
    assert stats["samples"] == 3 and stats["requested"] == 3 * N and stats["new"] == 3 * N
    rows = read(files / "labels.jsonl")
    assert len(rows) == N and all(r["samples"] == 3 and len(r["sample_grades"]) == 3 for r in rows)
    assert all(r["grade"] == aggregate_grade(r["sample_grades"], "median") for r in rows)
    assert any(r["sample_agreement"] < 1 for r in rows)  # the batch was sampled at 0.7: noisy, like sync
    assert "labelled 120 samples (40 pairs x 3)" in err
    # the same verdicts serve a synchronous run, and N = 5 batches only samples 3 and 4
    api.batched.clear()
    code, out, err = cli(capsys, *BASE, *batch, "--samples", "5", "--out", "five.jsonl")
    assert code == 0, err
    assert sum(api.batched.values()) == 2 * N and api.batched_twice == 0
    five = {r["doc_id"]: r for r in read(files / "five.jsonl")}
    assert all(five[r["doc_id"]]["sample_grades"][:3] == r["sample_grades"] for r in rows)
    api.reset()
    code, _, err = cli(capsys, *BASE, "--judge", f"openai:{CHEAP}", "--temperature", "0.7", "--samples", "5",
                       "--out", "sync.jsonl")
    assert code == 0 and api.total == 0, err
    assert [r["grade"] for r in read(files / "sync.jsonl")] == [five[r["doc_id"]]["grade"] for r in rows]


def test_a_cheap_openai_judge_at_a_temperature_escalates_to_an_anthropic_judge(files, api, capsys):
    """--temperature belongs to the sampled cheap judge; the Anthropic judge, which takes none, is asked once."""
    other = "claude-haiku-4-5"
    code, out, err = cli(capsys, *BASE, "--judge", f"openai:{CHEAP}", "--escalate-to", f"anthropic:{other}",
                         "--escalate-below", "0.8", "--no-escalate-near-cut", "--samples", "3", "--temperature",
                         "0.7", "--json")
    assert code == 0, err
    cheap = [r for r in read(files / "labels.judges.jsonl") if r["model"] == CHEAP]
    uncertain = sum(1 for r in cheap if r["sample_agreement"] < 0.8)
    assert 0 < uncertain < N and by_model(api) == {CHEAP: 3 * N, other: uncertain}
    assert all("temperature" not in r.body for r in api.requests if r.body["model"] == other)
