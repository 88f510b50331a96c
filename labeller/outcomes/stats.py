"""How well one per-query number predicts a yes/no outcome: AUC and a logistic fit, with intervals from
resampling queries (the bootstrap), all resamples at once in numpy.

AUC is the Mann-Whitney statistic with mid-ranks (ties count a half): the chance that a query whose
task succeeded has a higher value than one whose task failed. The logistic fit is
P(success) = 1 / (1 + exp(-(intercept + slope * value))), fitted by Newton's method with a small L2
penalty on the slope only (scikit-learn's LogisticRegression(C=1/PENALTY) minimises the same
objective; the tests check both against it). The penalty keeps the slope finite when the value
separates the outcomes perfectly, where the unpenalised fit has none: the fit then says `separated`.
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


def logistic(values: np.ndarray, outcomes: np.ndarray, penalty: float = PENALTY) -> tuple[np.ndarray, np.ndarray]:
    """(intercept, slope) of each row: Newton's method on the penalised log-likelihood."""
    x, y = np.atleast_2d(values).astype(np.float64), np.atleast_2d(outcomes).astype(np.float64)
    rate = np.clip(y.mean(axis=1), 1e-6, 1 - 1e-6)
    intercept, slope = np.log(rate / (1 - rate)), np.zeros(len(x))
    for _ in range(_ITERATIONS):
        p = expit(intercept[:, None] + slope[:, None] * x)
        w = p * (1 - p)
        g0 = (y - p).sum(axis=1)
        g1 = ((y - p) * x).sum(axis=1) - penalty * slope
        h00, h01 = w.sum(axis=1) + 1e-12, (w * x).sum(axis=1)
        h11 = (w * x * x).sum(axis=1) + penalty
        det = h00 * h11 - h01 * h01
        step0, step1 = (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det
        intercept, slope = intercept + step0, slope + step1
        if np.all(np.abs(step0) + np.abs(step1) < 1e-10):
            break
    return intercept, slope


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
