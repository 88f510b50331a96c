"""Prediction-powered estimates of a run's metric (or of a difference of two runs) and their intervals.

Pair design (gold pairs sampled within judge-grade strata; a model-assisted difference estimator,
PPI with a calibrated predictor, Angelopoulos et al. 2023; Boyeau et al., arXiv 2403.07008):
  estimate = mean over queries of the metric at the model point (people's grade where known, else a
             prediction from the gold: labeller.evaluation.corrected)
           + sum over gold pairs of z_i (1/pi_i - 1) / Q,
z_i the first-order effect of the pair's residual (its human feature minus its leave-one-out
prediction) on its query's value, pi_i = n_j / N_j. Unbiased for sums (P@k, DCG) up to one term: the
ungraded pairs' prediction uses all c gold pairs of their (query, judge grade) group, the leave-one-out residuals
c - 1, and a group's sum comes out past its truth by (K - c) S (mu - p0) / ((c - 1 + S)(c + S)), S the shrinkage
(benchmarks/corrected_loo_overshoot.py; small for P@k; for NDCG on TREC DL19 it offsets part of the ratio's
remainder, benchmarks/README.md, "Stop 40"). First order for ratios of sums (NDCG, recall), exact when the gold
covers the pool (pi = 1). Pairs drawn with certainty
(plan top:K) are a stratum of their own with pi = 1: no correction, no variance. The judge-error variance
is the stratified-sample variance of z: sum_j N_j^2 (1 - n_j/N_j) s_j^2 / n_j, s_j^2 the spread of z / Q,
with a Student t quantile on the Welch-Satterthwaite degrees of freedom of that sum. NDCG's s_j^2 is at least
the spread the pool predicts for stratum j (labeller.evaluation.corrected_spread: a few random pairs mostly miss
the rare relevant pairs its ideal DCG and a poor run's DCG hang on), with no t penalty for that part.

Query design (people graded every pool pair of n random queries of Q; Oosterhuis et al., KDD 2024),
in the power-tuned form of PPI++ (Angelopoulos et al., arXiv 2311.01453), a survey regression estimator:
  estimate = mean over the n of human + lambda (mean over Q of plain - mean over the n of plain),
lambda the least-squares slope of human on plain over the n (lambda = 1 is classic PPI, 0 human only),
("plain": the judge's prediction of each query's value, at its grades, or at its grade distributions where
the labels carry them). Its judge-error variance is the regression prediction variance of the ungraded queries'
mean, (1 - n/Q) s^2 / n + (mean_Q plain - mean_S plain)^2 s^2 / Sxx (the second term the fitted slope's own
error), with a Student t quantile on n - 2 degrees; exact when the residuals are normal with one variance.
lambda falls back to 0 (the graded queries' mean, (1 - n/Q) s^2 / n, n - 1 degrees) when that interval is the
narrower: PPI++ picks lambda for the least variance, which with few queries must count the slope's error and
the degree of freedom it costs, so the corrected interval is never wider than the human-only one.
The regression's s^2 carries one pseudo-query at the widest spread of a value in [0, 1] (variance 1/4; two for hit
rate and MRR, which one pair's grade moves across all of [0, 1]): an ungraded query is more extreme than every
graded one with chance 1/(n+1) under random queries, and the judge carried to it can be wrong there as no graded
residual shows. The human-only mean's s^2 is at least that pseudo-query's alone, else people's own spread (the
textbook t interval). For hit rate and MRR the half-width is also at
least k/Q, k the most ungraded queries that could all differ from the graded ones with chance above
(1 - confidence)/2 (hypergeometric).

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
from labeller.evaluation.corrected_spread import Anticipated


@dataclass
class Contribution:
    """One run's metric (or a difference of two runs), query by query."""

    model: dict[str, float]  # at the model point (pair design)
    plain: dict[str, float]  # at the judge's grades
    human: dict[str, float] = field(default_factory=dict)  # at people's grades, queries graded whole
    influence: dict[int, float] = field(default_factory=dict)  # pool pair -> z_i
    # beside a certain stratum, what the anticipated spread needs (labeller.evaluation.corrected_spread): per query
    # d value / d count of each grade, and per random-stratum pair in the run's top positions its extra gradient
    gradient: dict[str, np.ndarray] = field(default_factory=dict)
    positioned: dict[int, np.ndarray] = field(default_factory=dict)
    remainder: dict[str, float] | None = None  # recall, NDCG under the pair design: per query (corrected_stretch)

    def minus(self, other: Contribution) -> Contribution:
        """self - other on the union of their queries, a query a side lacks scoring 0 for it."""
        queries = sorted(set(self.model) | set(other.model))
        both_human = set(self.human) | set(other.human)

        def diff(a: dict[str, float], b: dict[str, float], keys) -> dict[str, float]:
            return {q: a.get(q, 0.0) - b.get(q, 0.0) for q in keys}

        graded = [q for q in queries if q in both_human]
        # the ratio's estimated second-order remainder (corrected_stretch): the run's less the reference's, per query
        both = None not in (self.remainder, other.remainder)
        return Contribution(diff(self.model, other.model, queries), diff(self.plain, other.plain, queries),
                            {q: self.human.get(q, self._fallback(q)) - other.human.get(q, other._fallback(q))
                             for q in graded}, _minus(self.influence, other.influence),
                            _minus(self.gradient, other.gradient), _minus(self.positioned, other.positioned),
                            diff(self.remainder, other.remainder, queries) if both else None)

    def _fallback(self, q: str) -> float:
        return self.plain.get(q, 0.0)  # a query the run lacks: 0 under people's grades too


