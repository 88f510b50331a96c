"""Per-query intervals by conformal risk control (Oosterhuis et al., KDD 2024, arXiv 2407.02464; Angelopoulos,
Bates, Fisch, Lei, Schuster, "Conformal risk control", arXiv 2208.02814).

Each pool pair has a distribution over people's grades predicted from the judge: its `--grade-probs`
distribution where the label row has one, else P(human grade | judge grade) from the gold pairs (PRIOR
pseudo-pairs of a distribution peaked at the judge's grade), every grade kept possible (FLOOR). From it, a family
of intervals per query, nested as the level s falls (LEVELS: tail mass left out), in one of two ways:
- grade sets (P@k, MRR, and the ranking's own pairs in NDCG): a pair's plausible grades run from the
  distribution's s-quantile to its (1 - s)-quantile (grade g spread evenly over [g - 1/2, g + 1/2], so the ends
  move smoothly; s = 0: every grade), the way the paper perturbs the predicted label distributions; the interval
  has the ranking's pairs at their low ends, then at their high ends (gains, or relevance as a ramp between
  grades, at those fractional grades). Every value the metric takes with each pair's grade inside its span lies
  in the interval.
- draws (recall, hit rate, and NDCG's ideal DCG): DRAWS draws of people's grades for every pool pair of the query,
  each pair on its own (labeller.evaluation.corrected_draws); the interval runs from the s-quantile of the metric's
  drawn values to their (1 - s)-quantile, then past the drawn range by BEYOND times their spread either side.
  NDCG's ideal ranking and recall's denominator hang on every judged pair of the query (hundreds on a deep pool):
  with all of them at their worst at once the interval was nearly the whole range (LLMJudge: NDCG@10 0.89 wide,
  recall@100 0.83), while a sum over hundreds of pairs drawn on their own spreads far less. On the ranking's top
  pairs alone (P@10, MRR@10) the grade sets measured narrower than draws; benchmarks/README.md has both.
Every family ends with the metric's whole range [0, 1].

Calibration: the queries people graded whole (every pool pair), whose value under people's grades is known.
For a target coverage 1 - a over n of them, the level is the largest on the grid at which
(misses among the n + 1) / (n + 1) <= a, the conformal risk control bound for the 0/1 loss "the value is outside
the interval" (the whole range when none qualifies: with n < 1/a - 1 graded queries only it is guaranteed).
Then for a new query exchangeable with the graded ones (the graded queries a random sample of the judged ones),
P(its value under people's grades is inside its interval) >= 1 - a, over the draw of the graded queries and the
query: a marginal guarantee over queries, not one for each query. One level per run and metric. A judge that
errs more, or a gold too small for the target, gives wider intervals, never narrower ones. A graded query's draws
come from P(human | judge grade) fitted without its own pairs, as a new query's are; the grade sets use the table
fitted on every gold pair (a small departure from exchangeability, 20 numbers against n queries).
"""

from __future__ import annotations

import math

import numpy as np

from labeller.evaluation.corrected_draws import draw_grades, ends, ideal_dcg, query_values
from labeller.evaluation.corrected_pool import GRADES, GoldPool
from labeller.evaluation.corrected_results import PerQueryIntervals
from labeller.evaluation.corrected_terms import grade_gains
from labeller.evaluation.metrics import MetricSpec
from labeller.records import GRADE_MIN

LEVELS = np.concatenate((np.geomspace(0.5, 1e-4, 80), [0.0]))  # tail mass left out of each pair's grades
FLOOR = 1e-5  # every grade keeps this much probability
PEAK = math.log(8.0)  # prior of a judge grade: each grade step away is 8 times less likely
PRIOR = 2.0  # pseudo-pairs of that prior in the gold's P(human | judge grade)
SETS_KINDS = ("precision", "mrr", "ndcg")  # bounded with grade sets (NDCG's ideal from draws); the rest drawn
BEYOND = np.geomspace(0.05, 20.0, 60)  # multiples of a query's spread beyond its draws' range
SPREAD_FLOOR = 0.005  # the least spread either side: a query whose draws all agree still gets an interval


