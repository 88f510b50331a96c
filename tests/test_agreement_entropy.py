"""Agreement by grade-entropy band (`labeller agree` on labels made with --grade-probs): per-band kappa checked
against scikit-learn, a planted case where the spread pairs disagree with people more, the bands of labels the fake
API's planted log-probabilities made, and a damaged entropy refused with its file, line and field."""

from __future__ import annotations

import json
import math

import pytest
from fakeapi import FakeAPI
from sklearn.metrics import cohen_kappa_score
from test_grade_probs import inputs, run_label  # noqa: F401 (inputs: a fixture)

from labeller.agreement.entropy_bands import band_of
from labeller.agreement.run import AgreeOptions, agree
from labeller.cli import main
from labeller.errors import BadInputError

# band -> (entropy of its labels, (judge grade, gold grade) per pair): the sure pairs mostly agree with people,
# the spread ones mostly do not
PLANTED = {
    "sure": (0.2, [(g, g) for g in (1, 2, 3, 4, 5) * 4] + [(3, 4)]),
    "leaning": (0.8, [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (2, 3), (4, 3), (5, 4), (1, 2), (3, 3)]),
    "spread": (1.6, [(1, 3), (2, 4), (5, 3), (4, 2), (3, 1), (2, 2), (4, 4), (1, 5), (5, 1), (3, 5), (2, 1)]),
}


def _row(qid: str, doc: str, grade: int, entropy: float | None) -> dict:
    row = {"query_id": qid, "doc_id": doc, "grade": grade, "justification": "j", "judge": "openai:gpt-4.1-mini",
           "provider": "openai", "model": "gpt-4.1-mini", "rubric": "general", "rubric_version": "v1",
           "cache_key": f"k-{qid}-{doc}", "created_at": "2026-01-01T00:00:00+00:00"}
    if entropy is not None:
        row.update(grade_probs={str(g): 0.2 for g in range(1, 6)}, expected_grade=3.0, grade_entropy=entropy,
                   grade_probs_source="logprobs")
    return row


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def planted(tmp_path):
    labels, gold = [], []
    for band, (entropy, pairs) in PLANTED.items():
        for i, (judge, person) in enumerate(pairs):
            labels.append(_row("q1", f"{band}{i}", judge, entropy))
            gold.append({"query_id": "q1", "doc_id": f"{band}{i}", "grade": person, "annotator": "ann"})
    labels.append(_row("q1", "plain", 3, None))  # a label without a distribution: in no band
    gold.append({"query_id": "q1", "doc_id": "plain", "grade": 3, "annotator": "ann"})
    _write(tmp_path / "labels.jsonl", labels)
    _write(tmp_path / "gold.jsonl", gold)
    return tmp_path


def test_per_band_kappa_is_scikit_learns_and_the_spread_pairs_disagree_more(planted):
    result = agree(AgreeOptions(labels=planted / "labels.jsonl", gold=planted / "gold.jsonl", resamples=50))
    bands = {b.name: b for b in result.entropy.bands}
    assert result.entropy.kind == "entropy" and result.entropy.pairs == 42 and result.entropy.without_samples == 1
    for name, (_, pairs) in PLANTED.items():
        judge, gold = [j for j, _ in pairs], [g for _, g in pairs]
        band = bands[name]
        assert band.n == len(pairs)
        assert band.kappa == pytest.approx(cohen_kappa_score(gold, judge, labels=[1, 2, 3, 4, 5]))
        assert band.kappa_quadratic == pytest.approx(
            cohen_kappa_score(gold, judge, labels=[1, 2, 3, 4, 5], weights="quadratic"))
        assert band.disagreement_rate == pytest.approx(sum(j != g for j, g in pairs) / len(pairs))
    assert bands["sure"].kappa > bands["leaning"].kappa > bands["spread"].kappa
    assert result.entropy.certain_disagreement == pytest.approx(1 / 21)
    assert result.entropy.uncertain_disagreement == pytest.approx((4 + 9) / 21)
    assert result.entropy.uncertain_disagree_more and result.entropy.verdict.startswith("Yes")
    assert result.uncertainty is None  # no sample agreement in these labels


