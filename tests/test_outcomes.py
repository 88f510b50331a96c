"""Downstream outcomes: which metric predicts the task, whose fault a failure is, and the regression's split.

Outcomes are planted to depend on one metric at one cutoff; the report must name it, and the attribution
counts must be exactly the planted ones. AUC and the logistic fit are checked against scikit-learn.
"""

from __future__ import annotations

import numpy as np
import pytest
from outcomes_helpers import outcome_frame_rows, planted, with_first_relevant_at
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from labeller.errors import BadInputError
from labeller.outcomes import OutcomesOptions, analyse, outcome_rows, values_for
from labeller.outcomes import stats
from labeller.outcomes.gate import downstream_gate

OPTIONS = OutcomesOptions(bootstrap=300)


def _table(success: dict[str, bool]):
    return outcome_rows(outcome_frame_rows(success), "planted")


def test_auc_and_logistic_match_scikit_learn():
    rng = np.random.default_rng(3)
    x = rng.random(300).round(2)  # ties included
    y = (rng.random(300) < 1 / (1 + np.exp(-(4 * x - 2)))).astype(float)
    assert stats.auc(x, y)[0] == pytest.approx(roc_auc_score(y, x), abs=1e-12)
    (intercept,), (slope,) = stats.logistic(x, y)
    reference = LogisticRegression(C=1 / stats.PENALTY, tol=1e-12, max_iter=10_000).fit(x[:, None], y)
    assert slope == pytest.approx(reference.coef_[0][0], rel=1e-6)
    assert intercept == pytest.approx(reference.intercept_[0], rel=1e-6)
    # the same in a batch of resamples, one scikit-learn fit per row
    draws = stats.resample(300, 5, seed=1)
    aucs = stats.auc(x[draws], y[draws])
    _, slopes = stats.logistic(x[draws], y[draws])
    distinct, ok, failed = stats.resampled_counts(x, y, draws)  # the same resamples, as counts per value
    assert stats.counted_auc(ok, failed) == pytest.approx(aucs, abs=1e-12)
    assert stats.weighted_logistic(distinct, ok, failed)[1] == pytest.approx(slopes, rel=1e-6)
    for row, auc, fitted in zip(draws, aucs, slopes):
        assert auc == pytest.approx(roc_auc_score(y[row], x[row]), abs=1e-12)
        ref = LogisticRegression(C=1 / stats.PENALTY, tol=1e-12, max_iter=10_000).fit(x[row][:, None], y[row])
        assert fitted == pytest.approx(ref.coef_[0][0], rel=1e-5)


def test_the_fit_does_not_diverge_when_one_value_is_rare():
    """34 queries at 1 (33 succeeded), 3 at 0 (2 succeeded): a plain Newton step from the mean overshoots."""
    x = np.array([1.0] * 34 + [0.0] * 3)
    y = np.array([1.0] * 33 + [0.0] + [1.0, 1.0, 0.0])
    (intercept,), (slope,) = stats.logistic(x, y)
    reference = LogisticRegression(C=1 / stats.PENALTY, tol=1e-12, max_iter=10_000).fit(x[:, None], y)
    assert slope == pytest.approx(reference.coef_[0][0], rel=1e-5)
    assert intercept == pytest.approx(reference.intercept_[0], rel=1e-5)


def test_auc_is_undefined_with_one_kind_of_outcome():
    assert np.isnan(stats.auc(np.array([0.1, 0.5]), np.array([1.0, 1.0]))[0])


def _planted_hit_at_3():
    """One relevant document per query. The task succeeds when it is in the top 3, except 10 rank-1 queries
    whose agent failed anyway and 5 queries beyond rank 10 whose task succeeded without it."""
    ranking, judgments, first = planted(n=200, relevant=1)
    success = {q: r <= 3 for q, r in first.items()}
    agent = sorted(q for q, r in first.items() if r == 1)[:10]
    lucky = sorted(q for q, r in first.items() if r > 10)[:5]
    success.update({q: False for q in agent})
    success.update({q: True for q in lucky})
    return ranking, judgments, first, success, agent, lucky


