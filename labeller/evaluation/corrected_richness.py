"""The all-query calibration, P(human grade | judge grade), made to depend on how rich the pair's query is.

Why: under the pair design NDCG's model point predicts each ungraded pair's grade from the calibration pooled over
queries (corrected._Model). A poor query (few relevant pairs) then gets the pooled rate of relevant pairs among its
rest, and the ideal DCG, concave in a query's grade counts, came out +4-5 high on TREC DL19 for every run
(benchmarks/README.md, the ndcgrunaware bullet), which ran the near-oracle run's NDCG about 1 se low. Every pool
pair carries something that tells rich queries from poor ones without people: the share of its query's pool the
judge graded relevant (RICHNESS). The calibration's row for a pair is tilted by a log-odds shift per human grade,
linear in that share's standardised logit and pooled over judge grades, fitted to the gold by penalised maximum
likelihood (PENALTY: a normal prior on each shift): a judge whose leniency varies by query is learnt as it is.

Without enough to learn from (fewer than MIN_GOLD gold pairs, one human grade in the gold, one richness for every
query) the rows are the calibration's, as before. The calibration already counts each gold pair's own grade, and so
does the fit: a pair's leave-one-out prediction (corrected._Model) leaves it out of its own query's counts only."""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_pool import GRADES, GoldPool
from labeller.records import GRADE_MIN

MIN_GOLD = 30  # fewer gold pairs than this: the calibration's rows unchanged
PENALTY = 1.0  # 1 / the prior variance of each grade's shift (per unit of standardised richness)
NEWTON_STEPS = 25


def richness(pool: GoldPool, relevant_from: int) -> np.ndarray:
    """Each pool pair's query richness: the logit of the share of its query's pool the judge graded relevant
    (half a pair added either side), standardised over the queries; all zeros when every query has the same share."""
    queries = sorted(pool.by_query)
    relevant = np.array([np.sum(pool.judge[pool.by_query[q]] >= relevant_from) for q in queries])
    sizes = np.array([len(pool.by_query[q]) for q in queries])
    if np.ptp(relevant / sizes) == 0:  # e.g. the judge-free arm's one grade: no richness to learn from
        return np.zeros(len(pool.judge))
    share = (relevant + 0.5) / (sizes + 1.0)
    logit = np.log(share / (1.0 - share))
    spread = logit.std()
    of_query = dict(zip(queries, (logit - logit.mean()) / spread))
    return np.array([of_query[q] for q in pool.query])


def _shifted(log_base: np.ndarray, x: np.ndarray, shift: np.ndarray) -> np.ndarray:
    scores = log_base + x[:, None] * shift[None, :]
    scores -= scores.max(axis=1, keepdims=True)
    out = np.exp(scores)
    return out / out.sum(axis=1, keepdims=True)


def fitted_shift(log_base: np.ndarray, x: np.ndarray, human: np.ndarray) -> np.ndarray:
    """The per-human-grade shift (the first grade's fixed at 0) maximising the gold's penalised log-likelihood
    under P(h | pair) proportional to base[h] exp(shift[h] x): concave, so Newton's steps from 0."""
    shift = np.zeros(len(GRADES))
    free = slice(1, len(GRADES))
    for _ in range(NEWTON_STEPS):
        p = _shifted(log_base, x, shift)[:, free]
        grad = x @ (human[:, free] - p) - PENALTY * shift[free]
        # the negative Hessian: sum_i x_i^2 (diag(p_i) - p_i p_i^T) + PENALTY I
        hessian = np.einsum("i,ij,ik->jk", x**2, p, -p) + np.diag(x**2 @ p) + PENALTY * np.eye(len(GRADES) - 1)
        step = np.linalg.solve(hessian, grad)
        shift[free] += step
        if np.abs(step).max() < 1e-8:
            break
    return shift


def calibrated_rows(pool: GoldPool, calibration: np.ndarray, learn: np.ndarray, relevant_from: int,
                    pooled: bool = False) -> np.ndarray:
    """Every pool pair's P(human grade | judge grade, its query's richness): the calibration's row for its judge
    grade, shifted (fitted_shift); a row the gold never saw (one human grade) stays one grade. `pooled`, not the
    pair design, or beside a certain stratum (plan top:K; not measured there): the calibration's rows as they are
    (the tilted models, recall's and NDCG's beside a certain stratum, tilt those towards each query's own gold)."""
    base = calibration[pool.judge - GRADE_MIN]
    if pooled or pool.design != "pairs" or (len(pool.certain) and pool.certain.any()):
        return base
    x = richness(pool, relevant_from)
    humans = pool.human[learn]
    if learn.sum() < MIN_GOLD or len(np.unique(humans)) < 2 or not x.any():
        return base
    with np.errstate(divide="ignore"):
        log_base = np.log(base)
    observed = np.zeros((int(learn.sum()), len(GRADES)))
    observed[np.arange(len(humans)), humans - GRADE_MIN] = 1.0
    shift = fitted_shift(log_base[learn], x[learn], observed)
    return _shifted(log_base, x, shift)
