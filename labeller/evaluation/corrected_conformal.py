"""Per-query intervals by conformal risk control (Oosterhuis et al., KDD 2024, arXiv 2407.02464; Angelopoulos,
Bates, Fisch, Lei, Schuster, "Conformal risk control", arXiv 2208.02814).

Each pool pair has a distribution over people's grades predicted from the judge: its `--grade-probs`
distribution where the label row has one, else P(human grade | judge grade) from the gold pairs (PRIOR
pseudo-pairs of a distribution peaked at the judge's grade), every grade kept possible (FLOOR). At a level s a
pair's plausible grades run from the distribution's s-quantile to its (1 - s)-quantile (grade g spread evenly over
[g - 1/2, g + 1/2], so the ends move smoothly; s = 0: every grade), the way the paper perturbs the predicted label
distributions: a pair the judge is unsure of gets a wider span. A query's interval at level s is [the metric with
the ranking's pairs at their low ends and the rest of the pool at their high ends, the metric the other way round]
(gains, or relevance as a ramp between grades, at those fractional grades). Every metric here rises with its
ranking's pairs and falls with the other pairs (NDCG as DCG over an ideal DCG sorted from every pool pair's gain;
recall as the ranking's hits over hits plus the rest), so every value the metric takes with each pair's grade
inside its span lies in the interval, and at s = 0 the interval holds every value the metric can take.

Calibration: the queries people graded whole (every pool pair), whose value under people's grades is known.
For a target coverage 1 - a over n of them, the level is the largest on the grid at which
(misses among the n + 1) / (n + 1) <= a, the conformal risk control bound for the 0/1 loss "the value is outside
the interval" (s = 0 when none qualifies: with n < 1/a - 1 graded queries only the whole range is guaranteed).
Then for a new query exchangeable with the graded ones (the graded queries a random sample of the judged ones),
P(its value under people's grades is inside its interval) >= 1 - a, over the draw of the graded queries and the
query: a marginal guarantee over queries, not one for each query. One level per run and metric. A judge that
errs more, or a gold too small for the target, gives wider intervals, never narrower ones. (P(human | judge
grade) is fitted on the same gold: a small departure from exchangeability, 20 numbers against n queries.)
"""

from __future__ import annotations

import math

import numpy as np

from labeller.evaluation.corrected_pool import GRADES, GoldPool
from labeller.evaluation.corrected_results import PerQueryIntervals
from labeller.evaluation.metrics import MetricSpec
from labeller.records import GRADE_MIN

LEVELS = np.concatenate((np.geomspace(0.5, 1e-4, 80), [0.0]))  # tail mass left out of each pair's grades
FLOOR = 1e-5  # every grade keeps this much probability
PEAK = math.log(8.0)  # prior of a judge grade: each grade step away is 8 times less likely
PRIOR = 2.0  # pseudo-pairs of that prior in the gold's P(human | judge grade)


def judge_distributions(pool: GoldPool) -> np.ndarray:
    """Per pool pair and grade, the probability the judge's output gives people's grade: its `--grade-probs`
    distribution where given, else P(human grade | judge grade) from the gold pairs (with PRIOR pseudo-pairs
    of a distribution peaked at the judge's grade)."""
    peaked = np.exp(-PEAK * np.abs(GRADES[None, :] - GRADES[:, None]))
    peaked /= peaked.sum(axis=1, keepdims=True)
    table = np.zeros((len(GRADES), len(GRADES)))
    for j in GRADES:
        humans = pool.human[pool.in_gold & (pool.judge == j)]
        counts = np.bincount(humans - GRADE_MIN, minlength=len(GRADES)) if len(humans) else np.zeros(len(GRADES))
        table[j - GRADE_MIN] = (counts + PRIOR * peaked[j - GRADE_MIN]) / (len(humans) + PRIOR)
    dist = table[pool.judge - GRADE_MIN]
    given = ~np.isnan(pool.judge_probs[:, 0]) if len(pool.judge_probs) else np.zeros(len(pool.judge), bool)
    dist[given] = pool.judge_probs[given]
    return dist / dist.sum(axis=1, keepdims=True) * (1 - FLOOR * len(GRADES)) + FLOOR


class GradeSets:
    """At every level s (LEVELS, narrowest first), each pool pair's plausible grades: from its distribution's
    s-quantile to its (1 - s)-quantile, grade g spread evenly over [g - 1/2, g + 1/2] so the ends move smoothly
    (s = 0: every grade). `high`/`low` hold `feature(grade)` (a gain, or the relevance ramp, at fractional grades)
    at the upper and lower end (arrays pairs x levels)."""

    def __init__(self, dist: np.ndarray, feature):
        cum = np.concatenate((np.zeros((len(dist), 1)), np.cumsum(dist, axis=1)), axis=1)
        cum[:, -1] = 1.0
        self.low = feature(self._quantile(cum, LEVELS))
        self.high = feature(self._quantile(cum, 1.0 - LEVELS))

    @staticmethod
    def _quantile(cum: np.ndarray, u: np.ndarray) -> np.ndarray:
        grades = len(GRADES)
        at = np.clip((cum[:, None, 1:] < u[None, :, None]).sum(axis=2), 0, grades - 1)  # the grade holding u
        below = np.take_along_axis(cum, at, axis=1)
        mass = np.take_along_axis(cum, at + 1, axis=1) - below
        inside = np.clip((u[None, :] - below) / np.where(mass > 0, mass, 1.0), 0.0, 1.0)
        return np.clip(GRADES[0] + at - 0.5 + inside, GRADES[0], GRADES[-1])


