"""The calibration shifted by each query's richness (labeller.evaluation.corrected_richness): on a planted world
whose queries differ in their share of relevant pairs under a judge of fixed error, the fitted rows move a poor
query's prediction down and a rich one's up, nearer each group's true rate than the pooled calibration; the fit
solves its own penalised score equation; degenerate gold falls back to the calibration's rows."""

from __future__ import annotations

import random

import numpy as np

from labeller.evaluation import corrected_richness
from labeller.evaluation.corrected_pool import GRADES, gold_pool
from labeller.evaluation.corrected_richness import (
    calibrated_rows,
    fitted_shift,
    richness,
)
from labeller.records import GRADE_MIN
from tests.test_evaluation_corrected import judgments

RELEVANT_FROM = 3


def world(seed: int, queries: int = 30, pool: int = 120, gold_share: float = 0.1):
    """Poor queries (5% relevant) and rich ones (50%); the judge, the same for every query, grades a relevant pair
    relevant with chance 0.8 and a non-relevant one with chance 0.15; a uniform gold sample."""
    rng = random.Random(seed)
    human, judge, gold = {}, {}, {}
    for q in range(queries):
        qid, share = f"q{q}", 0.05 if q % 2 else 0.5
        for i in range(pool):
            d = f"d{q}-{i}"
            h = rng.choice([3, 4]) if rng.random() < share else rng.choice([1, 2])
            j = rng.choice([3, 4]) if rng.random() < (0.8 if h >= 3 else 0.15) else rng.choice([1, 2])
            human.setdefault(qid, {})[d], judge.setdefault(qid, {})[d] = h, j
            if rng.random() < gold_share:
                gold.setdefault(qid, {})[d] = h
    return human, judge, gold


def _fitted(judge, gold):
    pool = gold_pool(judgments(judge, "labels", "qrels"), judgments(gold), "pairs")
    calibration = pool.calibration(pool.in_gold)
    return pool, calibration, calibrated_rows(pool, calibration, pool.in_gold, RELEVANT_FROM)


def test_poor_queries_move_down_and_rich_ones_up():
    human, judge, gold = world(0)
    pool, calibration, rows = _fitted(judge, gold)
    base = calibration[pool.judge - GRADE_MIN]
    relevant = GRADES >= RELEVANT_FROM
    truth = np.array([human[q][d] >= RELEVANT_FROM for (q, d) in sorted(pool.index, key=pool.index.get)])
    poor = np.array([int(q[1:]) % 2 == 1 for q in pool.query])
    x = richness(pool, RELEVANT_FROM)
    assert x[poor].mean() < 0 < x[~poor].mean()
    for grade in GRADES[:4]:  # every judge grade: P(relevant) moves towards the group's own rate
        for group in (poor, ~poor):
            where = (pool.judge == grade) & group
            before, after = base[where][:, relevant].sum(axis=1).mean(), rows[where][:, relevant].sum(axis=1).mean()
            true_rate = truth[where].mean()
            assert abs(after - true_rate) < abs(before - true_rate), (grade, before, after, true_rate)
    # the predicted relevant counts (the pooled calibration's: 328 for the poor queries' 90, 618 for the rich
    # ones' 910; shifted 183 and 876)
    for group in (poor, ~poor):
        count, before = rows[group][:, relevant].sum(), base[group][:, relevant].sum()
        assert abs(count - truth[group].sum()) < 0.6 * abs(before - truth[group].sum())
    np.testing.assert_allclose(rows.sum(axis=1), 1.0)


def test_the_fit_solves_its_penalised_score_equation():
    _, judge, gold = world(1)
    pool, calibration, _ = _fitted(judge, gold)
    learn = pool.in_gold
    with np.errstate(divide="ignore"):
        log_base = np.log(calibration[pool.judge - GRADE_MIN])[learn]
    x = richness(pool, RELEVANT_FROM)[learn]
    observed = np.eye(len(GRADES))[pool.human[learn] - GRADE_MIN]
    shift = fitted_shift(log_base, x, observed)
    scores = np.exp(log_base + x[:, None] * shift)
    p = scores / scores.sum(axis=1, keepdims=True)
    assert shift[0] == 0.0 and shift[2] > 0  # richer queries: more often relevant, whatever the judge said
    np.testing.assert_allclose((x @ (observed - p))[1:], corrected_richness.PENALTY * shift[1:], atol=1e-7)


def test_degenerate_gold_keeps_the_calibration():
    _, judge, gold = world(2)
    one_grade = {q: {d: 1 for d in docs} for q, docs in gold.items()}
    tiny = {q: docs for q, docs in list(gold.items())[:2]}
    tiny = {q: dict(list(docs.items())[:5]) for q, docs in tiny.items()}
    flat = {q: {d: 2 for d in docs} for q, docs in judge.items()}  # one richness for every query
    flat["q0"] = dict(list(flat["q0"].items())[:50])  # whatever the pool sizes (the judge-free arm's one grade)
    for labels, sample in ((judge, one_grade), (judge, tiny), (flat, gold)):
        pool = gold_pool(judgments(labels, "labels", "qrels"), judgments(sample), "pairs")
        calibration = pool.calibration(pool.in_gold)
        np.testing.assert_array_equal(calibrated_rows(pool, calibration, pool.in_gold, RELEVANT_FROM),
                                      calibration[pool.judge - GRADE_MIN])
    pool, calibration, rows = _fitted(judge, gold)
    np.testing.assert_array_equal(calibrated_rows(pool, calibration, pool.in_gold, RELEVANT_FROM, pooled=True),
                                  calibration[pool.judge - GRADE_MIN])
    assert not np.allclose(rows, calibration[pool.judge - GRADE_MIN])


def test_a_judge_grade_without_gold_keeps_its_own_grade():
    _, judge, gold = world(3)
    judge = {q: {d: 5 if i == 0 else g for i, (d, g) in enumerate(docs.items())} for q, docs in judge.items()}
    gold = {q: {d: h for d, h in docs.items() if judge[q][d] != 5} for q, docs in gold.items()}
    pool, _, rows = _fitted(judge, gold)
    np.testing.assert_array_equal(rows[pool.judge == 5], np.eye(len(GRADES))[[5 - GRADE_MIN] * 30])