def _minus(a: dict, b: dict) -> dict:
    """a - b key by key, a key one side lacks counting 0 there (numbers or arrays)."""
    out = dict(a)
    for key, value in b.items():
        out[key] = out[key] - value if key in out else -value
    return out


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


@dataclass
class PairTerms:
    """The pair design's estimate of one run's metric (or difference) before any power tuning: its value, each
    random stratum's variance part with its degrees of freedom, every pool pair's z_i (influence / Q), the
    per-query values at the model point and the part of the variance the anticipated spreads decide."""

    value: float
    parts: list[tuple[float, float]]
    z: np.ndarray
    per_query: list[float]
    predicted: float
    anticipated: bool  # NDCG under the pair design: with the gradients the anticipated spread needs

    @property
    def variance(self) -> float:
        return max(sum(v for v, _ in self.parts), 0.0)

    def spread_source(self) -> str | None:
        return ("anticipated" if self.predicted > self.variance / 2 else "sample") if self.anticipated else None


def estimate(c: Contribution, pool: GoldPool, confidence: float, whole_range: bool = False,
             anticipated: Anticipated | None = None, blind=None) -> CorrectedValue:
    """`whole_range`: one pair's grade can move a query's value across all of [0, 1] (hit rate, MRR), which the
    query design's small-sample guard allows for;
    `anticipated`: under the pair design, NDCG's spread in each stratum is at least the one the pool predicts
    (labeller.evaluation.corrected_spread); `blind`: under the pair design, the same figure's contribution with a
    judge that knows nothing, its pool and anticipated spread (labeller.evaluation.corrected_power), which power
    tuning blends in."""
    queries = sorted(c.model)
    if not queries:
        return CorrectedValue(estimate=None, ci_low=None, ci_high=None, note="no query to average")
    if pool.design == "queries":
        return _by_queries(c, queries, confidence, whole_range)
    terms = pair_terms(c, pool, anticipated)
    if blind is not None:
        from labeller.evaluation.corrected_power import tuned

        contribution, blind_pool, blind_anticipated = blind
        return tuned(terms, pool, pair_terms(contribution, blind_pool, blind_anticipated), blind_pool, confidence)
    out = _interval(terms.value, math.sqrt(terms.variance), _spread(terms.per_query), confidence,
                    quantile=student(confidence, _satterthwaite(terms.parts)))
    out.spread = terms.spread_source()
    return out


