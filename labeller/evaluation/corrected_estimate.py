"""Prediction-powered estimates of a run's metric (or of a difference of two runs) and their intervals.

Pair design (gold pairs sampled within judge-grade strata; a model-assisted difference estimator,
PPI with a calibrated predictor, Angelopoulos et al. 2023; Boyeau et al., arXiv 2403.07008):
  estimate = mean over queries of the metric at the model point (people's grade where known, else a
             prediction from the gold: labeller.evaluation.corrected)
           + sum over gold pairs of z_i (1/pi_i - 1) / Q,
z_i the first-order effect of the pair's residual (its human feature minus its leave-one-out
prediction) on its query's value, pi_i = n_j / N_j. Unbiased for sums (P@k, DCG), first order for
ratios of sums (NDCG, recall), exact when the gold covers the pool (pi = 1). Pairs drawn with certainty
(plan top:K) are a stratum of their own with pi = 1: no correction, no variance. The judge-error variance
is the stratified-sample variance of z: sum_j N_j^2 (1 - n_j/N_j) s_j^2 / n_j, s_j^2 the spread of z / Q,
with a Student t quantile on the Welch-Satterthwaite degrees of freedom of that sum.

Query design (people graded every pool pair of n random queries of Q; Oosterhuis et al., KDD 2024),
in the power-tuned form of PPI++ (Angelopoulos et al., arXiv 2311.01453), a survey regression estimator:
  estimate = mean over the n of human + lambda (mean over Q of plain - mean over the n of plain),
lambda the least-squares slope of human on plain over the n (lambda = 1 is classic PPI, 0 human only),
("plain": the judge's prediction of each query's value, at its grades, or at its grade distributions where
the labels carry them), with judge-error variance (1 - n/Q) s^2 / n + (mean_Q plain - mean_S plain)^2 s^2 / Sxx
(the second term the fitted slope's own error), s^2 the spread of the residuals human - lambda plain with one
pseudo-query carrying the spread of the judge's per-query values over all Q (so eight graded queries that happen
to agree do not claim no spread; for hit rate, 0 or 1 per query, two more at +-1/2), and a Student t quantile on
n - 2 degrees of freedom.

Both add the query-sample variance (spread of the per-query values / sqrt(Q)) for the wider interval.
Intervals are normal approximations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from labeller.evaluation.corrected_pool import GoldPool
from labeller.evaluation.corrected_results import CorrectedValue


@dataclass
class Contribution:
    """One run's metric (or a difference of two runs), query by query."""

    model: dict[str, float]  # at the model point (pair design)
    plain: dict[str, float]  # at the judge's grades
    human: dict[str, float] = field(default_factory=dict)  # at people's grades, queries graded whole
    influence: dict[int, float] = field(default_factory=dict)  # pool pair -> z_i

    def minus(self, other: Contribution) -> Contribution:
        """self - other on the union of their queries, a query a side lacks scoring 0 for it."""
        queries = sorted(set(self.model) | set(other.model))
        both_human = set(self.human) | set(other.human)

        def diff(a: dict[str, float], b: dict[str, float], keys) -> dict[str, float]:
            return {q: a.get(q, 0.0) - b.get(q, 0.0) for q in keys}

        influence = dict(self.influence)
        for i, z in other.influence.items():
            influence[i] = influence.get(i, 0.0) - z
        graded = [q for q in queries if q in both_human]
        return Contribution(diff(self.model, other.model, queries), diff(self.plain, other.plain, queries),
                            {q: self.human.get(q, self._fallback(q)) - other.human.get(q, other._fallback(q))
                             for q in graded}, influence)

    def _fallback(self, q: str) -> float:
        return self.plain.get(q, 0.0)  # a query the run lacks: 0 under people's grades too