class JudgeModel:
    """P(people's grade) of every pool pair from the judge's output: its `--grade-probs` distribution where given,
    else P(human grade | judge grade) from the gold pairs (with PRIOR pseudo-pairs of a distribution peaked at the
    judge's grade), every grade kept possible (FLOOR). `for_rows(rows, leave_out=True)` fits the table without
    those rows' own gold grades (a graded query's, so that it is predicted as a new query is)."""

    def __init__(self, pool: GoldPool):
        self.pool = pool
        peaked = np.exp(-PEAK * np.abs(GRADES[None, :] - GRADES[:, None]))
        self.prior = PRIOR * peaked / peaked.sum(axis=1, keepdims=True)
        self.counts = self._counts(np.flatnonzero(pool.in_gold))
        probs = pool.judge_probs
        self.given = ~np.isnan(probs[:, 0]) if len(probs) else np.zeros(len(pool.judge), bool)

    def _counts(self, rows: np.ndarray) -> np.ndarray:
        """(judge grade, human grade) counts of the gold pairs among `rows`."""
        out = np.zeros((len(GRADES), len(GRADES)))
        gold = rows[self.pool.in_gold[rows]]
        np.add.at(out, (self.pool.judge[gold] - GRADE_MIN, self.pool.human[gold] - GRADE_MIN), 1.0)
        return out

    def for_rows(self, rows: np.ndarray, leave_out: bool = False) -> np.ndarray:
        """Distributions of the pool pairs `rows` (rows x grades)."""
        counts = self.counts - self._counts(rows) if leave_out else self.counts
        table = (counts + self.prior) / (counts.sum(axis=1, keepdims=True) + PRIOR)
        dist = table[self.pool.judge[rows] - GRADE_MIN]
        given = self.given[rows]
        dist[given] = self.pool.judge_probs[rows[given]]
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


class QueryPool:
    """One query's pool pairs (`rows`, pool indices, ascending) as its interval sees them: every pool pair's plausible
    grades at every level as gains and as relevance (`sets`, pool-wide GradeSets by pool index), and DRAWS draws of
    people's grades for the query's own pairs (rows x DRAWS)."""

    def __init__(self, rows: np.ndarray, sets: dict[str, GradeSets], grades: np.ndarray):
        self.rows, self.sets, self.grades = rows, sets, grades  # sets: "gains" and "relevant"


class PoolModel:
    """Every query's QueryPool, built on first use. The draws of a graded query come from P(human | judge grade)
    fitted without its own grades, as a new query's are fitted without its grades; the grade sets from the table
    fitted on every gold pair, once for the whole pool (leaving the query out widened P@10 and MRR@10 by
    0.03-0.09 on LLMJudge while their coverage was already above the target)."""

    def __init__(self, pool: GoldPool, graded: set[str], gain: str, relevant_from: int):
        self.pool, self.graded, self.relevant_from = pool, graded, relevant_from
        self.gains = grade_gains(gain, GRADES)
        self.judge = JudgeModel(pool)
        dist = self.judge.for_rows(np.arange(len(pool.judge)))
        self.sets = {"gains": GradeSets(dist, lambda g: grade_gains(gain, g)),
                     "relevant": GradeSets(dist, lambda g: np.clip(g - (relevant_from - 1), 0.0, 1.0))}
        self.queries: dict[str, QueryPool] = {}

    def query(self, q: str) -> QueryPool:
        if q not in self.queries:
            rows = self.pool.by_query.get(q, np.zeros(0, dtype=np.int64))
            grades = draw_grades(self.judge.for_rows(rows, leave_out=q in self.graded), q)
            self.queries[q] = QueryPool(rows, self.sets, grades)
        return self.queries[q]


