"""One query's metric as a function of each pair's grade distribution, with its gradient.

Each pool pair has a distribution over human grades (a point mass where a person graded it or, for
the plain figure, at the judge's grade; the calibrated P(human | judge grade) otherwise). From it a
pair has an expected gain (NDCG) and a probability of being relevant (every other metric), and the
query has expected counts of each grade (NDCG's ideal ranking, recall's denominator). The metric is
evaluated at those, with the definitions of labeller.evaluation.kernels (ranx's, trec_eval's):
- P@k = relevant in the top k / k (the run's length without k);
- recall@k = relevant in the top k / relevant judged, 0 without a relevant judged pair;
- NDCG@k = DCG@k / IDCG@k, IDCG from the grade counts (ideal ranking: best grades first), with the
  cumulative discount interpolated between whole positions so fractional counts are smooth;
- RR@k and hit@k: at point masses only (the query design); the pair design does not correct them.
At point masses every value is the plain metric exactly. The gradient (per top-k position for the
pair's own feature, per grade for the counts) is what a person's grade would move: the corrected
estimators weight it by the pair's residual.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labeller.evaluation.metrics import MetricSpec
from labeller.records import GRADE_MIN

SUPPORTED_KINDS = ("ndcg", "recall", "precision", "mrr", "hit_rate")


@dataclass
class Terms:
    value: float
    feature_grad: np.ndarray  # per position of the (cut) ranking
    count_grad: np.ndarray  # per grade GRADE_MIN..GRADE_MAX: d value / d expected count of that grade


def grade_gains(gain: str, grades: np.ndarray) -> np.ndarray:
    g = (grades - GRADE_MIN).astype(np.float64)
    return g if gain == "linear" else np.exp2(g) - 1.0


def _discounts(n: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(n, dtype=np.float64) + 2.0)


def _cumulative(x: float, k: int, cum: np.ndarray, disc: np.ndarray) -> tuple[float, float]:
    """(discount summed over the first x positions, its derivative), x fractional, cut at k."""
    x = min(x, float(k)) if k else x
    whole = int(np.floor(x))
    frac = x - whole
    value = cum[whole] + (frac * disc[whole] if frac else 0.0)
    slope = disc[whole] if (not k or x < k) and whole < len(disc) else 0.0
    return float(value), float(slope)


def ideal_dcg(counts: np.ndarray, gains: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    """IDCG from (expected) counts per grade, and its gradient in those counts."""
    n = int(np.ceil(counts.sum())) + 2
    disc = _discounts(n + 1)
    cum = np.concatenate(([0.0], np.cumsum(disc)))
    value, grad = 0.0, np.zeros(len(counts))
    above = 0.0  # positions taken by better grades
    slopes_low, slopes_high = np.zeros(len(counts)), np.zeros(len(counts))
    for h in range(len(counts) - 1, -1, -1):
        low, s_low = _cumulative(above, k, cum, disc)
        high, s_high = _cumulative(above + counts[h], k, cum, disc)
        value += gains[h] * (high - low)
        slopes_low[h], slopes_high[h] = s_low, s_high
        above += counts[h]
    for m in range(len(counts)):  # c_m sits in its own band and shifts every worse grade's band
        grad[m] = gains[m] * slopes_high[m] + sum(gains[h] * (slopes_high[h] - slopes_low[h]) for h in range(m))
    return value, grad


def query_terms(spec: MetricSpec, feature: np.ndarray, counts: np.ndarray, gains: np.ndarray, relevant_from: int,
                run_length: int) -> Terms:
    """`feature`: per position of the cut ranking, the pair's expected gain (NDCG) or probability of being
    relevant (0 for unjudged documents); `counts`: the query's expected pool pairs per grade."""
    k = spec.k
    zero = np.zeros(len(counts))
    if spec.kind == "ndcg":
        disc = _discounts(len(feature))
        dcg = float(feature @ disc)
        idcg, d_idcg = ideal_dcg(counts, gains, k)
        if idcg <= 1e-12:
            return Terms(0.0, np.zeros(len(feature)), zero)
        return Terms(dcg / idcg, disc / idcg, -dcg / idcg**2 * d_idcg)
    relevant = (np.arange(len(counts)) + GRADE_MIN) >= relevant_from
    total = float(counts[relevant].sum())
    hits = float(feature.sum())
    if spec.kind == "precision":
        width = k if k else max(run_length, 1)
        return Terms(hits / width, np.full(len(feature), 1.0 / width), zero)
    if spec.kind == "recall":
        if total <= 1e-12:
            return Terms(0.0, np.zeros(len(feature)), zero)
        return Terms(hits / total, np.full(len(feature), 1.0 / total), np.where(relevant, -hits / total**2, 0.0))
    if spec.kind in ("mrr", "hit_rate"):
        weights = (1.0 / (np.arange(len(feature)) + 1.0)) if spec.kind == "mrr" else np.ones(len(feature))
        return _first_relevant(feature, weights, zero)
    raise ValueError(f"no corrected estimate for {spec.kind}")


def _first_relevant(p: np.ndarray, weights: np.ndarray, zero: np.ndarray) -> Terms:
    """E[weight of the first relevant position] for independent relevance p, and its gradient in each p_i:
    S_i (w_i - T_i), S_i = prod_{j<i} (1 - p_j), T_i = sum_{k>i} w_k p_k prod_{i<j<k} (1 - p_j) (backwards:
    T_i = w_{i+1} p_{i+1} + (1 - p_{i+1}) T_{i+1}). Exact at point masses (the query design); the pair design
    leaves MRR and hit rate uncorrected (labeller.evaluation.corrected), the gradient serving its measurement."""
    if not len(p):
        return Terms(0.0, np.zeros(0), zero)
    survive = np.concatenate(([1.0], np.cumprod(1.0 - p)[:-1]))
    after = np.zeros(len(p))
    for i in range(len(p) - 2, -1, -1):
        after[i] = weights[i + 1] * p[i + 1] + (1.0 - p[i + 1]) * after[i + 1]
    return Terms(float(np.sum(weights * p * survive)), survive * (weights - after), zero)
