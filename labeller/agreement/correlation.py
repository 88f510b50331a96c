"""Rank correlations and simple agreement rates between judge and human grades.

Point estimates of Spearman and Kendall (tau-b) come from scipy. The bootstrap computes them from
stacks of confusion matrices instead: with tied grades both depend only on the joint grade counts,
so `*_from_confusion` gives the same numbers (tested against scipy) thousands of times faster.
Confusion matrices have the human grade on rows and the judge grade on columns.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np


def _none_if_nan(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def spearman(gold: Sequence[int], judge: Sequence[int]) -> float | None:
    from scipy.stats import spearmanr

    if len(gold) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant side gives NaN, reported as None
        return _none_if_nan(spearmanr(gold, judge).statistic)


def kendall(gold: Sequence[int], judge: Sequence[int]) -> float | None:
    from scipy.stats import kendalltau

    if len(gold) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _none_if_nan(kendalltau(gold, judge).statistic)


def _midranks(counts: np.ndarray) -> np.ndarray:
    """Average rank of each grade given how often each grade occurs (ties share their mean rank)."""
    before = np.cumsum(counts, axis=-1) - counts
    return before + (counts + 1) / 2


def spearman_from_confusion(confusion: np.ndarray) -> np.ndarray:
    c = np.asarray(confusion, dtype=float)
    rows, cols = c.sum(axis=-1), c.sum(axis=-2)
    n = rows.sum(axis=-1)[..., None]
    rank_r, rank_c = _midranks(rows), _midranks(cols)
    dev_r = rank_r - (rows * rank_r).sum(axis=-1)[..., None] / n
    dev_c = rank_c - (cols * rank_c).sum(axis=-1)[..., None] / n
    cov = (c * dev_r[..., :, None] * dev_c[..., None, :]).sum(axis=(-2, -1))
    var = (rows * dev_r**2).sum(axis=-1) * (cols * dev_c**2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var > 0, cov / np.sqrt(var), np.nan)


def kendall_from_confusion(confusion: np.ndarray) -> np.ndarray:
    """Kendall's tau-b from the joint grade counts: (concordant - discordant) over the tie-corrected total."""
    c = np.asarray(confusion, dtype=float)
    # below_right[i, j]: pairs with a higher grade on both sides; below_left: higher human, lower judge
    suffix = np.flip(np.cumsum(np.cumsum(np.flip(c, (-2, -1)), axis=-2), axis=-1), (-2, -1))
    below_right = np.zeros_like(c)
    below_right[..., :-1, :-1] = suffix[..., 1:, 1:]
    lower_rows = np.flip(np.cumsum(np.flip(c, -2), axis=-2), -2)  # sum over rows k >= i
    left = np.cumsum(lower_rows, axis=-1)  # sum over rows k >= i, columns l <= j
    below_left = np.zeros_like(c)
    below_left[..., :-1, 1:] = left[..., 1:, :-1]
    concordant = (c * below_right).sum(axis=(-2, -1))
    discordant = (c * below_left).sum(axis=(-2, -1))
    rows, cols = c.sum(axis=-1), c.sum(axis=-2)
    n = rows.sum(axis=-1)
    pairs = n * (n - 1) / 2
    untied = (pairs - (rows * (rows - 1) / 2).sum(axis=-1)) * (pairs - (cols * (cols - 1) / 2).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(untied > 0, (concordant - discordant) / np.sqrt(untied), np.nan)


def _offsets(size: int) -> np.ndarray:
    i, j = np.indices((size, size))
    return j - i  # judge grade minus human grade


def exact_agreement(confusion: np.ndarray) -> np.ndarray:
    c = np.asarray(confusion, dtype=float)
    return np.trace(c, axis1=-2, axis2=-1) / c.sum(axis=(-2, -1))


def within_one(confusion: np.ndarray) -> np.ndarray:
    c = np.asarray(confusion, dtype=float)
    close = np.abs(_offsets(c.shape[-1])) <= 1
    return (c * close).sum(axis=(-2, -1)) / c.sum(axis=(-2, -1))


def mean_signed_difference(confusion: np.ndarray) -> np.ndarray:
    """Judge minus human, in grades, on average: positive means the judge is more generous."""
    c = np.asarray(confusion, dtype=float)
    return (c * _offsets(c.shape[-1])).sum(axis=(-2, -1)) / c.sum(axis=(-2, -1))