def _at(values: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Rows of `values` at the ranking's pool indices; an unjudged document (-1) counts 0 at every level."""
    out = values[np.maximum(pos, 0)] if len(values) else np.zeros((len(pos), len(LEVELS)))
    out[pos < 0] = 0.0
    return out


def _ratio(top: np.ndarray, bottom: np.ndarray, empty: float) -> np.ndarray:
    safe = np.where(bottom > 1e-12, bottom, 1.0)
    return np.where(bottom > 1e-12, np.minimum(top / safe, 1.0), empty)


def _first_relevant(p: np.ndarray, weights: np.ndarray) -> np.ndarray:
    survive = np.cumprod(1.0 - p, axis=0)
    survive = np.vstack([np.ones((1, p.shape[1])), survive[:-1]]) if len(p) else survive
    return weights @ (p * survive)


def bounds(spec: MetricSpec, pos: np.ndarray, length: int, query: QueryPool, gains: np.ndarray) -> tuple:
    """(low, high) of one query's P@k, MRR or NDCG at every level of LEVELS: the ranking's pairs at their low ends,
    then at their high ends; NDCG's ideal DCG, which hangs on every pool pair, at its draws' (1 - s)-quantile for
    the low end and s-quantile for the high end. `pos`: the cut ranking's pool indices (-1 unjudged)."""
    sets = query.sets["gains" if spec.kind == "ndcg" else "relevant"]
    top_hi, top_lo = _at(sets.high, pos), _at(sets.low, pos)
    if spec.kind == "ndcg":
        disc = 1.0 / np.log2(np.arange(len(pos), dtype=np.float64) + 2.0)
        ideal_low, ideal_high = ends(ideal_dcg(query.grades, gains, spec.k), LEVELS)
        return _ratio(disc @ top_lo, ideal_high, 0.0), _ratio(disc @ top_hi, ideal_low, 1.0)
    if spec.kind == "precision":
        width = spec.k if spec.k else max(length, 1)
        return top_lo.sum(axis=0) / width, top_hi.sum(axis=0) / width
    weights = 1.0 / (np.arange(len(pos)) + 1.0) if spec.kind == "mrr" else np.ones(len(pos))
    return _first_relevant(top_lo, weights), _first_relevant(top_hi, weights)


def simulated(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of one query's simulated values at every level: their s- and (1 - s)-quantiles for s in LEVELS
    (the last: their least and greatest), then beyond them by BEYOND times their spread below and above the mean
    (root mean square of the draws on that side, times sqrt 2; at least SPREAD_FLOOR)."""
    low, high = ends(values, LEVELS)
    centre = float(values.mean()) if len(values) else 0.0
    below = max(math.sqrt(2.0 * float(np.mean(np.minimum(values - centre, 0.0) ** 2))), SPREAD_FLOOR)
    above = max(math.sqrt(2.0 * float(np.mean(np.maximum(values - centre, 0.0) ** 2))), SPREAD_FLOOR)
    return (np.concatenate((low, np.clip(low[-1] - BEYOND * below, 0.0, 1.0))),
            np.concatenate((high, np.clip(high[-1] + BEYOND * above, 0.0, 1.0))))


def ladder(spec: MetricSpec, pos: np.ndarray, length: int, model: PoolModel, q: str) -> tuple:
    """(low, high) of one query at every level, nested, the last the metric's whole range [0, 1]."""
    query = model.query(q)
    if spec.kind in SETS_KINDS:
        low, high = bounds(spec, pos, length, query, model.gains)
    else:
        low, high = simulated(query_values(spec, pos, query.rows, query.grades, length, model.gains,
                                           model.relevant_from))
    return np.append(np.minimum.accumulate(low), 0.0), np.append(np.maximum.accumulate(high), 1.0)


def calibrate(low: np.ndarray, high: np.ndarray, truth: np.ndarray, coverage: float) -> int:
    """The index of the narrowest level whose conformal risk bound is within 1 - coverage: (misses + 1) / (n + 1)
    <= alpha, the misses among the n calibration queries (rows of low/high, truth). The last level (the metric's
    whole range) holds every value, so it is the answer when nothing narrower qualifies."""
    alpha = 1.0 - coverage
    misses = ((truth[:, None] < low - 1e-12) | (truth[:, None] > high + 1e-12)).sum(axis=0)
    ok = np.flatnonzero((misses + 1) / (len(truth) + 1) <= alpha + 1e-12)
    return int(ok[0]) if len(ok) else low.shape[1] - 1


def per_query_intervals(run: str, spec: MetricSpec, queries: list[str], positions: dict[str, tuple[np.ndarray, int]],
                        model: PoolModel, truth: dict[str, float], coverage: float) -> PerQueryIntervals:
    """One run's per-query intervals on one metric; `truth`: people's value of each query graded whole."""
    calibration = [q for q in queries if q in truth]
    if not calibration:
        return PerQueryIntervals(run=run, metric=spec.name, target_coverage=coverage, calibration_queries=0, level=None,
                                 graded={}, intervals={}, note="no query of this run is graded whole by people: "
                                 "per-query intervals are calibrated on such queries (--gold-design queries)")
    lows, highs = {}, {}
    for q in queries:
        lows[q], highs[q] = ladder(spec, *positions[q], model, q)
    needed = math.ceil(1.0 / (1.0 - coverage) - 1.0 - 1e-9)
    at = calibrate(np.array([lows[q] for q in calibration]), np.array([highs[q] for q in calibration]),
                   np.array([truth[q] for q in calibration]), coverage)
    note = None
    whole = len(lows[calibration[0]]) - 1
    if at == whole:
        note = (f"{len(calibration)} graded queries cannot calibrate a {coverage:.0%} per-query interval (it needs at "
                f"least {needed}, or a narrower interval would miss too often): each interval is the metric's whole "
                "range")
    return PerQueryIntervals(
        run=run, metric=spec.name, target_coverage=coverage, calibration_queries=len(calibration),
        level=None if at == whole else float(LEVELS[min(at, len(LEVELS) - 1)]),
        graded={q: truth[q] for q in calibration},
        intervals={q: (float(lows[q][at]), float(highs[q][at])) for q in queries if q not in truth}, note=note)