def z_value(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _interval(estimate: float, se_judge: float, se_queries: float, confidence: float,
              note: str | None = None, quantile: float | None = None) -> CorrectedValue:
    z = quantile if quantile is not None else z_value(confidence)
    total = math.sqrt(se_judge**2 + se_queries**2)
    return CorrectedValue(estimate=estimate, ci_low=estimate - z * se_judge, ci_high=estimate + z * se_judge,
                          ci_low_queries=estimate - z * total, ci_high_queries=estimate + z * total,
                          se_judge=se_judge, se_queries=se_queries, note=note)


def _spread(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0


def estimate(c: Contribution, pool: GoldPool, confidence: float, zero_one: bool = False) -> CorrectedValue:
    """`zero_one`: every query's value is 0 or 1 (hit rate), which the query design's variance allows for."""
    queries = sorted(c.model)
    if not queries:
        return CorrectedValue(estimate=None, ci_low=None, ci_high=None, note="no query to average")
    if pool.design == "queries":
        return _by_queries(c, queries, confidence, zero_one)
    n_queries = len(queries)
    z = np.zeros(len(pool.judge))
    for i, value in c.influence.items():
        z[i] = value / n_queries
    variance, note = 0.0, None
    correction = 0.0
    spreads = {}
    for j, (size, graded) in pool.stratum_sizes().items():
        if graded:
            in_stratum = z[pool.in_gold & pool.stratum(j)]
            correction += float(in_stratum.sum()) * (size / graded - 1.0)
            spreads[j] = float(np.var(in_stratum, ddof=1)) if graded > 1 else None
    known = [s for s in spreads.values() if s is not None]
    parts = []  # (variance of a grade's part, its degrees of freedom)
    for j, (size, graded) in pool.stratum_sizes().items():
        if not graded:
            continue
        spread = spreads[j] if spreads[j] is not None else (max(known) if known else float(z[pool.in_gold &
                                                                                              pool.stratum(j)][0] ** 2))
        parts.append((size**2 * (1.0 - graded / size) * spread / graded, max(graded - 1, 1)))
    variance = sum(v for v, _ in parts)
    value = float(np.mean([c.model[q] for q in queries])) + correction
    return _interval(value, math.sqrt(max(variance, 0.0)), _spread([c.model[q] for q in queries]), confidence,
                     note, quantile=_student(confidence, _satterthwaite(parts)))


def _satterthwaite(parts: list[tuple[float, int]]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of stratum variances: few gold pairs in the grade that
    carries most of the variance make the interval a Student t one with few degrees, not a normal one."""
    denominator = sum(v**2 / df for v, df in parts)
    return sum(v for v, _ in parts) ** 2 / denominator if denominator > 0 else math.inf


def _student(confidence: float, df: float) -> float:
    if not math.isfinite(df) or df > 1e6:
        return z_value(confidence)
    from scipy.stats import t as student

    return float(student.ppf(0.5 + confidence / 2, df=df))


def _by_queries(c: Contribution, queries: list[str], confidence: float, zero_one: bool = False) -> CorrectedValue:
    """The regression (power-tuned, PPI++) form: mean_S human + lambda (mean_Q plain - mean_S plain), lambda
    the slope of human on plain over the graded queries, so a judge whose per-query figures track people's
    poorly is leaned on less (lambda 0 is the human-only estimate); a Student t quantile on n - 1 degrees."""
    graded = [q for q in queries if q in c.human]
    if not graded:
        return CorrectedValue(estimate=None, ci_low=None, ci_high=None,
                              note="no query of this run is among the queries people graded")
    human = np.array([c.human[q] for q in graded])
    plain = np.array([c.model[q] for q in graded])  # the judge's prediction (its grades or its distributions)
    everyone = np.array([c.model[q] for q in queries])
    slope = 0.0
    if len(graded) > 1 and plain.var(ddof=1) > 1e-15:
        slope = float(np.cov(human, plain, ddof=1)[0, 1] / plain.var(ddof=1))
    value = float(human.mean() + slope * (everyone.mean() - plain.mean()))
    shift = float(human.mean() - slope * plain.mean())
    per_query = [c.human[q] if q in c.human else slope * c.model[q] + shift for q in queries]
    if len(graded) < 3:
        return CorrectedValue(estimate=value, ci_low=None, ci_high=None,
                              note=f"{len(graded)} graded queries: too few to build an interval from")
    residual = human - slope * plain
    # One pseudo-query with the spread of the judge's per-query values over all queries joins the residuals:
    # a few graded queries that happen to agree (hit rate 1 on all eight) must not claim no spread at all.
    prior = float(everyone.var(ddof=1)) if len(everyone) > 1 else 0.0
    # A 0/1 value (hit rate) near 0 or 1 on a few graded queries shows almost no spread where a query of the
    # other value may still come: two pseudo-queries, one each side of the residuals' mean by 1/2 (the largest
    # spread a 0/1 value has), as the Agresti-Coull interval adds pseudo-observations to a proportion.
    floor = 2 * 0.25 if zero_one else 0.0
    spread = (float(np.sum((residual - residual.mean()) ** 2)) + prior + floor) / (len(graded) - 1)
    # The slope is estimated from the same few queries: the prediction of the ungraded queries' mean carries its
    # error too, (mean_Q plain - mean_S plain)^2 s^2 / Sxx (the regression prediction variance; with 8 graded
    # queries leaving it out covered P@10 of a BM25 run 80% of the time on LLMJudge).
    sxx = float(np.sum((plain - plain.mean()) ** 2))
    slope_part = (everyone.mean() - plain.mean()) ** 2 * spread / sxx if slope and sxx > 1e-15 else 0.0
    se = math.sqrt((1.0 - len(graded) / len(queries)) * spread / len(graded) + slope_part)
    return _interval(value, se, _spread(per_query), confidence, quantile=_student(confidence, len(graded) - 2))


def p_worse(value: CorrectedValue) -> float | None:
    """One-sided normal p of "the difference is below 0", judge error and query sample included."""
    if value.estimate is None or value.se_judge is None or value.se_queries is None:
        return None
    se = math.hypot(value.se_judge, value.se_queries)
    if se <= 1e-15:
        return 0.0 if value.estimate < -1e-12 else 1.0
    return float(NormalDist().cdf(value.estimate / se))