def _at(values: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Rows of `values` at the ranking's pool positions; an unjudged document (-1) counts 0 at every level."""
    out = values[np.maximum(pos, 0)]
    out[pos < 0] = 0.0
    return out


def _ideal(gains: np.ndarray, k: int) -> np.ndarray:
    ordered = -np.sort(-gains, axis=0)
    ordered = ordered[:k] if k else ordered
    return _discounts(len(ordered)) @ ordered


def _discounts(n: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(n, dtype=np.float64) + 2.0)


def _ratio(top: np.ndarray, bottom: np.ndarray, empty: float) -> np.ndarray:
    safe = np.where(bottom > 1e-12, bottom, 1.0)
    return np.where(bottom > 1e-12, np.minimum(top / safe, 1.0), empty)


def _first_relevant(p: np.ndarray, weights: np.ndarray) -> np.ndarray:
    survive = np.cumprod(1.0 - p, axis=0)
    survive = np.vstack([np.ones((1, p.shape[1])), survive[:-1]]) if len(p) else survive
    return weights @ (p * survive)


def bounds(spec: MetricSpec, pos: np.ndarray, rows: np.ndarray, length: int, sets: GradeSets) -> tuple:
    """(low, high) of one query's metric at every level. `pos`: the cut ranking's pool indices (-1 unjudged);
    `rows`: the query's pool pairs."""
    top_hi, top_lo = _at(sets.high, pos), _at(sets.low, pos)
    if spec.kind == "ndcg":
        disc = _discounts(len(pos))
        return (_ratio(disc @ top_lo, _ideal(sets.high[rows], spec.k), 0.0),
                _ratio(disc @ top_hi, _ideal(sets.low[rows], spec.k), 1.0))
    if spec.kind == "precision":
        width = spec.k if spec.k else max(length, 1)
        return top_lo.sum(axis=0) / width, top_hi.sum(axis=0) / width
    if spec.kind == "recall":
        rest = np.setdiff1d(rows, pos[pos >= 0])
        hits_lo, hits_hi = top_lo.sum(axis=0), top_hi.sum(axis=0)
        return (_ratio(hits_lo, hits_lo + sets.high[rest].sum(axis=0), 0.0),
                _ratio(hits_hi, hits_hi + sets.low[rest].sum(axis=0), 1.0))
    weights = 1.0 / (np.arange(len(pos)) + 1.0) if spec.kind == "mrr" else np.ones(len(pos))
    return _first_relevant(top_lo, weights), _first_relevant(top_hi, weights)


def calibrate(low: np.ndarray, high: np.ndarray, truth: np.ndarray, coverage: float) -> int:
    """The index of the narrowest level whose conformal risk bound is within 1 - coverage: (misses + 1) / (n + 1)
    <= alpha, the misses among the n calibration queries (rows of low/high, truth). The last level (every grade)
    holds every value, so it is the answer when nothing narrower qualifies."""
    alpha = 1.0 - coverage
    misses = ((truth[:, None] < low - 1e-12) | (truth[:, None] > high + 1e-12)).sum(axis=0)
    ok = np.flatnonzero((misses + 1) / (len(truth) + 1) <= alpha + 1e-12)
    return int(ok[0]) if len(ok) else len(LEVELS) - 1


def per_query_intervals(run: str, spec: MetricSpec, queries: list[str], positions: dict[str, tuple[np.ndarray, int]],
                        pool: GoldPool, sets: GradeSets, truth: dict[str, float], coverage: float) -> PerQueryIntervals:
    """One run's per-query intervals on one metric; `truth`: people's value of each query graded whole."""
    calibration = [q for q in queries if q in truth]
    if not calibration:
        return PerQueryIntervals(run=run, metric=spec.name, target_coverage=coverage, calibration_queries=0, level=None,
                                 graded={}, intervals={}, note="no query of this run is graded whole by people: "
                                 "per-query intervals are calibrated on such queries (--gold-design queries)")
    lows, highs = {}, {}
    for q in queries:
        pos, length = positions[q]
        low, high = bounds(spec, pos, pool.by_query.get(q, np.zeros(0, dtype=np.int64)), length, sets)
        lows[q], highs[q] = np.minimum.accumulate(low), np.maximum.accumulate(high)  # nested as the level widens
    needed = math.ceil(1.0 / (1.0 - coverage) - 1.0 - 1e-9)
    at = calibrate(np.array([lows[q] for q in calibration]), np.array([highs[q] for q in calibration]),
                   np.array([truth[q] for q in calibration]), coverage)
    note = None
    if at == len(LEVELS) - 1:
        note = (f"{len(calibration)} graded queries cannot calibrate a {coverage:.0%} per-query interval (it needs at "
                f"least {needed}, or a narrower interval would miss too often): each interval is the metric's whole "
                "range")
    level = None if at == len(LEVELS) - 1 else float(LEVELS[at])
    return PerQueryIntervals(
        run=run, metric=spec.name, target_coverage=coverage, calibration_queries=len(calibration), level=level,
        graded={q: truth[q] for q in calibration},
        intervals={q: (float(lows[q][at]), float(highs[q][at])) for q in queries if q not in truth}, note=note)
