"""How well one per-query number predicts a yes/no outcome: AUC and a logistic fit, with intervals from
resampling queries (the bootstrap), all resamples at once in numpy.

AUC is the Mann-Whitney statistic with mid-ranks (ties count a half): the chance that a query whose
task succeeded has a higher value than one whose task failed. The logistic fit is
P(success) = 1 / (1 + exp(-(intercept + slope * value))), fitted by Newton's method with a small L2
penalty on the slope only (scikit-learn's LogisticRegression(C=1/PENALTY) minimises the same
objective; the tests check both against it). The penalty keeps the slope finite when the value
separates the outcomes perfectly, where the unpenalised fit has none: the fit then says `separated`.
A resample is held as counts of successes and failures at each distinct value (a hit rate has two), so
1,000 resamples of 2,000 queries fit in a few columns each rather than 2,000.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from scipy.stats import rankdata

PENALTY = 0.01  # L2 on the slope: scikit-learn's C = 100
_ITERATIONS = 100


def auc(values: np.ndarray, outcomes: np.ndarray) -> np.ndarray:
    """AUC of each row of `values` (shape (B, n), or (n,)) against the 0/1 `outcomes` of the same shape;
    NaN for a row with only one kind of outcome."""
    values, outcomes = np.atleast_2d(values), np.atleast_2d(outcomes).astype(np.float64)
    ranks = rankdata(values, axis=1)
    positives = outcomes.sum(axis=1)
    negatives = outcomes.shape[1] - positives
    with np.errstate(divide="ignore", invalid="ignore"):
        result = ((ranks * outcomes).sum(axis=1) - positives * (positives + 1) / 2) / (positives * negatives)
    return np.where((positives > 0) & (negatives > 0), result, np.nan)


def _log_likelihood(intercept: np.ndarray, slope: np.ndarray, x: np.ndarray, ok: np.ndarray, total: np.ndarray,
                    penalty: float) -> np.ndarray:
    z = intercept[:, None] + slope[:, None] * x
    return (ok * z - total * np.logaddexp(0.0, z)).sum(axis=1) - 0.5 * penalty * slope * slope


def logistic(values: np.ndarray, outcomes: np.ndarray, penalty: float = PENALTY) -> tuple[np.ndarray, np.ndarray]:
    """(intercept, slope) of each row of `values` against the 0/1 `outcomes` of the same shape."""
    y = np.atleast_2d(outcomes).astype(np.float64)
    return weighted_logistic(np.atleast_2d(values), y, 1.0 - y, penalty)


def weighted_logistic(values: np.ndarray, ok: np.ndarray, failed: np.ndarray,
                      penalty: float = PENALTY) -> tuple[np.ndarray, np.ndarray]:
    """(intercept, slope) of each row: at value x[j], ok[j] successes and failed[j] failures (counts, so a
    resample over a few distinct values is a few columns, not one per query). Newton's method on the penalised
    log-likelihood, each step halved until the likelihood does not fall (a plain Newton step can overshoot and
    diverge when one value is rare)."""
    ok, failed = np.atleast_2d(ok).astype(np.float64), np.atleast_2d(failed).astype(np.float64)
    x = np.broadcast_to(np.atleast_2d(values).astype(np.float64), ok.shape)
    total = ok + failed
    rate = np.clip(ok.sum(axis=1) / np.maximum(total.sum(axis=1), 1e-12), 1e-6, 1 - 1e-6)
    intercept, slope = np.log(rate / (1 - rate)), np.zeros(len(ok))
    current = _log_likelihood(intercept, slope, x, ok, total, penalty)
    rows = np.arange(len(ok))  # the rows still moving: a converged fit is left alone
    for _ in range(_ITERATIONS):
        xs, oks, ns, b0, b1 = x[rows], ok[rows], total[rows], intercept[rows], slope[rows]
        p = expit(b0[:, None] + b1[:, None] * xs)
        residual, w = oks - ns * p, ns * p * (1 - p)
        g0, g1 = residual.sum(axis=1), (residual * xs).sum(axis=1) - penalty * b1
        h00, h01 = w.sum(axis=1) + 1e-12, (w * xs).sum(axis=1)
        h11 = (w * xs * xs).sum(axis=1) + penalty
        det = h00 * h11 - h01 * h01
        step0, step1 = (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det
        scale = np.ones(len(rows))
        for _ in range(40):
            trial = _log_likelihood(b0 + scale * step0, b1 + scale * step1, xs, oks, ns, penalty)
            worse = trial < current[rows] - 1e-9 * (1 + np.abs(current[rows]))
            if not worse.any():
                break
            scale = np.where(worse, scale / 2, scale)
        intercept[rows], slope[rows] = b0 + scale * step0, b1 + scale * step1
        current[rows] = trial
        moving = np.abs(scale * step0) + np.abs(scale * step1) >= 1e-10
        rows = rows[moving]
        if not len(rows):
            break
    return intercept, slope


def resampled_counts(values: np.ndarray, outcomes: np.ndarray, draws: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct values ascending, successes and failures at each in each resample: shape (B, distinct))."""
    distinct, index = np.unique(values, return_inverse=True)
    width, count = len(distinct), len(draws)
    cells = (np.arange(count)[:, None] * width + index[draws])
    success = outcomes[draws] == 1
    ok = np.bincount(cells[success], minlength=count * width).reshape(count, width)
    failed = np.bincount(cells[~success], minlength=count * width).reshape(count, width)
    return distinct, ok.astype(np.float64), failed.astype(np.float64)


def counted_auc(ok: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """AUC from counts at distinct values in ascending order (what `auc` gives on the queries themselves)."""
    below = np.cumsum(failed, axis=1) - failed  # failures at lower values
    positives, negatives = ok.sum(axis=1), failed.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = (ok * (below + 0.5 * failed)).sum(axis=1) / (positives * negatives)
    return np.where((positives > 0) & (negatives > 0), result, np.nan)


def probability(intercept: float | np.ndarray, slope: float | np.ndarray, value) -> np.ndarray:
    return expit(np.asarray(intercept) + np.asarray(slope) * np.asarray(value))


def resample(n: int, count: int, seed: int) -> np.ndarray:
    """`count` bootstrap resamples of n queries: indices of shape (count, n)."""
    return np.random.default_rng(seed).integers(0, n, size=(count, n))


def interval(samples: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """The percentile interval of the finite samples (None when there are none)."""
    finite = samples[np.isfinite(samples)]
    if not len(finite):
        return None, None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def separated(values: np.ndarray, outcomes: np.ndarray) -> bool:
    """Every success has a higher value than every failure (or every one a lower): no finite MLE."""
    ok, bad = values[outcomes == 1], values[outcomes == 0]
    return bool(len(ok) and len(bad) and (ok.min() > bad.max() or ok.max() < bad.min()))