def pair_terms(c: Contribution, pool: GoldPool, anticipated: Anticipated | None = None) -> PairTerms:
    """The pair design's stratified difference estimator and its variance parts (module docstring)."""
    queries = sorted(c.model)
    n_queries = len(queries)
    z = np.zeros(len(pool.judge))
    for i, value in c.influence.items():
        z[i] = value / n_queries
    correction = 0.0
    spreads, dfs = {}, {}
    for j, (size, graded) in pool.stratum_sizes().items():
        if graded:
            in_stratum = z[pool.in_gold & pool.stratum(j)]
            correction += float(in_stratum.sum()) * (size / graded - 1.0)
            spreads[j] = float(np.var(in_stratum, ddof=1)) if graded > 1 else None
            dfs[j] = stratum_df(in_stratum)
    known = [s for s in spreads.values() if s is not None]
    parts = []  # (variance of a grade's part, its degrees of freedom)
    predicted = 0.0  # the variance the anticipated spreads decide
    for j, (size, graded) in pool.stratum_sizes().items():
        if not graded:
            continue
        spread = spreads[j] if spreads[j] is not None else (max(known) if known else float(z[pool.in_gold &
                                                                                              pool.stratum(j)][0] ** 2))
        floor = (anticipated.total(c.gradient, c.positioned, j) / n_queries**2 / max(size - 1, 1)
                 if anticipated is not None else 0.0)
        part = size**2 * (1.0 - graded / size) * max(spread, floor) / graded
        predicted += part if floor > spread else 0.0
        # the anticipated spread is the pool's, not an estimate from the stratum's few pairs: no t penalty for it
        parts.append((part, math.inf if floor > spread else dfs[j]))
    per_query = [c.model[q] for q in queries]
    return PairTerms(float(np.mean(per_query)) + correction, parts, z, per_query, predicted,
                     anticipated is not None and bool(c.gradient or c.positioned))


def stratum_df(values: np.ndarray) -> float:
    """Degrees of freedom of a stratum's sample variance for Welch-Satterthwaite: n - 1 for normal values, fewer for
    the sparse, heavy-tailed effects of a ranking metric (most gold pairs move a run's figure by nothing, a few by
    much), from Var(s^2) / sigma^4 = 2 / (n - 1) + g2 / n, g2 the values' excess kurtosis (kept at 0 or more);
    fewer than 4 values keep n - 1 (a kurtosis needs more). On LLMJudge, 300 pairs: pooled coverage 92-93% ->
    94%, still narrower than human only (benchmarks/README.md, "small-sample")."""
    n = len(values)
    if n < 4:
        return max(n - 1, 1)
    deviations = values - values.mean()
    second = float(np.mean(deviations**2))
    if second <= 0:
        return n - 1
    excess = max(float(np.mean(deviations**4)) / second**2 - 3.0, 0.0)
    return 2.0 / (2.0 / (n - 1) + excess / n)


