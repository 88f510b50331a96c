"""A query's metric on many draws of people's grades at once (the per-query intervals,
labeller.evaluation.corrected_conformal). Each column of a (pool pairs x draws) grade matrix is one whole
assignment of people's grades, every pair drawn from its own distribution on its own, scored exactly as the plain
scorer scores it (checked against it in tests/test_evaluation_corrected_conformal.py). NDCG's ideal DCG and
recall's denominator hang on every pool pair of the query, hundreds on a deep pool: a sum over hundreds of pairs
drawn on their own spreads far less than all of them at their worst at once.
"""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_pool import GRADES
from labeller.evaluation.metrics import MetricSpec
from labeller.records import GRADE_MIN

DRAWS = 400  # draws of people's grades per query
SEED = 20240702


def draw_grades(dist: np.ndarray, query: str, draws: int = DRAWS) -> np.ndarray:
    """(pairs x draws) grades, pair i's from `dist[i]` (over GRADE_MIN..); seeded by the query's id, so a query
    gets the same draws whichever other queries come along."""
    rng = np.random.default_rng([SEED, *query.encode()])
    cum = np.cumsum(dist, axis=1)[:, :-1]
    u = rng.random((len(dist), draws))
    return GRADE_MIN + (u[:, :, None] >= cum[:, None, :]).sum(axis=2)


def _discounts(n: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(n, dtype=np.float64) + 2.0)


def ideal_dcg(grades: np.ndarray, gains: np.ndarray, k: int) -> np.ndarray:
    """IDCG@k (k = 0: uncut) of every draw (columns of `grades`, the query's pool pairs), from the count of each
    grade: the best grades first, as the plain scorer ranks them."""
    n = len(grades)
    cut = min(k, n) if k else n
    cum = np.concatenate(([0.0], np.cumsum(_discounts(n))))
    out = np.zeros(grades.shape[1])
    above = np.zeros(grades.shape[1], dtype=np.int64)
    for grade in GRADES[::-1]:
        count = (grades == grade).sum(axis=0)
        out += gains[grade - GRADE_MIN] * (cum[np.minimum(above + count, cut)] - cum[np.minimum(above, cut)])
        above += count
    return out


def ends(values: np.ndarray, tails: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the tails-quantiles, the (1 - tails)-quantiles) of a query's simulated values, one per level."""
    if not len(values):
        return np.zeros(len(tails)), np.zeros(len(tails))
    both = np.quantile(values, np.concatenate((tails, 1.0 - tails)))
    return both[:len(tails)], both[len(tails):]


def _at_positions(values: np.ndarray, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(positions x draws) of `values` (rows x draws) at the ranking's pool indices; an unjudged document is 0."""
    out = np.zeros((len(pos), values.shape[1]))
    if len(rows) and len(pos):
        local = np.minimum(np.searchsorted(rows, pos), len(rows) - 1)
        found = (pos >= 0) & (rows[local] == pos)
        out[found] = values[local[found]]
    return out


def query_values(spec: MetricSpec, pos: np.ndarray, rows: np.ndarray, grades: np.ndarray, length: int,
                 gains: np.ndarray, relevant_from: int) -> np.ndarray:
    """The metric on every draw, by the plain scorer's definitions (labeller.evaluation.kernels): P@k = relevant in
    the top k / k (the run's length without k); recall@k = relevant in the top k / relevant in the pool (0 without
    one); NDCG@k = DCG@k / IDCG@k (0 when IDCG is 0); RR@k and hit@k the weight (1/rank, or 1) of the first
    relevant position (0 without one). `pos`: the cut ranking's pool indices (-1 unjudged: not relevant, gain 0);
    `rows`: the query's pool indices, ascending; `grades`: their drawn grades (rows x draws); `gains`: per grade
    GRADE_MIN..; `length`: the run's length for the query."""
    if spec.kind == "ndcg":
        top = _at_positions(gains[grades - GRADE_MIN], pos, rows)
        dcg = _discounts(len(pos)) @ top if len(pos) else np.zeros(grades.shape[1])
        ideal = ideal_dcg(grades, gains, spec.k)
        return np.where(ideal > 1e-12, dcg / np.where(ideal > 1e-12, ideal, 1.0), 0.0)
    relevant = (grades >= relevant_from).astype(np.float64)
    top = _at_positions(relevant, pos, rows)
    hits = top.sum(axis=0)
    if spec.kind == "precision":
        return hits / (spec.k if spec.k else max(length, 1))
    if spec.kind == "recall":
        total = relevant.sum(axis=0)
        return np.where(total > 0, hits / np.maximum(total, 1.0), 0.0)
    if spec.kind in ("mrr", "hit_rate"):
        weights = 1.0 / (np.arange(len(pos)) + 1.0) if spec.kind == "mrr" else np.ones(len(pos))
        first = top.argmax(axis=0) if len(pos) else np.zeros(grades.shape[1], dtype=np.int64)
        return np.where(top.any(axis=0), weights[first], 0.0) if len(pos) else np.zeros(grades.shape[1])
    raise ValueError(f"no per-query interval for {spec.kind}")