def test_planted_on_hit_rate_at_3_the_report_names_it_and_the_counts_match():
    ranking, judgments, first, success, agent, lucky = _planted_hit_at_3()
    report = analyse(values_for(ranking, judgments, OPTIONS), _table(success), OPTIONS)
    assert report.recommendation.metric == "hit_rate@3"
    assert report.recommendation.predictive
    assert "Gate on hit_rate@3" in report.recommendation.sentence
    assert "The cutoff that matters is 3" in report.recommendation.sentence
    assert {c.kind: c.best_k for c in report.cutoffs}["hit_rate"] == 3
    hits = sum(r <= 3 for r in first.values())
    a = report.attribution
    assert a.metric == "hit_rate@3"
    assert a.counts == {"retrieval_fault": 200 - hits - len(lucky), "agent_fault": len(agent),
                        "over_penalised": len(lucky), "both_ok": hits - len(agent)}
    assert sorted(q.query_id for q in a.queries["agent_fault"]) == agent
    assert sorted(q.query_id for q in a.queries["over_penalised"]) == lucky
    best = report.predictions[0]
    assert best.ok_rate == pytest.approx((hits - len(agent)) / hits)
    assert best.failed_rate == pytest.approx(len(lucky) / (200 - hits))
    assert best.auc_low <= best.auc <= best.auc_high


@pytest.mark.parametrize("metric, needed", [("hit_rate@5", 1.0), ("ndcg@5", 0.5), ("recall@10", 1.0)])
def test_planted_on_another_metric_and_cutoff_is_named(metric, needed):
    """(recall@10 >= 0.5 would be hit_rate@10 under another name, with two relevant documents: the task
    needs both here.)"""
    ranking, judgments, _ = planted(n=300, relevant=2, seed=11)
    values = values_for(ranking, judgments, OPTIONS)
    success = {q: v >= needed for q, v in values.values[metric].items()}
    report = analyse(values, _table(success), OPTIONS)
    assert report.recommendation.metric == metric
    assert report.predictions[0].auc == 1.0


def test_outcomes_that_do_not_depend_on_retrieval_name_no_metric():
    ranking, judgments, _ = planted(n=200, relevant=1, seed=5)
    rng = np.random.default_rng(9)
    success = {q: bool(rng.random() < 0.6) for q in ranking.docs}
    report = analyse(values_for(ranking, judgments, OPTIONS), _table(success), OPTIONS)
    assert report.recommendation.metric is None and not report.recommendation.predictive
    assert "No retrieval metric predicts" in report.recommendation.sentence


def _regression(moved: dict[str, int], newly_failing: list[str]):
    ranking, judgments, first, success, _, _ = _planted_hit_at_3()
    run = with_first_relevant_at(ranking, judgments, moved, "candidate")
    after = dict(success)
    after.update({q: False for q in newly_failing})
    base_values = values_for(ranking, judgments, OPTIONS)
    return first, success, analyse(values_for(run, judgments, OPTIONS), _table(after), OPTIONS,
                                   baseline=base_values, baseline_outcomes=_table(success))


def test_a_regression_is_split_by_what_retrieval_did():
    ranking, judgments, first, success, _, _ = _planted_hit_at_3()
    ok = sorted(q for q in success if success[q] and first[q] <= 3)
    lost, agent = ok[:11], ok[11:14]
    _, _, report = _regression({q: 15 for q in lost}, lost + agent)
    r = report.regression
    assert (r.newly_failing, r.lost_evidence, r.kept_evidence, r.never_had) == (14, 11, 3, 0)
    assert r.sentence.startswith("Of the 14 newly failing tasks, 11 lost their evidence")
    assert sorted(c.query_id for c in r.queries["lost_evidence"]) == lost
    assert report.gate is not None and not report.gate.passed
    assert sorted(report.gate.at_risk) == lost
    assert report.gate.drop > 0.02


def test_a_regression_that_moves_only_irrelevant_queries_is_not_blamed_on_retrieval():
    """The candidate pushes the relevant document down only where it was already outside the top 3 (ndcg@10
    falls), and 3 tasks whose retrieval did not change newly fail: the agent's, not retrieval's."""
    ranking, judgments, first, success, _, _ = _planted_hit_at_3()
    deep = sorted(q for q, r in first.items() if 4 <= r <= 10)[:30]
    agent = sorted(q for q in success if success[q] and first[q] <= 3)[:3]
    _, _, report = _regression({q: 20 for q in deep}, agent)
    r = report.regression
    assert (r.newly_failing, r.lost_evidence, r.kept_evidence, r.retrieval_dropped) == (3, 0, 3, 0)
    assert "0 lost their evidence" in r.sentence
    assert report.gate.passed and report.gate.drop == pytest.approx(0.0, abs=1e-12)