def _satterthwaite(parts: list[tuple[float, int]]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of stratum variances: few gold pairs in the grade that
    carries most of the variance make the interval a Student t one with few degrees, not a normal one."""
    denominator = sum(v**2 / df for v, df in parts)
    return sum(v for v, _ in parts) ** 2 / denominator if denominator > 0 else math.inf


def student(confidence: float, df: float) -> float:
    """The two-sided t quantile at `confidence` on `df` degrees of freedom (the normal's where df is unbounded)."""
    if not math.isfinite(df) or df > 1e6:
        return z_value(confidence)
    from scipy.stats import t as t_distribution

    return float(t_distribution.ppf(0.5 + confidence / 2, df=df))


def _by_queries(c: Contribution, queries: list[str], confidence: float, whole_range: bool = False) -> CorrectedValue:
    """mean_S human + lambda (mean_Q plain - mean_S plain) with lambda the slope of human on plain over the graded
    queries (PPI++ power tuning, a survey regression estimator), or lambda 0 (the graded queries' own mean) when
    that interval is the narrower one; see the module docstring and docs/evaluate.md for the variance."""
    graded = [q for q in queries if q in c.human]
    if not graded:
        return CorrectedValue(estimate=None, ci_low=None, ci_high=None,
                              note="no query of this run is among the queries people graded")
    human = np.array([c.human[q] for q in graded])
    plain = np.array([c.model[q] for q in graded])  # the judge's prediction (its grades or its distributions)
    everyone = np.array([c.model[q] for q in queries])
    n, share = len(graded), len(graded) / len(queries)
    if n < 3:
        slope = _slope(human, plain)
        value = float(human.mean() + slope * (everyone.mean() - plain.mean()))
        return CorrectedValue(estimate=value, ci_low=None, ci_high=None,
                              note=f"{n} graded queries: too few to build an interval from")
    # One pseudo-query at the largest spread a value in [0, 1] has (1/2 either side, variance 1/4) joins the
    # regression's residuals; for hit rate and MRR (one pair can move a query from 0 to 1) two: the Agresti-Coull
    # device (MRR too: on DL19 a run with 4 of 43 queries below 1 sat at 1 whenever none was graded and covered 82% at
    # 20 queries, benchmarks/README.md, stop 43). The regression carries the judge to the ungraded queries, and an
    # ungraded query is the most extreme of itself and the n graded with chance 1/(n+1), a judge error there that no
    # graded residual shows (on LLMJudge one query whose P@10 the judge put at 0 and people at 0.6 left the interval
    # at 80-88% whenever it was ungraded). People's own mean carries no judge: its spread is at least the
    # pseudo-query's alone (a floor for graded queries that happen to be alike), else the textbook t interval's. Added
    # there too, it made the corrected interval 1.1-1.6 times as wide as that textbook interval on LLMJudge at 8-20
    # graded queries, where the textbook interval covered 92-97% (benchmarks/README.md, stop 52).
    floor = 2 * 0.25 if whole_range else 0.25
    human_only = _HalfWidth(float(human.mean()), max(_squares(human), floor) / (n - 1), 0.0, n - 1)
    best = human_only
    sxx = _squares(plain)
    slope = _slope(human, plain)
    if slope:
        residual = human - slope * plain
        spread = (_squares(residual) + floor) / (n - 2)
        # the slope is fitted on the same few queries: the prediction of the ungraded queries' mean carries its
        # error, (mean_Q plain - mean_S plain)^2 s^2 / Sxx (the regression prediction variance), and one degree
        regression = _HalfWidth(float(human.mean() + slope * (everyone.mean() - plain.mean())), spread,
                                (everyone.mean() - plain.mean()) ** 2 * spread / sxx, n - 2)
        # PPI++ tunes lambda to the smaller variance; here to the narrower interval, the t quantile's degrees included
        if regression.half(share, n, confidence) < human_only.half(share, n, confidence):
            best = regression
        else:
            slope = 0.0
    shift = best.value - slope * everyone.mean()
    per_query = [c.human[q] if q in c.human else slope * c.model[q] + shift for q in queries]
    se, quantile = best.se(share, n), student(confidence, best.df)
    # one pair can move a query across [0, 1]: k ungraded queries can all differ from what the graded ones show
    # with chance C(Q-k, n) / C(Q, n) (hypergeometric); the half-width is at least the largest k/Q still above
    # (1-conf)/2, and the se is the one that width implies, so the gate's p (p_worse) agrees with the interval
    unseen = _unseen(len(queries), n, confidence) / len(queries) if whole_range else 0.0
    floored = unseen > quantile * se
    out = _interval(best.value, unseen / quantile if floored else se, _spread(per_query), confidence,
                    quantile=quantile)
    out.power_lambda = float(slope)
    out.spread = "unseen queries" if floored else None
    return out


@dataclass
class _HalfWidth:
    """One candidate of the query design: its estimate, residual variance s^2, the slope's variance part, t df."""

    value: float
    spread: float
    slope_part: float
    df: int

    def se(self, share: float, n: int) -> float:
        return math.sqrt((1.0 - share) * self.spread / n + self.slope_part)

    def half(self, share: float, n: int, confidence: float) -> float:
        return student(confidence, self.df) * self.se(share, n)


def _squares(values: np.ndarray) -> float:
    return float(np.sum((values - values.mean()) ** 2))


def _slope(human: np.ndarray, plain: np.ndarray) -> float:
    sxx = _squares(plain)
    return float(np.sum((plain - plain.mean()) * (human - human.mean())) / sxx) if len(plain) > 1 and sxx > 1e-15 \
        else 0.0


def _unseen(total: int, graded: int, confidence: float) -> int:
    """The most queries that could all lie among the ungraded ones (so no graded query shows their kind) with
    chance above (1 - confidence) / 2 under a random draw of `graded` of `total` queries."""
    k = 0
    while k < total - graded and math.comb(total - k - 1, graded) / math.comb(total, graded) > (1 - confidence) / 2:
        k += 1
    return k


def p_worse(value: CorrectedValue) -> float | None:
    """One-sided normal p of "the difference is below 0", judge error and query sample included. First order: it
    does not take a ratio's remainder stretch (corrected_stretch.stretched_up; benchmarks/README.md, "Stop 51")."""
    if value.estimate is None or value.se_judge is None or value.se_queries is None:
        return None
    se = math.hypot(value.se_judge, value.se_queries)
    if se <= 1e-15:
        return 0.0 if value.estimate < -1e-12 else 1.0
    return float(NormalDist().cdf(value.estimate / se))
