"""Prediction-powered share of relevant pairs, and the human ceiling from several annotators."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from agreement_helpers import agree_json, write_jsonl, write_labels
from labeller.agreement import classic_ppi, stratified_ppi


def test_classic_ppi_by_hand():
    # relevant from 3: humans say R R N N on the gold pairs, the judge R N N N; on 6 more pairs the judge says R R N N N N
    estimate, ci = classic_ppi([4, 4, 1, 1], [4, 1, 1, 1], [5, 3, 2, 1, 1, 2], relevant_from=3)
    rectifier = np.array([0, 1, 0, 0])
    unlabelled = np.array([1, 1, 0, 0, 0, 0])
    assert estimate == pytest.approx(2 / 6 + 1 / 4)
    se = np.sqrt(np.var(unlabelled, ddof=1) / 6 + np.var(rectifier, ddof=1) / 4)
    assert ci.high - estimate == pytest.approx(1.959964 * se, rel=1e-5)
    assert estimate - ci.low == pytest.approx(ci.high - estimate)


def population(rng, size=20000):
    """Humans call 30% relevant; the judge is generous: it calls 35% of the irrelevant ones relevant."""
    truth = rng.random(size) < 0.3
    judge_grade = np.where(truth, rng.choice([2, 3, 4, 5], size, p=[0.1, 0.2, 0.3, 0.4]),
                           rng.choice([1, 2, 3, 4], size, p=[0.4, 0.25, 0.25, 0.1]))
    return np.where(truth, 4, 1), judge_grade


def test_ppi_intervals_cover_the_true_share_a_biased_judge_misses():
    rng = np.random.default_rng(0)
    covered = {"classic": 0, "stratified": 0}
    runs = 150
    for _ in range(runs):
        gold, judge = population(rng)
        truth = float(np.mean(gold >= 3))
        assert np.mean(judge >= 3) - truth > 0.1  # the judge alone is far off
        sample = rng.choice(len(gold), 300, replace=False)
        rest = np.setdiff1d(np.arange(len(gold)), sample)
        _, ci = classic_ppi(gold[sample], judge[sample], judge[rest], 3)
        covered["classic"] += ci.low <= truth <= ci.high
        # a gold set stratified by judge grade: 60 pairs of each grade the judge gave
        strat = np.concatenate([rng.choice(np.flatnonzero(judge == g), 60, replace=False) for g in range(1, 6)])
        rest = np.setdiff1d(np.arange(len(gold)), strat)
        _, ci = stratified_ppi(gold[strat], judge[strat], judge[rest], 3)
        covered["stratified"] += ci.low <= truth <= ci.high
    assert covered["classic"] / runs >= 0.9 and covered["stratified"] / runs >= 0.9, covered


def test_stratified_ppi_bounds_judge_grades_without_gold():
    # the judge gave grade 5 to a third of all pairs, but no gold pair has judge grade 5
    estimate, ci = stratified_ppi([1, 4, 1, 4], [1, 1, 3, 3], [5, 5, 5, 1, 3, 5], relevant_from=3)
    assert ci.high - ci.low > 0.4 and ci.low <= estimate <= ci.high


def test_cli_reports_prediction_powered_estimate(tmp_path):
    rng = np.random.default_rng(1)
    gold_grades, judge_grades = population(rng, 3000)
    keys = [(f"q{i % 50}", f"d{i}") for i in range(3000)]
    labels = write_labels(tmp_path / "labels.jsonl", {k: int(g) for k, g in zip(keys, judge_grades)})
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": q, "doc_id": d, "grade": int(g)}
                                                 for (q, d), g in list(zip(keys, gold_grades))[:400]])
    result = agree_json("--labels", labels, "--gold", gold, "--bootstrap", 50)
    ppi = result["prediction_powered"]
    assert ppi["n_gold"] == 400 and ppi["n_unlabelled"] == 2600 and ppi["relevant_from"] == 3
    truth = float(np.mean(gold_grades >= 3))
    assert ppi["classic"]["low"] <= truth <= ppi["classic"]["high"]
    assert ppi["judge_only_share"] > ppi["classic"]["high"]


def test_human_ceiling_matches_sklearn_and_krippendorff(tmp_path):
    rng = np.random.default_rng(2)
    pairs = [(f"q{i % 8}", f"d{i}") for i in range(60)]
    truth = rng.integers(1, 6, 60)
    people = {name: np.clip(truth + rng.integers(-1, 2, 60), 1, 5) for name in ("ann", "bob", "cat")}
    people["cat"] = people["cat"].astype(float)
    people["cat"][30:] = np.nan  # cat graded only the first 30 pairs
    judge = np.clip(truth + rng.integers(-2, 3, 60), 1, 5)
    rows = [{"query_id": q, "doc_id": d, "grade": int(people[a][i]), "annotator": a}
            for a in people for i, (q, d) in enumerate(pairs) if not np.isnan(people[a][i])]
    labels = write_labels(tmp_path / "labels.jsonl", {k: int(g) for k, g in zip(pairs, judge)})
    ceiling = agree_json("--labels", labels, "--gold", write_jsonl(tmp_path / "g.jsonl", rows), "--bootstrap", 20)["ceiling"]
    assert ceiling["pairs"] == 60 and ceiling["annotators"] == ["ann", "bob", "cat"]
    grades = [1, 2, 3, 4, 5]
    ann, bob, cat = people["ann"], people["bob"], people["cat"][:30].astype(int)
    pairwise = [(cohen_kappa_score(ann, bob, labels=grades), 60), (cohen_kappa_score(ann[:30], cat, labels=grades), 30),
                (cohen_kappa_score(bob[:30], cat, labels=grades), 30)]
    assert ceiling["kappa"] == pytest.approx(sum(k * w for k, w in pairwise) / 120)
    data = np.vstack([people["ann"], people["bob"], people["cat"]]).astype(float)
    assert ceiling["alpha_ordinal"] == pytest.approx(krippendorff.alpha(data, level_of_measurement="ordinal",
                                                                        value_domain=grades))
    by_judge = [(cohen_kappa_score(ann, judge, labels=grades), 60), (cohen_kappa_score(bob, judge, labels=grades), 60),
                (cohen_kappa_score(cat, judge[:30], labels=grades), 30)]
    assert ceiling["judge_kappa"] == pytest.approx(sum(k * w for k, w in by_judge) / 150)
