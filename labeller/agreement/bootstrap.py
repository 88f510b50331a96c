"""Bootstrap confidence intervals that resample queries, not pairs.

Pairs of one query share the query's difficulty and wording, so they are not independent: resampling
pairs would pretend a gold set of 20 queries x 10 pairs holds 200 independent facts and give intervals
that are too narrow. Each resample draws whole queries with replacement; a query drawn twice counts
twice. Every statistic here is a function of the judge-vs-human confusion matrix, so a resample is
just a weighted sum of per-query confusion matrices.
"""

from __future__ import annotations

import numpy as np

from labeller.records import Record


class Interval(Record):
    """A percentile bootstrap interval; None ends when the statistic was undefined in most resamples."""

    low: float | None
    high: float | None


def per_query_confusions(query_index: np.ndarray, gold: np.ndarray, judge: np.ndarray, n_queries: int,
                         n_grades: int) -> np.ndarray:
    """(Q, K, K) counts: for each query, human grade (rows) against judge grade (columns); grades 1..K."""
    out = np.zeros((n_queries, n_grades, n_grades))
    np.add.at(out, (query_index, gold - 1, judge - 1), 1)
    return out


def query_weights(n_queries: int, resamples: int, seed: int) -> np.ndarray:
    """(B, Q): how many times each query is drawn in each resample. Same seed, same draws."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_queries, np.full(n_queries, 1 / n_queries), size=resamples).astype(float)


def resample(per_query: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(B, K, K) confusion matrices of the resamples."""
    q, k, _ = per_query.shape
    return (weights @ per_query.reshape(q, k * k)).reshape(-1, k, k)


def interval(values: np.ndarray, confidence: float) -> Interval:
    """Percentile interval, ignoring resamples where the statistic is undefined (unless most are)."""
    values = np.asarray(values, dtype=float)
    defined = values[~np.isnan(values)]
    if len(values) == 0 or len(defined) < len(values) / 2:
        return Interval(low=None, high=None)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail])
    return Interval(low=float(low), high=float(high))
