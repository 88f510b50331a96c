"""Self-consistency (`labeller label --samples N`): real SDKs over real HTTP to the fake API's noisy judge.

The fake answers, at temperature > 0, the planted grade of each pair moved with probability `noise`
(tests/fakeapi.py), so what the aggregate and the sample agreement must be is known.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeapi import FakeAPI

from labeller.cache_key import cache_key
from labeller.cli import main
from labeller.errors import BadInputError, LabellingFailedError
from labeller.labelling import LabelInputs, LabelOptions, label_job
from labeller.labelling.samples import aggregate_grade
from labeller.prices import EXPECTED_OUTPUT_TOKENS
from labeller.rubric import JudgePrompt

KEY = "sk-samples-test-key"
N_PAIRS = 40
RUBRIC = '+++\nname = "samples"\n+++\n# Grades\n5: exactly. 4: mostly. 3: partly. 2: barely. 1: not relevant.\n'


def grade_of(i: int) -> int:
    return i % 5 + 1


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "rubric.md").write_text(RUBRIC, encoding="utf-8")
    rows = {"queries": [{"query_id": f"q{i}", "text": f"question {i}"} for i in range(8)],
            "corpus": [{"doc_id": f"d{i}", "text": f"receipt {i} [[grade:{grade_of(i)}]]"} for i in range(N_PAIRS)],
            "pairs": [{"query_id": f"q{i % 8}", "doc_id": f"d{i}"} for i in range(N_PAIRS)]}
    for name, items in rows.items():
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return tmp_path


def run_label(folder: Path, api: FakeAPI, monkeypatch, *, samples: int, judge: str = "openai:gpt-4.1-mini",
              temperature: float | None = 0.7, out: str = "labels.jsonl", **options):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    base_url = api.openai_url if judge.startswith("openai") else api.url
    return label_job(LabelInputs(queries=folder / "queries.jsonl", corpus=folder / "corpus.jsonl",
                                 pairs=folder / "pairs.jsonl", rubric=folder / "rubric.md", cache=folder / "cache",
                                 out=folder / out, base_url=base_url,
                                 temperature=temperature if judge.startswith("openai") else None,
                                 options=LabelOptions(samples=samples, progress=False, **options)), judge)


def planted(label) -> int:
    return grade_of(int(label.doc_id[1:]))


@pytest.mark.parametrize("judge", ["openai:gpt-4.1-mini", "anthropic:claude-haiku-4-5"])
def test_aggregate_recovers_the_planted_grade_and_agreement_tracks_the_noise(inputs, monkeypatch, judge):
    means = {}
    for noise in (0.1, 0.4):
        with FakeAPI(noise=noise, noise_seed=3) as api:
            run = run_label(inputs, api, monkeypatch, samples=5, judge=judge, out=f"labels-{noise}.jsonl")
            assert api.total == 5 * N_PAIRS  # one request per pair and sample
        (inputs / "cache").rename(inputs / f"cache-{noise}")  # each noise level is its own judge
        assert len(run.labels) == N_PAIRS and not run.failures
        for label in run.labels:
            assert label.samples == 5 and len(label.sample_grades) == 5 and label.aggregate == "median"
            assert label.grade == aggregate_grade(label.sample_grades, "median")
            assert label.sample_agreement == label.sample_grades.count(label.grade) / 5
            assert label.sample_spread == max(label.sample_grades) - min(label.sample_grades)
        means[noise] = sum(label.sample_agreement for label in run.labels) / N_PAIRS
        recovered = sum(label.grade == planted(label) for label in run.labels) / N_PAIRS
        if noise == 0.1:
            assert recovered >= 0.95, recovered
    # agreement with the aggregate is about 1 - noise when the aggregate is the planted grade
    assert means[0.1] > means[0.4] + 0.15, means
    assert 0.8 <= means[0.1] <= 1.0 and 0.45 <= means[0.4] <= 0.8, means


def test_raising_n_pays_only_for_the_new_samples(inputs, monkeypatch):
    with FakeAPI(noise=0.3) as api:
        first = run_label(inputs, api, monkeypatch, samples=3)
        assert api.total == 3 * N_PAIRS
        api.reset()
        again = run_label(inputs, api, monkeypatch, samples=5)
        assert api.total == 2 * N_PAIRS  # samples 3 and 4 only
        for old, new in zip(first.labels, again.labels):
            assert new.sample_grades[:3] == old.sample_grades  # the first three came from the cache
        api.reset()
        dry = run_label(inputs, api, monkeypatch, samples=7, dry_run=True)
        assert api.total == 0
        assert (dry.stats.requested, dry.stats.new, dry.stats.cached) == (7 * N_PAIRS, 2 * N_PAIRS, 5 * N_PAIRS)
        # only the uncached samples are priced: 2 per pair; sample 0 alone is all cached and costs nothing
        assert dry.stats.estimated_output_tokens == 2 * N_PAIRS * EXPECTED_OUTPUT_TOKENS
        assert dry.stats.estimated_cost_usd > 0
        once = run_label(inputs, api, monkeypatch, samples=1, dry_run=True)
        assert once.stats.new == 0 and once.stats.estimated_cost_usd == 0
        api.reset()
        reread = run_label(inputs, api, monkeypatch, samples=5)
        assert api.total == 0 and all(label.from_cache for label in reread.labels)


def test_dry_run_multiplies_by_n(inputs, monkeypatch):
    with FakeAPI() as api:
        one = run_label(inputs, api, monkeypatch, samples=1, dry_run=True)
        four = run_label(inputs, api, monkeypatch, samples=4, dry_run=True)
        assert api.total == 0
    assert four.stats.new == 4 * one.stats.new == 4 * N_PAIRS
    assert four.stats.estimated_output_tokens == 4 * one.stats.estimated_output_tokens
    assert four.stats.estimated_cost_usd == pytest.approx(4 * one.stats.estimated_cost_usd, rel=0.05)


def test_sample_zero_keeps_todays_cache_key():
    prompt = JudgePrompt(system="s", user="u")
    args = dict(provider="openai", model="m", base_url=None, settings={"temperature": 0.7}, prompt=prompt)
    assert cache_key(**args) == cache_key(**args, sample=0)
    keys = {cache_key(**args, sample=k) for k in range(5)}
    assert len(keys) == 5


def test_a_run_without_samples_reuses_sample_zero(inputs, monkeypatch):
    with FakeAPI(noise=0.3) as api:
        plain = run_label(inputs, api, monkeypatch, samples=1)
        assert plain.labels[0].samples is None and plain.labels[0].sample_grades is None
        api.reset()
        sampled = run_label(inputs, api, monkeypatch, samples=2)
        assert api.total == N_PAIRS  # sample 0 is the verdict the plain run bought
        assert [label.sample_grades[0] for label in sampled.labels] == [label.grade for label in plain.labels]


@pytest.mark.parametrize("grades, median, majority", [
    ([3], 3, 3), ([2, 4], 2, 2), ([1, 5, 5], 5, 5), ([2, 2, 4, 4, 5], 4, 2), ([3, 3, 4, 4], 3, 3),
    ([1, 2, 3, 4, 5], 3, 3), ([1, 1, 5, 5, 3], 3, 1), ([5, 4, 5, 4, 4], 4, 4)])
def test_aggregate_rules_and_ties(grades, median, majority):
    assert aggregate_grade(grades, "median") == median
    assert aggregate_grade(grades, "majority") == majority


def test_failed_samples_are_counted_and_a_pair_needs_one_success(inputs, monkeypatch):
    with FakeAPI() as api:
        api.poison["receipt 3 "] = "400"  # every sample of d3 is refused
        api.poison["receipt 4 "] = "malformed"  # so is d4's: malformed after retries
        with pytest.raises(LabellingFailedError) as failed:
            run_label(inputs, api, monkeypatch, samples=3)
    run = failed.value.run
    assert {label.doc_id for label in run.labels} == {f"d{i}" for i in range(N_PAIRS)} - {"d3", "d4"}
    assert len(run.failures) == 6 and {f.doc_id for f in run.failures} == {"d3", "d4"}
    assert all("no sample succeeded" in f.reason for f in run.failures)
    assert "samples (pair x sample) failed" in str(failed.value)
    written = [json.loads(line) for line in (inputs / "labels.jsonl").read_text().splitlines()]
    assert {row["doc_id"] for row in written} == {label.doc_id for label in run.labels}


def test_a_pair_is_labelled_from_the_samples_that_succeeded(inputs, monkeypatch):
    pairs = inputs / "pairs.jsonl"
    pairs.write_text(json.dumps({"query_id": "q0", "doc_id": "d0"}) + "\n", encoding="utf-8")
    with FakeAPI() as api:
        api.script(["400"])  # the first request (one sample of the one pair) is refused, not retried
        with pytest.raises(LabellingFailedError) as failed:
            run_label(inputs, api, monkeypatch, samples=3, concurrency=1)
    run = failed.value.run
    (label,) = run.labels
    assert label.samples == 3 and len(label.sample_grades) == 2 and label.grade == planted(label)
    (failure,) = run.failures
    assert "sample 1 of 3 (the label uses the 2 that succeeded)" in failure.reason


@pytest.mark.parametrize("extra, words", [
    (dict(samples=0), "--samples 0 must be"), (dict(samples=-1), "--samples -1"),
    (dict(samples=3, temperature=None), "temperature 0"), (dict(samples=3, temperature=0.0), "temperature 0"),
    (dict(samples=3, aggregate="mean"), "--aggregate 'mean'"), (dict(samples=3, temperature=5.0), "out of range"),
    (dict(samples=3, judge="offline:lexical", temperature=None), "deterministic"),
    (dict(samples=2, batch=True, temperature=None), "temperature 0")])  # --batch takes samples, not at 0
def test_bad_sample_settings_are_refused_before_anything_is_sent(inputs, monkeypatch, extra, words):
    with FakeAPI() as api:
        with pytest.raises(BadInputError, match=words):
            run_label(inputs, api, monkeypatch, **extra)
        assert api.total == 0
    assert not (inputs / "labels.jsonl").exists()


def test_anthropic_refuses_a_temperature_it_cannot_send(inputs, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with pytest.raises(BadInputError, match="sends no temperature"):
        label_job(LabelInputs(queries=inputs / "queries.jsonl", corpus=inputs / "corpus.jsonl",
                              pairs=inputs / "pairs.jsonl", rubric=inputs / "rubric.md", cache=inputs / "cache",
                              out=inputs / "l.jsonl", temperature=0.5, options=LabelOptions(samples=3)),
                  "anthropic:claude-haiku-4-5")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_table_outputs_carry_the_sample_columns(inputs, monkeypatch, suffix):
    import pandas as pd

    with FakeAPI(noise=0.3) as api:
        run_label(inputs, api, monkeypatch, samples=3, out=f"labels{suffix}")
    path = inputs / f"labels{suffix}"
    frame = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    for column in ("samples", "sample_grades", "sample_agreement", "sample_spread", "aggregate"):
        assert column in frame.columns
    grades = frame["sample_grades"].iloc[0]
    grades = json.loads(grades) if suffix == ".csv" else list(grades)
    assert len(grades) == 3 and all(1 <= g <= 5 for g in grades)


def test_cli_label_with_samples_then_agree_by_band_and_annotate_uncertain_first(inputs, monkeypatch, capsys):
    """The whole loop a user runs: label with --samples 5, agree against gold by band, sample the uncertain."""
    from labeller.annotate import make_sample

    gold = [{"query_id": f"q{i % 8}", "doc_id": f"d{i}", "grade": grade_of(i), "annotator": "a"}
            for i in range(N_PAIRS)]
    (inputs / "gold.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold), encoding="utf-8")
    with FakeAPI(noise=0.45, noise_spread=2, noise_seed=1) as api:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        with pytest.raises(SystemExit) as done:
            main(["label", "--queries", str(inputs / "queries.jsonl"), "--corpus", str(inputs / "corpus.jsonl"),
                  "--pairs", str(inputs / "pairs.jsonl"), "--rubric", str(inputs / "rubric.md"),
                  "--judge", "openai:gpt-4.1-mini", "--base-url", api.openai_url, "--cache", str(inputs / "cache"),
                  "--out", str(inputs / "labels.jsonl"), "--samples", "5", "--temperature", "0.8"])
        assert done.value.code in (0, None)
        assert api.total == 5 * N_PAIRS
    err = capsys.readouterr().err
    assert f"labelled {5 * N_PAIRS} samples ({N_PAIRS} pairs x 5)" in err
    labels = [json.loads(line) for line in (inputs / "labels.jsonl").read_text().splitlines()]
    assert len(labels) == N_PAIRS and all(row["samples"] == 5 for row in labels)

    with pytest.raises(SystemExit):
        main(["agree", "--labels", str(inputs / "labels.jsonl"), "--gold", str(inputs / "gold.jsonl"), "--json",
              "--report", str(inputs / "report")])
    result = json.loads(capsys.readouterr().out)
    bands = {b["name"]: b for b in result["uncertainty"]["bands"]}
    assert sum(b["n"] for b in bands.values()) == N_PAIRS
    # gold is the planted grade, so pairs whose samples all agree are right, and disagreement lives where they split
    assert bands["unanimous"]["n"] > 0 and bands["unanimous"]["exact_agreement"] == 1.0
    assert result["uncertainty"]["uncertain_disagreement"] > result["uncertainty"]["certain_disagreement"]
    assert "judge uncertainty" in (inputs / "report" / "agreement.md").read_text()
    assert "Agreement by judge uncertainty" in (inputs / "report" / "agreement.html").read_text()

    sample = make_sample(inputs / "sample.jsonl", labels=inputs / "labels.jsonl", size=10, plan="uncertain",
                         rubric=str(inputs / "rubric.md"))
    by_pair = {(row["query_id"], row["doc_id"]): row["sample_agreement"] for row in labels}
    shown = [by_pair[item.query_id, item.doc_id] for item in sample.rows]
    least_sure = sorted(by_pair.values())[:10]
    assert sorted(shown) == least_sure  # the 10 least sure pairs, and nothing surer
    assert max(shown) < 1.0
    in_order = [by_pair[r.query_id, r.doc_id] for r in sorted(sample.rows, key=lambda r: r.position)]
    assert in_order == sorted(in_order)  # people grade the least sure pair first


def _labels_with_agreement(path: Path, rows: list[tuple[int, int, float]]) -> None:
    """rows: (judge grade, human grade, sample agreement) → a label file and a gold file beside it."""
    labels, gold = [], []
    for i, (judge, human, share) in enumerate(rows):
        labels.append({"query_id": f"q{i % 7}", "doc_id": f"d{i}", "grade": judge, "justification": "j",
                       "judge": "openai:m", "provider": "openai", "model": "m", "rubric": "r", "rubric_version": "1",
                       "cache_key": f"k{i}", "created_at": "2026-01-01T00:00:00+00:00", "samples": 5,
                       "sample_grades": [judge] * 5, "sample_agreement": share, "sample_spread": 0,
                       "aggregate": "median"})
        gold.append({"query_id": f"q{i % 7}", "doc_id": f"d{i}", "grade": human, "annotator": "a"})
    for name, items in (("labels", labels), ("gold", gold)):
        (path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")


def test_agree_by_band_says_yes_only_when_uncertain_pairs_disagree_more(tmp_path):
    from scipy.stats import fisher_exact

    from labeller.agreement.run import AgreeOptions, agree

    # 30 unanimous pairs, 3 wrong; 20 split pairs (agreement 0.4), 12 wrong; 10 "most" (0.6), 4 wrong
    rows = ([(g, g) for g in [1, 2, 3, 4, 5] * 6][:27] + [(2, 4)] * 3)
    rows = [(j, h, 1.0) for j, h in rows] + [(3, 3, 0.4)] * 8 + [(2, 4, 0.4)] * 12 + \
        [(4, 4, 0.6)] * 6 + [(5, 3, 0.6)] * 4
    _labels_with_agreement(tmp_path, rows)
    result = agree(AgreeOptions(labels=tmp_path / "labels.jsonl", gold=tmp_path / "gold.jsonl",
                                resamples=50)).uncertainty
    bands = {b.name: b for b in result.bands}
    assert (bands["unanimous"].n, bands["most"].n, bands["split"].n) == (30, 10, 20)
    assert bands["unanimous"].disagreement_rate == pytest.approx(0.1)
    assert bands["split"].exact_agreement == pytest.approx(8 / 20)
    assert bands["split"].disagreement_low < 0.6 < bands["split"].disagreement_high
    _, p = fisher_exact([[16, 14], [3, 27]], alternative="greater")
    assert result.p_value == pytest.approx(p) and result.uncertain_disagree_more is True
    assert result.verdict.startswith("Yes")

    # the same numbers of pairs, but the uncertain ones are as right as the unanimous ones: not shown
    rows = rows[:30] + [(3, 3, 0.4)] * 18 + [(2, 4, 0.4)] * 2 + \
        [(4, 4, 0.6)] * 9 + [(5, 3, 0.6)] * 1
    _labels_with_agreement(tmp_path, rows)
    result = agree(AgreeOptions(labels=tmp_path / "labels.jsonl", gold=tmp_path / "gold.jsonl",
                                resamples=50)).uncertainty
    assert result.uncertain_disagree_more is False and result.verdict.startswith("Not shown")


def test_agree_without_samples_has_no_bands(tmp_path):
    from labeller.agreement.run import AgreeOptions, agree

    _labels_with_agreement(tmp_path, [(3, 3, 1.0), (2, 4, 1.0)])
    rows = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    for row in rows:
        for key in ("samples", "sample_grades", "sample_agreement", "sample_spread", "aggregate"):
            row.pop(key)
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert agree(AgreeOptions(labels=tmp_path / "labels.jsonl", gold=tmp_path / "gold.jsonl",
                              resamples=20)).uncertainty is None


def test_python_api_label_with_samples(inputs, monkeypatch):
    import asyncio

    import labeller

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    common = dict(queries=inputs / "queries.jsonl", corpus=inputs / "corpus.jsonl", judge="openai:gpt-4.1-mini",
                  rubric=inputs / "rubric.md", cache=inputs / "cache", progress=False)
    with FakeAPI(noise=0.3) as api:
        frame = labeller.label(inputs / "pairs.jsonl", base_url=api.openai_url, samples=3, temperature=0.7,
                               aggregate="majority", **common)
        assert api.total == 3 * N_PAIRS
        assert len(frame) == N_PAIRS and set(frame["aggregate"]) == {"majority"}
        assert all(len(grades) == 3 for grades in frame["sample_grades"])
        assert frame.attrs["stats"]["samples"] == 3
        again = asyncio.run(labeller.alabel(inputs / "pairs.jsonl", base_url=api.openai_url, samples=4,
                                            temperature=0.7, **common))
        assert api.total == 4 * N_PAIRS  # only sample 3 was new
        assert list(again["sample_grades"].map(lambda g: list(g[:3]))) == list(frame["sample_grades"].map(list))
    with pytest.raises(BadInputError, match="temperature 0"):
        labeller.label(inputs / "pairs.jsonl", samples=3, **common)
