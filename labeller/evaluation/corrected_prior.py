"""NDCG's base prediction under the pair design (labeller.evaluation.corrected._Model): P(human | judge grade) with a
per-query prior learned from the query's own judge labels, in place of the calibration pooled over all queries.

Why: the ideal DCG is concave in a query's grade counts, and with the rest of a poor query (few relevant pairs)
predicted from the calibration of all queries, it gets several relevant pairs it does not have: on TREC DL19 with
simulated judges the model point's ideal DCG@10 ran +4-5 above the truth for every run and the near-oracle run's
exponential nDCG@10 about 1 se low (benchmarks/README.md, the run-aware bullet). If the judge errs pair by pair
with one confusion P(judge grade | human grade), Bayes gives P(h | j, q) ∝ P(j | h) π_q(h): a rich query's judge
grade 3 is more often truly relevant than a poor query's. Each query has hundreds of judge-labelled pairs, so its
prior π_q is estimated from its judge-grade histogram by EM (a deconvolution), without its few gold pairs' grades.
"""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_pool import GoldPool
from labeller.records import GRADE_MIN

PRIOR_SHRINK = 20.0  # pseudo-pairs of the all-query prior in each query's own
ITERATIONS = 500  # at most: EM stops when no share moves by 1e-9 (near a share of 0 it is slow)


def confusion(pool: GoldPool, calibration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(judge grade | human grade) (rows judge, columns human; each column sums to 1, or 0 for a human grade no
    gold pair has) and the all-query prior P(human grade), from the stratified gold: the joint is N_j times the share
    of each human grade among stratum j's gold (`calibration`'s row j)."""
    joint = np.zeros_like(calibration)
    for j, (size, _) in pool.stratum_sizes().items():
        joint[j - GRADE_MIN] = size * calibration[j - GRADE_MIN]
    column = joint.sum(axis=0)
    return (np.divide(joint, column, out=np.zeros_like(joint), where=column > 0),
            column / column.sum() if column.sum() > 0 else column)


def em_prior(likelihood: np.ndarray, start: np.ndarray, iterations: int = ITERATIONS) -> np.ndarray:
    """A query's P(human grade) from its pairs' likelihoods P(judge grade_i | h) (rows pairs): EM, each step the
    mean over the pairs of the posterior P(h | judge grade_i) ∝ P(judge grade_i | h) π(h), from `start`."""
    prior = start.copy()
    for _ in range(iterations):
        post = likelihood * prior
        total = post.sum(axis=1, keepdims=True)
        step = np.divide(post, total, out=np.zeros_like(post), where=total > 0).mean(axis=0)
        step = step / step.sum() if step.sum() > 0 else start
        moved, prior = np.abs(step - prior).max(), step
        if moved < 1e-9:
            break
    return prior


def query_prior(pool: GoldPool, calibration: np.ndarray, shrink: float = PRIOR_SHRINK) -> np.ndarray:
    """Each pool pair's P(human | its judge grade, its query) ∝ P(judge grade | h) π_q(h), π_q the query's EM prior
    shrunk towards the all-query one by `shrink` pseudo-pairs. At π_q = the all-query prior it is `calibration`'s
    row. Under the query design, or beside a certain stratum (whose strata do not cover the pool), the calibration."""
    base = calibration[pool.judge - GRADE_MIN]
    if pool.design != "pairs" or (len(pool.certain) and pool.certain.any()):
        return base
    given, overall = confusion(pool, calibration)
    likelihood = given[pool.judge - GRADE_MIN]
    out = base.copy()
    for rows in pool.by_query.values():
        own = em_prior(likelihood[rows], overall)
        prior = (len(rows) * own + shrink * overall) / (len(rows) + shrink)
        joint = likelihood[rows] * prior
        total = joint.sum(axis=1, keepdims=True)
        out[rows] = np.where(total > 0, joint / np.where(total > 0, total, 1.0), base[rows])
    return out
