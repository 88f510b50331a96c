"""NDCG under the pair design: the expected ideal DCG and the ratio's second-order term
(labeller.evaluation.corrected_ideal), against plain-Python computations (every grade assignment enumerated; the
U-statistic as a double loop), and on a simulated pool where the plug-in first-order estimate runs high and its
interval short (the judge over-rates the run's own top pairs, as it did the BM25 runs' on LLMJudge) and the new
one does not."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np

from labeller.evaluation.corrected import _Model
from labeller.evaluation.corrected_ideal import expected_ideal, second_order
from labeller.evaluation.corrected_pool import GRADES
from labeller.evaluation.corrected_terms import grade_gains
from labeller.evaluation.runs import Ranking
from tests.test_evaluation_corrected_tilt import coverage_draws


def _idcg(grades: list[int], gains: list[float], k: int) -> float:
    best = sorted((gains[g] for g in grades), reverse=True)
    best = best[:k] if k else best
    return sum(g / math.log2(rank + 2) for rank, g in enumerate(best))


def _by_enumeration(dist: list[list[float]], fixed: list[int | None], gains: list[float], k: int):
    """E[IDCG] over every assignment of the uncertain pairs' grades, and for each fixed pair and grade g the same
    with that pair's grade set to g."""
    open_rows = [i for i, f in enumerate(fixed) if f is None]

    def expectation(known: list[int | None]) -> float:
        total = 0.0
        for combo in itertools.product(range(len(gains)), repeat=len(open_rows)):
            chance = 1.0
            grades = list(known)
            for i, g in zip(open_rows, combo):
                chance *= dist[i][g]
                grades[i] = g
            total += chance * _idcg(grades, gains, k)
        return total

    value = expectation(fixed)
    per_row = {i: [expectation([g if j == i else f for j, f in enumerate(fixed)]) for g in range(len(gains))]
               for i, f in enumerate(fixed) if f is not None}
    return value, per_row


def test_expected_ideal_matches_enumeration():
    rng = random.Random(7)
    width = len(GRADES)
    for gain in ("linear", "exponential"):
        gains = grade_gains(gain, GRADES)
        for k in (2, 3, 0):
            dist, fixed = [], []
            for i in range(7):
                if i % 3 == 0:
                    g = rng.randrange(width)
                    dist.append([float(x == g) for x in range(width)])
                    fixed.append(g)
                elif i == 5:  # the same distribution as pair 4: they enter as one binomial
                    dist.append(list(dist[4]))
                    fixed.append(None)
                else:
                    raw = [rng.random() ** 2 for _ in range(width)]
                    dist.append([r / sum(raw) for r in raw])
                    fixed.append(None)
            value, per_row, _ = expected_ideal(np.array(dist), np.array([f is not None for f in fixed]), gains, k)
            want, want_rows = _by_enumeration(dist, fixed, list(gains), k)
            assert math.isclose(value, want, rel_tol=1e-10), (gain, k, value, want)
            for i, row in want_rows.items():
                assert np.allclose(per_row[i], row, rtol=1e-10), (gain, k, i)


def test_expected_ideal_at_point_masses_is_the_plain_ideal():
    gains = grade_gains("exponential", GRADES)
    grades = [4, 0, 2, 2, 3, 1, 4, 0, 3]
    dist = np.eye(len(GRADES))[grades]
    for k in (3, 5, 0):
        assert math.isclose(expected_ideal(dist, np.ones(len(grades), bool), gains, k)[0],
                            _idcg(grades, list(gains), k), rel_tol=1e-12)