def test_the_downstream_gate_fails_on_a_tiny_sample():
    """Five queries whose outcomes came with the baseline's retrieval (the regression pipeline's case): the
    candidate loses the evidence of the three that succeeded."""
    ranking, judgments, first, success, _, _ = _planted_hit_at_3()
    keep = sorted(q for q in success if first[q] <= 3 and success[q])[:3] + sorted(q for q in success
                                                                                     if first[q] > 3)[:2]
    rows = _table({q: success[q] for q in keep}).keyed("query_id")
    run = with_first_relevant_at(ranking, judgments, {q: 15 for q in keep[:3]}, "candidate")
    before = values_for(ranking, judgments, OPTIONS).values["hit_rate@3"]
    after = values_for(run, judgments, OPTIONS).values["hit_rate@3"]
    gate = downstream_gate("hit_rate@3", "baseline", before, rows, before, after, ok_from=0.5, bootstrap=200)
    assert not gate.passed and gate.drop > 0.3 and gate.at_risk == keep[:3]
    same = downstream_gate("hit_rate@3", "baseline", before, rows, before, before, ok_from=0.5, bootstrap=200)
    assert same.passed and same.drop == 0.0


def test_a_gate_metric_outside_the_grid_is_added_and_judged_at_an_unknown_cutoff_refused():
    ranking, judgments, _, success, _, _ = _planted_hit_at_3()
    options = OutcomesOptions(bootstrap=50, gate_metric="ndcg@7")
    report = analyse(values_for(ranking, judgments, options), _table(success), options)
    assert report.attribution.metric == "ndcg@7" and "ndcg@7" in {p.metric for p in report.predictions}
    options = OutcomesOptions(bootstrap=50, gate_metric="judged@7")
    with pytest.raises(BadInputError, match="judged@7"):
        analyse(values_for(ranking, judgments, options), _table(success), options)


def test_outcomes_for_queries_without_judgments_are_refused_when_none_join():
    ranking, judgments, _, _, _, _ = _planted_hit_at_3()
    with pytest.raises(BadInputError, match="none of the 2 query_ids"):
        analyse(values_for(ranking, judgments, OPTIONS), _table({"x1": True, "x2": False}), OPTIONS)


def test_evidence_coverage_and_judged_share_are_analysed():
    ranking, judgments, first = planted(n=120, relevant=1, seed=2)
    evidence = {q: {"e": {next(d for d, g in judgments.grades[q].items() if g >= 3)}} for q in ranking.docs}
    options = OutcomesOptions(bootstrap=100, cutoffs=[3, 10])
    values = values_for(ranking, judgments, options, evidence)
    assert {"coverage@3", "coverage@10", "judged@3", "judged@10"} <= set(values.values)
    assert values.values["coverage@3"] == {q: float(r <= 3) for q, r in first.items()}
    report = analyse(values, _table({q: r <= 3 for q, r in first.items()}), options)
    assert next(p for p in report.predictions if p.metric == "coverage@3").auc == 1.0


@pytest.mark.parametrize("row, field", [
    ({"query_id": "q1", "outcome": "maybe"}, "outcome"),
    ({"query_id": "q1"}, "outcome"),
    ({"query_id": "q1", "outcome": "correct", "score": 0.2}, "score"),
    ({"query_id": "q1", "score": "high"}, "score"),
    ({"outcome": "correct"}, "query_id"),
    ({"query_id": "q1", "outcome": "correct", "category": "rent"}, "category"),
])
def test_bad_outcome_rows_name_line_and_field(row, field):
    with pytest.raises(BadInputError) as info:
        outcome_rows([(1, {"query_id": "q0", "outcome": "correct"}), (2, row)], "o.jsonl")
    assert (info.value.path, info.value.line, info.value.field) == ("o.jsonl", 2, field)


def test_a_query_listed_twice_is_refused():
    with pytest.raises(BadInputError, match="listed twice") as info:
        outcome_rows([(1, {"query_id": "q1", "outcome": 1}), (2, {"query_id": "q1", "outcome": 0})], "o.csv")
    assert info.value.line == 2


def test_scores_are_successes_from_the_threshold():
    table = outcome_rows([(1, {"query_id": "a", "score": 0.8}), (2, {"query_id": "b", "score": 0.3})], "s",
                         success_from=0.5)
    assert [r.success for r in table.rows] == [True, False]
    assert [r.score for r in table.rows] == [0.8, 0.3]


def test_with_a_baseline_and_every_outcome_alike_the_gate_cannot_compare_and_fails():
    ranking, judgments, _, success, _, _ = _planted_hit_at_3()
    values = values_for(ranking, judgments, OPTIONS)
    report = analyse(values, _table({q: True for q in success}), OPTIONS, baseline=values)
    assert report.recommendation.metric is None and not report.gate.passed
    assert "every outcome is the same" in report.gate.reason