def test_when_uncertainty_says_nothing_the_verdict_says_not_shown(tmp_path):
    """The same test must be able to say no: sure and spread pairs that disagree alike."""
    labels, gold = [], []
    for i, g in enumerate((1, 2, 3, 4, 5) * 4):
        entropy = 0.1 if i % 2 else 1.8
        labels.append(_row("q1", f"d{i}", g if i % 4 > 1 else 6 - g if g != 3 else 4, entropy))  # half of each band wrong
        gold.append({"query_id": "q1", "doc_id": f"d{i}", "grade": g, "annotator": "ann"})
    _write(tmp_path / "labels.jsonl", labels)
    _write(tmp_path / "gold.jsonl", gold)
    result = agree(AgreeOptions(labels=tmp_path / "labels.jsonl", gold=tmp_path / "gold.jsonl",
                                resamples=50)).entropy
    assert result.uncertain_disagree_more is False and result.verdict.startswith("Not shown")


def test_the_cli_reports_the_bands(planted, capsys):
    with pytest.raises(SystemExit):
        main(["agree", "--labels", str(planted / "labels.jsonl"), "--gold", str(planted / "gold.jsonl"), "--json",
              "--report", str(planted / "report")])
    result = json.loads(capsys.readouterr().out)
    assert [b["n"] for b in result["entropy"]["bands"]] == [21, 10, 11]
    markdown = (planted / "report" / "agreement.md").read_text()
    assert "## Agreement by grade entropy (--grade-probs)" in markdown and "grade entropy at most 0.5 bits" in markdown
    assert "1 compared pairs carry no grade distribution" in markdown
    assert "Agreement by grade entropy" in (planted / "report" / "agreement.html").read_text()


def test_the_bands_of_labels_from_planted_logprobs(inputs, monkeypatch):  # noqa: F811
    """sure 0 and leaning 0.47 bits are sure; split_late 0.88 and split_agree 1 bit lean; spread 2.12 is spread."""
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, temperature=0.0, grade_probs=True)
    assert {lb.doc_id: band_of(lb.grade_entropy) for lb in run.labels} == {
        "sure": "sure", "leaning": "sure", "split_agree": "leaning", "split_late": "leaning", "spread": "spread"}
    _write(inputs / "gold.jsonl", [{"query_id": "q1", "doc_id": lb.doc_id, "grade": lb.grade, "annotator": "a"}
                                   for lb in run.labels])
    entropy = agree(AgreeOptions(labels=inputs / "labels.jsonl", gold=inputs / "gold.jsonl", resamples=20)).entropy
    assert [b.n for b in entropy.bands] == [2, 2, 1]


@pytest.mark.parametrize("value", [-0.1, math.log2(5) + 0.01, "lots"])
def test_an_impossible_entropy_is_refused_with_where_it_is(planted, value):
    rows = [json.loads(line) for line in (planted / "labels.jsonl").read_text().splitlines()]
    rows[3]["grade_entropy"] = value
    _write(planted / "bad.jsonl", rows)
    with pytest.raises(BadInputError, match="grade_entropy") as err:
        agree(AgreeOptions(labels=planted / "bad.jsonl", gold=planted / "gold.jsonl", resamples=20))
    assert "line 4" in str(err.value) or err.value.line == 4


def test_a_fallback_runs_labels_get_both_the_entropy_and_the_sample_bands(inputs, monkeypatch):  # noqa: F811
    """Anthropic gives no log-probabilities: five samples a pair, whose shares are the distribution. sure, leaning
    and split_agree are unanimous (0 bits); split_late (1 x4, 2) is 0.72 bits, leaning; spread (3, 2, 3, 4, 2) is
    1.52 bits."""
    with FakeAPI() as api:
        run = run_label(inputs, api, monkeypatch, judge="anthropic:claude-haiku-4-5", grade_probs=True)
    _write(inputs / "gold.jsonl", [{"query_id": "q1", "doc_id": lb.doc_id, "grade": 3, "annotator": "a"}
                                   for lb in run.labels])
    result = agree(AgreeOptions(labels=inputs / "labels.jsonl", gold=inputs / "gold.jsonl", resamples=20))
    assert [(b.name, b.n) for b in result.entropy.bands] == [("sure", 3), ("leaning", 1), ("spread", 1)]
    # split_late: 4 of 5 give its median 1 (most); spread: 2 of 5 give its median 3 (split)
    assert [(b.name, b.n) for b in result.uncertainty.bands] == [("unanimous", 3), ("most", 1), ("split", 1)]
