"""NDCG's per-query prior under the pair design (labeller.evaluation.corrected_prior), against hand computation on
a planted pool: two queries of 10 pairs, judge grades 5 and 1 only, 4 gold pairs in each judge stratum."""

from __future__ import annotations

import numpy as np
import pytest

from labeller.evaluation.corrected_pool import gold_pool
from labeller.evaluation.corrected_prior import confusion, em_prior, query_prior
from labeller.evaluation.qrels import Judgments

LOW, HIGH = 0, 4  # columns of grades 1 and 5


def _pool():
    """Query a: 6 pairs judged 5, 4 judged 1; query b: 2 judged 5, 8 judged 1. Gold: stratum 5 has people's
    5, 5, 5, 1 (P(5 | judge 5) = 3/4); stratum 1 has 1, 1, 1, 5 (P(5 | judge 1) = 1/4)."""
    judge = {"a": {f"a{i}": 5 if i < 6 else 1 for i in range(10)}, "b": {f"b{i}": 5 if i < 2 else 1 for i in range(10)}}
    gold = {"a": {"a0": 5, "a1": 5, "a2": 5, "a6": 1, "a7": 1}, "b": {"b0": 1, "b8": 1, "b9": 5}}
    return gold_pool(Judgments(judge, "judge", "labels"), Judgments(gold, "gold", "gold"), design="pairs")


def test_confusion_from_the_stratified_gold():
    # the joint N_j x share: judge 5: 8 x (1/4, 3/4) = (2, 6); judge 1: 12 x (3/4, 1/4) = (9, 3); columns 11 and 9
    pool = _pool()
    given, overall = confusion(pool, pool.calibration())
    assert given[HIGH, HIGH] == pytest.approx(6 / 9) and given[HIGH, LOW] == pytest.approx(2 / 11)
    assert given[LOW, HIGH] == pytest.approx(3 / 9) and given[LOW, LOW] == pytest.approx(9 / 11)
    assert overall[[LOW, HIGH]] == pytest.approx([11 / 20, 9 / 20]) and overall.sum() == pytest.approx(1.0)


def test_em_one_step_and_its_fixed_point():
    # P(j | h) = [[.8, .2], [.2, .8]]; 13 pairs judged low, 7 high. One step from (1/2, 1/2): posteriors (.8, .2) and
    # (.2, .8), mean P(high) = (13 x .2 + 7 x .8) / 20 = 0.41. The maximum likelihood: .35 = .2 + .6 pi, pi = 1/4.
    likelihood = np.array([[0.8, 0.2]] * 13 + [[0.2, 0.8]] * 7)
    assert em_prior(likelihood, np.array([0.5, 0.5]), iterations=1)[1] == pytest.approx(0.41)
    assert em_prior(likelihood, np.array([0.5, 0.5]), iterations=500)[1] == pytest.approx(0.25, abs=1e-6)


def test_query_prior_by_hand():
    # query a, 60% judged 5: 0.6 = (2/11)(1 - pi) + (2/3) pi, pi = 759/880 = 0.8625; its judge-5 pair:
    # (2/3)(0.8625) / ((2/3)(0.8625) + (2/11)(0.1375)) = 0.575 / 0.6. Query b, 20%: pi = 0.0375, its judge-5 pair
    # 0.025 / 0.2 = 0.125 (the calibration says 0.75 for both).
    pool = _pool()
    calibration = pool.calibration()
    a5, b5, b1 = pool.index["a", "a3"], pool.index["b", "b1"], pool.index["b", "b5"]
    own = query_prior(pool, calibration, shrink=0.0)
    assert own[a5, HIGH] == pytest.approx(0.575 / 0.6, abs=1e-6)
    assert own[b5, HIGH] == pytest.approx(0.125, abs=1e-6)
    assert own[b1, HIGH] == pytest.approx((1 / 3) * 0.0375 / ((1 / 3) * 0.0375 + (9 / 11) * 0.9625), abs=1e-6)
    assert np.allclose(own.sum(axis=1), 1.0)
    # shrunk by 20 pseudo-pairs to the all-query 9/20: query a's prior (10 x 0.8625 + 20 x 0.45) / 30 = 0.5875
    shrunk = query_prior(pool, calibration, shrink=20.0)
    assert shrunk[a5, HIGH] == pytest.approx((2 / 3) * 0.5875 / ((2 / 3) * 0.5875 + (2 / 11) * 0.4125), abs=1e-6)
    # at the all-query prior (infinite shrinkage) it is the calibration's row, P(5 | judge 5) = 3/4
    assert query_prior(pool, calibration, shrink=1e9)[a5] == pytest.approx(calibration[HIGH], abs=1e-6)


def test_query_design_keeps_the_calibration():
    pool = _pool()
    pool.design = "queries"
    calibration = pool.calibration()
    assert np.array_equal(query_prior(pool, calibration), calibration[pool.judge - 1])
