"""Per-probe figures: mean grade shift, share changed, and a query-resampled bootstrap interval.

Pairs of one query share its wording and difficulty, so the interval resamples whole queries (a
cluster bootstrap, as in labeller.agreement.bootstrap): each resample draws queries with replacement,
and its mean is the pair-weighted mean of the shifts of the pairs of the drawn queries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from labeller.agreement.bootstrap import Interval, interval, query_weights


def mean_and_interval(query_ids: Sequence[str], values: Sequence[float], *, resamples: int, seed: int,
                      confidence: float) -> tuple[float | None, Interval]:
    """The mean of `values` and its cluster-bootstrap interval over the queries in `query_ids`."""
    if not values:
        return None, Interval(low=None, high=None)
    order = {q: i for i, q in enumerate(sorted(set(query_ids)))}
    index = np.array([order[q] for q in query_ids])
    sums = np.bincount(index, weights=np.asarray(values, dtype=float), minlength=len(order))
    counts = np.bincount(index, minlength=len(order)).astype(float)
    weights = query_weights(len(order), resamples, seed)
    means = (weights @ sums) / (weights @ counts)  # every query has a pair, so no resample is empty
    return float(sums.sum() / counts.sum()), interval(means, confidence)
