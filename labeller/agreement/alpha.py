"""Krippendorff's alpha with the ordinal metric, in numpy.

The `krippendorff` package on PyPI is GPL, so labeller computes alpha itself and the tests cross-check
it against that package. Alpha is built from the coincidence matrix o[c, k]: how often grades c and k
are paired within a unit (a query-document pair), each unit weighted 1/(m_u - 1) for m_u grades.
The ordinal distance between grades c <= k is (n_c + ... + n_k - (n_c + n_k) / 2)^2, where n_g is how
often grade g was given: grades far apart in rank (given how often grades in between are used) are
far apart in distance.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def coincidences(data: np.ndarray, values: Sequence[int]) -> np.ndarray:
    """The K x K coincidence matrix of reliability data: units x coders, NaN where a coder gave no grade."""
    data = np.asarray(data, dtype=float)
    counts = np.stack([(data == v).sum(axis=1) for v in values], axis=1).astype(float)  # units x K
    per_unit = counts.sum(axis=1)
    pairable = per_unit >= 2  # a unit with one grade has nothing to agree with
    counts, per_unit = counts[pairable], per_unit[pairable]
    scaled = counts / (per_unit - 1)[:, None]
    return scaled.T @ counts - np.diag(scaled.sum(axis=0))


def ordinal_distances(totals: np.ndarray) -> np.ndarray:
    """Squared ordinal distances (..., K, K) from grade totals n_g (..., K)."""
    k = totals.shape[-1]
    i, j = np.indices((k, k))
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    cum = np.cumsum(totals, axis=-1)
    between = cum[..., hi] - cum[..., lo] + totals[..., lo]  # n_lo + ... + n_hi
    return (between - (totals[..., :, None] + totals[..., None, :]) / 2) ** 2


def alpha_from_coincidences(o: np.ndarray) -> np.ndarray:
    """Ordinal alpha for one coincidence matrix (K, K) or a stack (B, K, K); NaN when undefined."""
    o = np.asarray(o, dtype=float)
    totals = o.sum(axis=-1)
    n = totals.sum(axis=-1)
    delta = ordinal_distances(totals)
    observed = (o * delta).sum(axis=(-2, -1))
    expected = (totals[..., :, None] * totals[..., None, :] * delta).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)


def alpha_from_confusion(confusion: np.ndarray) -> np.ndarray:
    """Ordinal alpha of two coders who both graded every unit, from their (..., K, K) confusion matrix."""
    confusion = np.asarray(confusion, dtype=float)
    return alpha_from_coincidences(confusion + np.swapaxes(confusion, -1, -2))


def ordinal_alpha(data: np.ndarray, values: Sequence[int]) -> float | None:
    """Ordinal Krippendorff's alpha of units x coders data (NaN = missing); None when undefined."""
    value = float(alpha_from_coincidences(coincidences(data, values)))
    return None if np.isnan(value) else value
