"""Cohen's kappa: unweighted, linear and quadratic, and binarized at a relevance cut.

Point estimates come from scikit-learn, always passing every grade of the scale as `labels`, so a
grade nobody used still counts. The bootstrap needs thousands of kappas, so it uses
`kappa_from_confusion`, the same formula on stacks of confusion matrices (tested equal to sklearn).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

# the names used in results, and sklearn's `weights` for each
WEIGHTINGS: dict[str, str | None] = {"kappa": None, "kappa_linear": "linear", "kappa_quadratic": "quadratic"}


def cohen_kappa(gold: Sequence[int], judge: Sequence[int], grades: Sequence[int],
                weights: str | None = None) -> float | None:
    """sklearn's Cohen's kappa over the whole scale; None when undefined (both sides use one grade)."""
    from sklearn.metrics import cohen_kappa_score

    if len(gold) == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an undefined kappa comes back as NaN and is reported as None
        value = cohen_kappa_score(list(gold), list(judge), labels=list(grades), weights=weights,
                                  replace_undefined_by=np.nan)
    return None if math.isnan(value) else float(value)


def binary_kappa(gold: Sequence[int], judge: Sequence[int], relevant_from: int) -> float | None:
    """Kappa after calling every grade >= relevant_from relevant, on both sides."""
    gold_rel = [int(g >= relevant_from) for g in gold]
    judge_rel = [int(j >= relevant_from) for j in judge]
    return cohen_kappa(gold_rel, judge_rel, [0, 1])


def weight_matrix(size: int, weights: str | None) -> np.ndarray:
    i, j = np.indices((size, size))
    if weights is None:
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j).astype(float)
    return ((i - j) ** 2).astype(float)


def kappa_from_confusion(confusion: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Kappa of a (..., K, K) confusion matrix (rows one rater, columns the other); NaN when undefined."""
    confusion = np.asarray(confusion, dtype=float)
    w = weight_matrix(confusion.shape[-1], weights)
    n = confusion.sum(axis=(-2, -1))[..., None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = confusion.sum(axis=-1)[..., :, None] * confusion.sum(axis=-2)[..., None, :] / n
        disagreement = (w * expected).sum(axis=(-2, -1))
        return np.where(disagreement > 0, 1 - (w * confusion).sum(axis=(-2, -1)) / disagreement, np.nan)


def binarize_confusion(confusion: np.ndarray, cut: int) -> np.ndarray:
    """Collapse a (..., K, K) confusion matrix to (..., 2, 2): index < cut is not relevant, >= cut relevant."""
    confusion = np.asarray(confusion, dtype=float)
    rows = np.stack([confusion[..., :cut, :].sum(axis=-2), confusion[..., cut:, :].sum(axis=-2)], axis=-2)
    return np.stack([rows[..., :cut].sum(axis=-1), rows[..., cut:].sum(axis=-1)], axis=-1)
