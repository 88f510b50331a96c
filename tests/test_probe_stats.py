"""The probes' figures: the pair-weighted mean shift and its query-resampled (cluster bootstrap) interval."""

from __future__ import annotations

import numpy as np
import pytest

from labeller.probes.gate import probe_result
from labeller.probes.models import PairShift, ProbeSettings
from labeller.probes.runner import PROBES
from labeller.probes.stats import mean_and_interval


def naive_cluster_bootstrap(query_ids, values, resamples, seed, confidence):
    """An independent loop: draw queries with replacement, pool their pairs, take the mean."""
    rng = np.random.default_rng(seed + 12345)
    by_query = {}
    for q, v in zip(query_ids, values):
        by_query.setdefault(q, []).append(v)
    keys = sorted(by_query)
    means = []
    for _ in range(resamples):
        drawn = rng.choice(len(keys), size=len(keys), replace=True)
        pooled = [v for i in drawn for v in by_query[keys[i]]]
        means.append(np.mean(pooled))
    tail = (1 - confidence) / 2 * 100
    return np.percentile(means, [tail, 100 - tail])


def test_mean_is_pair_weighted_and_the_interval_matches_an_independent_bootstrap():
    rng = np.random.default_rng(7)
    query_ids, values = [], []
    for q in range(12):  # queries differ in size and in how biased the judge is on them
        for _ in range(rng.integers(1, 6)):
            query_ids.append(f"q{q}")
            values.append(float(rng.integers(-1, 3) + (q % 3 == 0)))
    mean, ci = mean_and_interval(query_ids, values, resamples=4000, seed=0, confidence=0.95)
    assert mean == pytest.approx(np.mean(values))
    low, high = naive_cluster_bootstrap(query_ids, values, 4000, 0, 0.95)
    assert ci.low == pytest.approx(low, abs=0.08) and ci.high == pytest.approx(high, abs=0.08)
    assert ci.low < mean < ci.high
    again = mean_and_interval(query_ids, values, resamples=4000, seed=0, confidence=0.95)
    assert again == (mean, ci)


def test_resampling_queries_is_wider_than_resampling_pairs_when_queries_differ():
    # two queries: one with every pair shifted by 2, one with none: pairs are not independent
    query_ids = ["a"] * 10 + ["b"] * 10
    values = [2.0] * 10 + [0.0] * 10
    _, ci = mean_and_interval(query_ids, values, resamples=2000, seed=0, confidence=0.95)
    assert ci.low == 0.0 and ci.high == 2.0  # only {a,a}, {a,b}, {b,b} can be drawn


def shifts(pairs):
    return [PairShift(query_id=q, doc_id=f"d{i}", probe_doc_id=f"d{i}#probe:x", reference=o, original=o, perturbed=p)
            for i, (q, o, p) in enumerate(pairs)]


def test_gate_fails_beyond_the_threshold_on_the_point_estimate_even_when_the_interval_is_wide():
    # five queries, a judge clearly moved on three of them: mean 0.6 > 0.5 fails, though the interval reaches below 0.5
    rows = shifts([(f"q{i}", 1, 2 if i < 3 else 1) for i in range(5)])
    result = probe_result(PROBES["length"], rows, ProbeSettings())
    assert result.verdict == "fail" and result.mean_shift == pytest.approx(0.6)
    assert result.mean_shift_interval.low < 0.5  # a gate on the near end of the interval would PASS this judge


def test_gate_passes_within_the_threshold_and_says_when_the_interval_reaches_past_it():
    rows = shifts([(f"q{i}", 1, 2 if i < 2 else 1) for i in range(5)])  # mean 0.4
    result = probe_result(PROBES["length"], rows, ProbeSettings())
    assert result.verdict == "pass" and any("interval reaches past" in r for r in result.reasons)


def test_near_duplicate_gates_on_the_absolute_shift_and_failures_are_not_grades():
    rows = shifts([("q1", 3, 4), ("q2", 3, 2), ("q3", 3, 3), ("q4", 3, None)])
    result = probe_result(PROBES["near-duplicate"], rows, ProbeSettings())
    assert result.mean_shift == 0 and result.mean_abs_shift == pytest.approx(2 / 3)
    assert result.verdict == "fail" and result.failed == 1 and result.graded == 3
    assert result.share_changed == pytest.approx(2 / 3)


def test_a_probe_the_judge_could_not_grade_at_all_fails():
    result = probe_result(PROBES["injection"], shifts([("q1", 1, None)]), ProbeSettings())
    assert result.verdict == "fail" and result.graded == 0 and result.mean_shift is None