def test_second_order_matches_a_double_loop():
    rng = random.Random(3)
    top = [rng.uniform(-2, 2) if rng.random() < 0.5 else 0.0 for _ in range(9)]
    bottom = [rng.uniform(-3, 3) for _ in range(9)]
    weights = [rng.uniform(0.5, 4) for _ in range(9)]
    dcg, ideal = 2.7, 5.1

    def product(a, b):  # sum over i != j of w_i w_j a_i b_j, plus sum of w_i a_i b_i
        return (sum(weights[i] * weights[j] * a[i] * b[j] for i in range(9) for j in range(9) if i != j)
                + sum(weights[i] * a[i] * b[i] for i in range(9)))

    want = dcg * product(bottom, bottom) / ideal**3 - product(top, bottom) / ideal**2
    got, effect = second_order(dcg, ideal, np.array(top), np.array(bottom), np.array(weights))
    assert math.isclose(got, want, rel_tol=1e-10)
    # each pair's effect: the derivative of the term in (w_i top_i, w_i bottom_i), here by central differences
    d_dcg, d_ideal = sum(w * t for w, t in zip(weights, top)), sum(w * b for w, b in zip(weights, bottom))

    def term(x, y):  # the term's leading part as a function of the two weighted sums
        return dcg * y * y / ideal**3 - x * y / ideal**2

    h = 1e-6
    by_dcg = (term(d_dcg + h, d_ideal) - term(d_dcg - h, d_ideal)) / (2 * h)
    by_ideal = (term(d_dcg, d_ideal + h) - term(d_dcg, d_ideal - h)) / (2 * h)
    assert np.allclose(effect, [by_dcg * t + by_ideal * b for t, b in zip(top, bottom)], rtol=1e-6)
    assert second_order(dcg, ideal, np.array(top), np.array(bottom), np.zeros(9))[0] == 0.0  # the gold is the pool


def world(seed: int, queries: int = 100, pool: int = 40, trap: float = 0.5):
    """Queries with 5-30% relevant pairs; the run ranks mostly by a lexical score and a little by people's grade;
    the judge moves a pair of the run's top 10 one grade up with chance `trap` (a lexical match it over-rates)."""
    rng = random.Random(seed)
    human, judge, run = {}, {}, {}
    for q in range(queries):
        qid = f"q{q}"
        share = 0.05 + 0.25 * (q % 4) / 3
        docs = [f"d{q}-{i}" for i in range(pool)]
        human[qid] = {d: rng.choice([3, 4]) if rng.random() < share else rng.choice([1, 2]) for d in docs}
        lexical = {d: rng.random() for d in docs}
        run[qid] = sorted(docs, key=lambda d: -(0.3 * human[qid][d] + 2 * lexical[d]))
        top = set(run[qid][:10])
        judge[qid] = {d: min(4, g + (d in top and rng.random() < trap)) for d, g in human[qid].items()}
    return human, judge, Ranking("r", docs=run)


def _draws(plug_in: bool, draws: int = 60, seed: int = 0):
    """nDCG@10 over random gold samples of 1/4 of each judge grade (coverage_draws)."""
    return coverage_draws(*world(seed), "ndcg@10", 4,
                          lambda pool, settings: _Model(pool, settings, plug_in_ideal=plug_in), draws, seed)


def test_expected_ideal_removes_ndcgs_bias_where_the_plug_in_runs_high():
    """100 queries of 40 pairs, a quarter of each judge grade graded, the judge over-rating half the run's top 10:
    the plug-in first-order estimate (ideal DCG at the expected counts, its gradient there) ran +0.80 se high and
    covered 0.85 of 60 draws; the expected ideal DCG with the second-order term (and its effects in the variance)
    +0.12 se and 0.98, on the same draws. Thresholds: within 0.3 se and at least 0.9; the plug-in must fail them
    (above +0.5 se, below 0.88)."""
    old, new = _draws(plug_in=True), _draws(plug_in=False)
    old_bias, new_bias = old[:, 1].mean() / old[:, 2].mean(), new[:, 1].mean() / new[:, 2].mean()
    assert old_bias > 0.5 and old[:, 0].mean() < 0.88, (old_bias, old[:, 0].mean())  # the bad case fails the gate
    assert abs(new_bias) < 0.3 and new[:, 0].mean() >= 0.9, (new_bias, new[:, 0].mean())
