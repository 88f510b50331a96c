"""Power tuning of the pair design (PPI++, Angelopoulos et al., arXiv 2311.01453): the corrected estimate is
lambda times the judge's estimate plus (1 - lambda) times the judge-free one from the same gold, lambda in [0, 1]
chosen per run and metric (and per difference of runs) for the narrowest interval.

- The judge's estimate (theta_J): labeller.evaluation.corrected_estimate's stratified difference estimator, the
  pool stratified by the judge's grade, each pair predicted from the judge's grade calibrated on the gold.
- The judge-free one (theta_B): the same estimator with a judge that knows nothing (one grade for every pair, so
  one random stratum and a prediction from the gold alone: its query's own gold shrunk towards all the gold), what
  "human only, same subset" is in benchmarks/corrected_coverage.py. lambda = 0 gives it exactly.

Both are, to first order, a constant plus sum over the random gold pairs of z_i / pi_i; the variance of the blend is
  V(lambda) = lambda^2 V_J + (1 - lambda)^2 V_B + 2 lambda (1 - lambda) C,
V_J and V_B each estimator's own (stratified) variance, C = sum_j N_j^2 (1 - n_j/N_j) / n_j cov_j(z_J, z_B) over the
judge strata (the post-stratified covariance: theta_J's linearised term is z_J less its stratum's mean, whose
covariance with z_B is the within-stratum one), cut to |C| <= sqrt(V_J V_B). Its degrees of freedom:
Welch-Satterthwaite over lambda^2 times theta_J's stratum parts and (1 - lambda)^2 times theta_B's (exact at both
ends). The narrowest interval's lambda minimises t(df) sqrt(V) over a grid of [0, 1] (and the unconstrained
variance minimum (V_B - C) / (V_J + V_B - 2C), clipped): from the variances alone, not from where the two estimates
sit in the metric's range (`choose`).

lambda is chosen on halves of the gold: the random gold is split in two (within each judge stratum, its pairs in a
fixed-seed random order, alternately), each half's own variance parts (its spreads s_j^2 at the whole gold's
sizes, its degrees of freedom) choose a lambda as above, and lambda is their mean; the blend and its interval
are then the whole gold's V(lambda) and degrees of freedom. Picking lambda on the very V it reports (PPI++'s
plain form) favoured the variances the sample under-states: at 300 random pairs of LLMJudge it cost 1.3-3.6 points
of coverage; a fully cross-fitted form (each half's pairs weighted by the other half's lambda, their variance
from their own spread) recovered a little more coverage but cost 6-10% of width, this one 1-2%
(benchmarks/README.md, "Lambda from the gold's halves"). The interval is no longer guaranteed within the
human-only one, only narrower on average.

theta_B is a valid estimate only when the gold is a uniform sample of the random pool (then post-stratifying on
the judge's grade is optional); a sample stratified with other shares per judge grade (`annotate sample --plan
narrow`) weighs the grades unequally and theta_B would be biased. Power tuning is therefore used only when the
gold's share of each judge grade is consistent with a uniform draw (a Pearson test of the stratum counts against
the multivariate hypergeometric, p >= UNIFORM_P); otherwise lambda is 1 and `evaluate` warns.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from labeller.evaluation.corrected_estimate import (PairTerms, _interval, _satterthwaite, _spread, student,
                                                   stratum_df)
from labeller.evaluation.corrected_pool import GRADES, GoldPool
from labeller.evaluation.corrected_results import CorrectedValue

UNIFORM_P = 0.001  # below this the gold's strata shares are taken for a deliberate (unequal) allocation
GRID = np.linspace(0.0, 1.0, 101)
SPLIT_SEED = 0  # the fixed split of the gold into two halves (cross-fitting lambda)
BLIND_GRADE = 3  # the grade the judge-free estimator gives every pair (the benchmark's blind judge)


def blind_pool(pool: GoldPool) -> GoldPool:
    """The same pool and gold with a judge that knows nothing: one grade for every pair, no distributions."""
    return replace(pool, judge=np.full_like(pool.judge, BLIND_GRADE), judge_probs=np.full((len(pool.judge), len(GRADES)), np.nan))


def uniform_p(pool: GoldPool) -> float:
    """p-value of the random gold's counts per judge grade under a uniform draw of as many pairs from the random
    pool (Pearson's statistic with the finite-population factor (N - 1) / (N - n), chi-square on strata - 1)."""
    sizes = [(size, graded) for size, graded in pool.stratum_sizes().values()]
    total, drawn = sum(s for s, _ in sizes), sum(g for _, g in sizes)
    if len(sizes) < 2 or drawn == 0 or drawn >= total:
        return 1.0
    statistic = sum((g - drawn * s / total) ** 2 / (drawn * s / total) for s, g in sizes) * (total - 1) / (total - drawn)
    from scipy.stats import chi2

    return float(chi2.sf(statistic, df=len(sizes) - 1))


def tuning_warnings(pool: GoldPool) -> list[str]:
    """Why power tuning is off for this gold, where it is (a non-uniform draw across the judge's grades)."""
    if pool.design != "pairs" or len(pool.stratum_sizes()) < 2 or pool.certain.any():
        return []
    p = uniform_p(pool)
    if p >= UNIFORM_P:
        return []
    return [f"the gold's shares of the judge's grades are not those of a uniform sample of the pool (p = {p:.1g}: "
            "a stratified plan with other shares per grade?): the human-only estimate would be biased, so the "
            "corrected figures are the judge-calibrated ones alone (no power tuning, lambda 1), and can be wider "
            "than what the gold alone says"]


def covariance(judge: PairTerms, blind: PairTerms, pool: GoldPool, keep: np.ndarray | None = None) -> float:
    """sum over the judge strata of N_j^2 (1 - n_j/N_j) / n_j times the within-stratum covariance of z_J and z_B
    (that covariance from the pairs `keep` only, if given)."""
    out = 0.0
    for j, (size, graded) in pool.stratum_sizes().items():
        rows = pool.in_gold & pool.stratum(j) & (keep if keep is not None else True)
        m = int(rows.sum())
        if m > 1:
            a, b = judge.z[rows], blind.z[rows]
            out += size**2 * (1.0 - graded / size) / graded * float(np.sum((a - a.mean()) * (b - b.mean())) / (m - 1))
    return out


def _cut(cross: float, v_judge: float, v_blind: float) -> float:
    """The covariance cut to |C| <= sqrt(V_J V_B)."""
    return max(-math.sqrt(v_judge * v_blind), min(cross, math.sqrt(v_judge * v_blind)))


def blend(lam: float, v_judge: float, v_blind: float, cross: float, judge_parts, blind_parts) -> tuple[float, float]:
    """V(lambda) and its Welch-Satterthwaite degrees of freedom (module docstring); `cross` already cut."""
    variance = max(lam**2 * v_judge + (1 - lam) ** 2 * v_blind + 2 * lam * (1 - lam) * cross, 0.0)
    return variance, _satterthwaite([(lam**2 * v, df) for v, df in judge_parts if lam > 0] +
                                    [((1 - lam) ** 2 * v, df) for v, df in blind_parts if lam < 1])


def choose(v_judge: float, v_blind: float, cross: float, judge_parts, blind_parts, confidence: float) -> float:
    """The lambda of the narrowest interval; 1 on ties (the judge's own). The width compared is the uncut one: cut to
    the metric's range (as the interval is, labeller.evaluation.corrected._within) it would depend on where the two
    estimates sit, and a lambda chosen on the estimates themselves leans, near the range's end, towards whichever
    lies closer to it: on TREC DL19 a near-oracle run's nDCG@10 at 1,200 pairs then spread 1.3-1.5 times its se
    instead of 1.0-1.2, and covered 0-7 points less (benchmarks/README.md, "Stop 41")."""
    cross = _cut(cross, v_judge, v_blind)
    bottom = v_judge + v_blind - 2 * cross
    grid = list(GRID[::-1])
    if bottom > 0:
        grid.append(min(max((v_blind - cross) / bottom, 0.0), 1.0))
    best = None
    for lam in grid:
        variance, df = blend(lam, v_judge, v_blind, cross, judge_parts, blind_parts)
        half = student(confidence, df) * math.sqrt(variance)
        if best is None or half < best[0] - 1e-15:
            best = (half, float(lam))
    return best[1]


def halves(pool: GoldPool) -> np.ndarray:
    """0 or 1 per random gold pair (-1 elsewhere): within each judge stratum the gold pairs in a fixed-seed random
    order, alternately (a deterministic split, the same for every run and metric of one gold)."""
    half = np.full(len(pool.judge), -1)
    rng = np.random.default_rng(SPLIT_SEED)
    for j in sorted(pool.stratum_sizes()):
        rows = np.flatnonzero(pool.in_gold & pool.stratum(j))
        rows = rows[rng.permutation(len(rows))]
        half[rows[0::2]], half[rows[1::2]] = 0, 1
    return half


def half_parts(z: np.ndarray, pool: GoldPool, keep: np.ndarray) -> list[tuple[float, float]]:
    """Each stratum's variance part N_j^2 (1 - n_j/N_j) s_j^2 / n_j with s_j^2 from the pairs `keep` of it only
    (an estimate of the whole gold's part from half of it), on that half's degrees of freedom; a stratum with
    fewer than two such pairs takes the largest spread of the others."""
    spreads = {}
    for j, (size, graded) in pool.stratum_sizes().items():
        rows = pool.in_gold & pool.stratum(j) & keep
        if graded:
            spreads[j] = (float(np.var(z[rows], ddof=1)) if rows.sum() > 1 else None, stratum_df(z[rows]))
    known = [s for s, _ in spreads.values() if s is not None] or [0.0]
    return [(size**2 * (1.0 - graded / size) * (spreads[j][0] if spreads[j][0] is not None else max(known)) / graded,
             spreads[j][1]) for j, (size, graded) in pool.stratum_sizes().items() if graded]


def tuned(judge: PairTerms, pool: GoldPool, blind: PairTerms, free: GoldPool, confidence: float) -> CorrectedValue:
    """The power-tuned pair-design estimate and interval, lambda from the gold's halves (module docstring); `free`
    the judge-free pool (blind_pool) `blind` was computed on. Only where all the gold is random: beside a certain
    stratum tuning is off (labeller.evaluation.corrected._Blind)."""
    half = halves(pool)
    lams = []
    for h in (0, 1):
        keep = half == h
        pj, pb = half_parts(judge.z, pool, keep), half_parts(blind.z, free, keep)
        lams.append(choose(sum(v for v, _ in pj), sum(v for v, _ in pb), covariance(judge, blind, pool, keep),
                           pj, pb, confidence))
    lam = sum(lams) / 2
    cross = _cut(covariance(judge, blind, pool), judge.variance, blind.variance)
    variance, df = blend(lam, judge.variance, blind.variance, cross, judge.parts, blind.parts)
    per_query = [lam * a + (1 - lam) * b for a, b in zip(judge.per_query, blind.per_query)]
    out = _interval(lam * judge.value + (1 - lam) * blind.value, math.sqrt(variance), _spread(per_query), confidence,
                    quantile=student(confidence, df))
    out.power_lambda = lam if judge.variance > 0 or blind.variance > 0 else None  # None: the gold decides it
    if judge.anticipated or blind.anticipated:  # NDCG (corrected_spread): which spread decided the blend's variance
        out.spread = "anticipated" if lam**2 * judge.predicted + (1 - lam)**2 * blind.predicted > variance / 2 \
            else "sample"
    return out
