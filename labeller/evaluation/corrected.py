"""Corrected metrics (`labeller evaluate --gold`): each run's figure under the judge's labels, and beside it
a prediction-powered estimate of the figure under people's grades, with 95% intervals that carry
the judge's error (and, wider, the query sample too). Differences between runs get the same.

The pieces: labeller.evaluation.corrected_pool (the pool, the gold, the design and its warnings),
corrected_terms (one query's metric and gradient from grade distributions), corrected_estimate (the
estimators and their intervals), corrected_spread (NDCG's spread beside a certain stratum). See
docs/evaluate.md for the method and when to trust it.

Which design each estimator assumes: NDCG@k (linear or exponential gain), recall@k and P@k, sums and
ratios of sums over pairs, are corrected under both designs. MRR and hit rate hang on every pair above the
first relevant one at once: under the query design they are corrected as the others; under the pair design
only where the gold holds every pool pair of a run's ranking down to its first relevant one (people's grade),
for every query (the sample plan top:K grades each given run's top K with certainty): the value is then
people's, exactly, with no judge error. Scattered random pairs cannot correct them (a first-order correction
covered the truth 52-99% of the time per run on LLMJudge: benchmarks/README.md). MAP is not corrected. A figure
without a correction says why beside the plain one. Under the pair design recall is predicted from the calibration
tilted towards each query's own gold (TILTED, `_query_tilt`): its first-order correction is scaled by the query's
relevant count at the model point, which must not be far from the truth (docs/evaluate.md).
"""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_estimate import Contribution, estimate, p_worse
from labeller.evaluation.corrected_pool import GRADES, GoldPool, gold_pool
from labeller.evaluation.corrected_power import UNIFORM_P, blind_pool, uniform_p
from labeller.evaluation.corrected_spread import Anticipated
from labeller.evaluation.corrected_results import (Corrected, CorrectedDifference, CorrectedMetric, CorrectedValue,
                                                   Stratum)
from labeller.evaluation.corrected_terms import SUPPORTED_KINDS, grade_gains, query_terms
from labeller.evaluation.metrics import MetricSpec
from labeller.evaluation.qrels import Judgments
from labeller.evaluation.results import RunScores, Settings
from labeller.evaluation.runs import Ranking
from labeller.evaluation.significance import bootstrap_interval
from labeller.records import GRADE_MIN


def _point_masses(grades: np.ndarray) -> np.ndarray:
    out = np.zeros((len(grades), len(GRADES)))
    out[np.arange(len(grades)), grades - GRADE_MIN] = 1.0
    return out


SHRINK = 4.0  # pseudo-pairs of the all-query calibration in each query's own, per judge grade
FIRST_RELEVANT = ("mrr", "hit_rate")  # under the pair design, only where the graded prefix decides them (above)
# Sums (and ratios of sums) of per-pair gains or relevance: the judge's grade distribution predicts them by its
# expected gain or relevance. MRR and hit rate hang on the first relevant pair, whose expectation under independent
# pairs predicted people's value worse than the judge's grades did (on a planted case the interval covered 68% and
# 24%): they are predicted from the judge's grades.
ADDITIVE = ("ndcg", "recall", "precision")
ZERO_ONE = ("hit_rate",)  # a query's value is 0 or 1 (labeller.evaluation.corrected_estimate: its variance floor)


# Predicted with the calibration tilted towards each query's own gold (`_query_tilt`): recall, whose first-order
# correction is scaled by 1 / (the query's relevant count at the model point). With few gold pairs per (query,
# judge grade) that count leaned on the all-query calibration, twice the truth on queries with few relevant pairs
# (on LLMJudge: 44 predicted against 18), so their correction came out half what it should and recall@100 of the
# BM25 runs ran half a standard error low (88-91% coverage). NDCG@10 is not tilted: there the tilt raised its bias.
TILTED = ("recall",)


def _query_tilt(pool: GoldPool, base: np.ndarray, human: np.ndarray, gold: np.ndarray,
                strength: float) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's calibrated distribution P(human | judge grade), tilted per human grade g by its query's gold:
    (seen_g + s p_g) / (expected_g + s p_g), seen_g the query's gold pairs people gave g, expected_g the sum of their
    calibrated P(g), p_g the share of g over all the gold and s `strength` pseudo-pairs (a query without gold keeps
    the calibration), then normalised. Returns it, and for each gold pair the same without the pair itself (its
    leave-one-out prediction must not use its own grade)."""
    names = {q: n for n, q in enumerate(sorted(pool.by_query))}
    at = np.array([names[q] for q in pool.query])
    seen, expected = np.zeros((len(names), base.shape[1])), np.zeros((len(names), base.shape[1]))
    np.add.at(seen, at[gold], human[gold])
    np.add.at(expected, at[gold], base[gold])
    pseudo = strength * human[gold].mean(axis=0)

    def tilt(seen_rows, expected_rows):
        bottom = expected_rows + pseudo
        factor = np.where(bottom > 0, (seen_rows + pseudo) / np.where(bottom > 0, bottom, 1.0), 1.0)
        out = base * factor
        total = out.sum(axis=1, keepdims=True)
        return np.where(total > 0, out / np.where(total > 0, total, 1.0), base)

    own = np.where(gold[:, None], 1.0, 0.0)
    return tilt(seen[at], expected[at]), tilt(seen[at] - own * human, expected[at] - own * base)


class _Model:
    """Grade distributions of every pool pair at three points: the judge's grades, people's grades (where
    known), and the model point: people's grade where known, else a prediction from the gold, P(human |
    judge grade) within the pair's own query, shrunk towards all queries' (SHRINK pseudo-pairs: queries
    differ in how often the judge is right, and a prediction closer to the truth leaves the first-order
    correction less to do). A gold pair's residual is against its prediction without itself (leave one
    out), as the difference estimator needs predictions that do not use the pair's own grade. `tilt`: the
    all-query calibration is first tilted towards the query's own gold of every judge grade (TILTED)."""

    def __init__(self, pool: GoldPool, settings: Settings, tilt: bool = False):
        self.pool = pool
        self.gains = grade_gains(settings.gain, GRADES)
        self.relevant_from = settings.relevant_from
        self.relevant = (GRADES >= settings.relevant_from).astype(np.float64)
        self.calibration = pool.calibration()
        self.plain = _point_masses(pool.judge)
        # the judge's prediction: its grade distribution where the label row has one (`label --grade-probs`)
        given = ~np.isnan(pool.judge_probs[:, 0]) if len(pool.judge_probs) else np.zeros(len(pool.judge), bool)
        self.prediction = np.where(given[:, None], np.nan_to_num(pool.judge_probs), self.plain)
        gold = pool.in_gold
        self.human = self.plain.copy()
        self.human[gold] = _point_masses(pool.human[gold])
        base = self.calibration[pool.judge - GRADE_MIN]
        tilted, tilted_out = _query_tilt(pool, base, self.human, gold, SHRINK) if tilt else (base, base)
        prior, prior_out = tilted * SHRINK, tilted_out * SHRINK
        groups: dict[tuple[str, int], int] = {}
        group = np.array([groups.setdefault(key, len(groups)) for key in zip(pool.query, pool.judge.tolist())])
        sums = np.zeros((group.max() + 1, len(GRADES)))
        np.add.at(sums, group[gold], self.human[gold])
        counts = np.bincount(group[gold], minlength=len(sums)).astype(np.float64)
        predicted = (sums[group] + prior) / (counts[group] + SHRINK)[:, None]
        left_out = (sums[group] - self.human + prior_out) / (counts[group] - 1 + SHRINK)[:, None]
        # a pair with the judge's own distribution is predicted by it (which uses no gold: no leave-one-out)
        predicted = np.where(given[:, None], self.prediction, predicted)
        left_out = np.where(given[:, None], self.prediction, left_out)
        self.residual = np.where(gold[:, None], self.human - left_out, 0.0)
        self.model = np.where(gold[:, None], self.human, predicted)
        self.expected = np.where(gold[:, None], left_out, predicted)  # every pair's prediction without its grade

    def feature(self, spec: MetricSpec) -> np.ndarray:
        return self.gains if spec.kind == "ndcg" else self.relevant


def _positions(ranking: Ranking, pool: GoldPool, query: str, k: int) -> tuple[np.ndarray, int]:
    docs = ranking.docs.get(query, [])
    cut = docs[:k] if k else docs
    return np.array([pool.index.get((query, d), -1) for d in cut], dtype=np.int64), len(docs)


def _value(spec, at: np.ndarray, weights: np.ndarray, rows: np.ndarray, pos: np.ndarray, length: int,
           model: _Model, settings: Settings):
    feature = np.where(pos >= 0, at[np.maximum(pos, 0)] @ weights, 0.0) if len(pos) else np.zeros(0)
    counts = np.maximum(at[rows].sum(axis=0), 0.0)  # an estimated count below 0 is 0
    return query_terms(spec, feature, counts, model.gains, settings.relevant_from, length)


def contribution(ranking: Ranking, queries: list[str], spec: MetricSpec, model: _Model,
                 settings: Settings) -> Contribution:
    pool, weights = model.pool, model.feature(spec)
    whole = set(pool.gold_queries()) if pool.design == "queries" else set()
    out = Contribution({}, {})
    for q in queries:
        rows = pool.by_query.get(q, np.zeros(0, dtype=np.int64))
        pos, length = _positions(ranking, pool, q, spec.k)
        out.plain[q] = _value(spec, model.plain, weights, rows, pos, length, model, settings).value
        if pool.design == "queries":  # the judge's prediction of the query's value: at its distributions
            out.model[q] = _value(spec, model.prediction if spec.kind in ADDITIVE else model.plain, weights, rows,
                                  pos, length, model, settings).value
            if q in whole:
                out.human[q] = _value(spec, model.human, weights, rows, pos, length, model, settings).value
            continue
        if spec.kind in FIRST_RELEVANT:  # the graded prefix decides it (checked by `_ungraded_prefix`): exact
            out.model[q] = _value(spec, model.human, weights, rows, pos, length, model, settings).value
            continue
        terms = _value(spec, model.model, weights, rows, pos, length, model, settings)
        out.model[q] = terms.value
        where = {int(i): t for t, i in enumerate(pos) if i >= 0}
        if spec.kind == "ndcg" and len(pool.certain) and pool.certain.any():  # for corrected_spread
            out.gradient[q] = terms.count_grad
            out.positioned.update({i: terms.feature_grad[t] * weights for i, t in where.items() if not pool.certain[i]})
        for i in rows[pool.in_gold[rows]]:  # each gold pair's first-order effect, for the variance
            z = float(terms.count_grad @ model.residual[i])
            if int(i) in where:
                z += terms.feature_grad[where[int(i)]] * float(model.residual[i] @ weights)
            if z:
                out.influence[int(i)] = z
    return out


def _ungraded_prefix(ranking: Ranking, queries: list[str], spec: MetricSpec, model: _Model) -> list[str]:
    """The queries whose MRR or hit rate people's grades do not decide: a pool pair of the (cut) ranking above its
    first relevant one under people's grades has no grade (a document outside the pool is not relevant either way)."""
    pool, out = model.pool, []
    for q in queries:
        for i in _positions(ranking, pool, q, spec.k)[0]:
            if i < 0:
                continue
            if not pool.in_gold[i]:
                out.append(q)
                break
            if pool.human[i] >= model.relevant_from:
                break
    return out


def _unsupported(spec: MetricSpec, ranking: Ranking, queries: list[str], model: _Model) -> str | None:
    if spec.kind not in SUPPORTED_KINDS:
        return f"no corrected estimate for {spec.kind}"
    if model.pool.design == "pairs" and spec.kind in FIRST_RELEVANT:
        missing = _ungraded_prefix(ranking, queries, spec, model)
        if missing:
            return (f"{spec.name} is corrected under the pair design only where people graded the run's ranking "
                    f"down to its first relevant pair, and {len(missing)} of {len(queries)} queries have an ungraded "
                    f"pair there (e.g. {missing[0]}): draw the sample with `annotate sample --plan top:K --top-run` "
                    "this run, or grade whole queries (--gold-design queries)")
    return None


def _within(value: CorrectedValue, low: float, high: float) -> CorrectedValue:
    """Interval ends cut to the metric's range (every metric here is in [0, 1]): the truth is inside it, so
    cutting never loses coverage. The estimate itself is left as computed (a difference estimate may stray)."""
    ends = ("ci_low", "ci_high", "ci_low_queries", "ci_high_queries")
    return value.model_copy(update={e: min(max(getattr(value, e), low), high) for e in ends
                                    if getattr(value, e) is not None})


def _averaged(scores: RunScores, metric: str) -> list[str]:
    return sorted(set(scores.per_query.get(metric, {})) - set(scores.no_answer.query_ids))


def corrected(rankings: list[Ranking], scores: dict[str, RunScores], labels: Judgments, gold: Judgments,
              specs: list[MetricSpec], settings: Settings, *, design: str = "auto", confidence: float = 0.95,
              bootstrap: int = 10_000, seed: int = 42, reference: str | None = None,
              per_query_coverage: float | None = 0.9, certain: set[tuple[str, str]] | None = None) -> Corrected:
    """Corrected figures for every run, and for every run minus the reference (when given); per-query intervals
    at `per_query_coverage` (None: none) by conformal risk control on the queries people graded whole.
    `certain`: the pairs the sample drew with certainty (plan top:K; labeller.evaluation.corrected_pool)."""
    pool = gold_pool(labels, gold, design, certain)
    model = _Model(pool, settings)
    spread = Anticipated(pool, model.expected) if pool.design == "pairs" and pool.certain.any() else None
    tilted = _Model(pool, settings, tilt=True) if pool.design == "pairs" and any(s.kind in TILTED for s in specs) \
        else model
    intervals = _PerQuery(pool, model, settings, per_query_coverage)
    blind = _Blind.of(pool, settings, specs)
    parts: dict[tuple[str, str], Contribution] = {}
    blind_parts: dict[tuple[str, str], Contribution] = {}
    runs: dict[str, list[CorrectedMetric]] = {}
    for ranking in rankings:
        run_scores = scores[ranking.name]
        rows = []
        for spec in specs:
            queries = _averaged(run_scores, spec.name)
            plain = [run_scores.per_query[spec.name][q] for q in queries]
            low, high = bootstrap_interval(np.array(plain), confidence, bootstrap, seed)
            why = _unsupported(spec, ranking, queries, model)
            if why:
                value = CorrectedValue(estimate=None, ci_low=None, ci_high=None, note=why)
            else:
                parts[ranking.name, spec.name] = contribution(ranking, queries, spec,
                                                              tilted if spec.kind in TILTED else model, settings)
                if blind is not None:
                    blind_parts[ranking.name, spec.name] = blind.contribution(ranking, queries, spec, settings)
                value = _within(estimate(parts[ranking.name, spec.name], pool, confidence, spec.kind in ZERO_ONE,
                                         spread, blind and blind.terms(blind_parts[ranking.name, spec.name]),
                                         (0.0, 1.0)), 0.0, 1.0)
            intervals.add(ranking, spec, queries)
            rows.append(CorrectedMetric(metric=spec.name, queries=len(queries), plain=run_scores.metrics.get(spec.name),
                                        plain_ci_low=low, plain_ci_high=high, corrected=value))
        runs[ranking.name] = rows
    differences = []
    if reference is not None:
        for ranking in rankings:
            if ranking.name == reference:
                continue
            for spec in specs:
                if (ranking.name, spec.name) not in parts or (reference, spec.name) not in parts:
                    continue
                diff = parts[ranking.name, spec.name].minus(parts[reference, spec.name])
                blind_diff = blind and blind.terms(blind_parts[ranking.name, spec.name].minus(
                    blind_parts[reference, spec.name]))
                value = _within(estimate(diff, pool, confidence, spec.kind in ZERO_ONE, spread, blind_diff,
                                         (-1.0, 1.0)), -1.0, 1.0)
                plain = float(np.mean(list(diff.plain.values()))) if diff.plain else None
                differences.append(CorrectedDifference(reference=reference, run=ranking.name, metric=spec.name,
                                                       plain=plain, corrected=value, p_worse=p_worse(value)))
    return Corrected(
        gold=gold.source, design=pool.design, pool_pairs=len(pool.judge), gold_pairs=int(pool.in_gold.sum()),
        gold_outside=pool.outside,
        gold_queries=len(pool.gold_queries()) if pool.design == "queries"
        else len({pool.query[i] for i in np.flatnonzero(pool.in_gold)}),
        strata=[Stratum(judge_grade=j, pool=n, gold=g) for j, (n, g) in pool.stratum_sizes().items()],
        certain_pairs=int(pool.certain.sum()) if len(pool.certain) else 0, confidence=confidence, runs=runs,
        differences=differences, warnings=pool.warnings + _Blind.warnings(pool), per_query=intervals.out)


class _Blind:
    """The pair design's judge-free estimator on the same gold (a judge that knows nothing: one grade for every
    pair), which power tuning blends with the judge's (labeller.evaluation.corrected_power). None where it is not
    a valid estimate (the gold's judge-grade shares are not those of a uniform draw), would be the judge's own, or
    beside a certain stratum (plan top:K): the judge-free model is then fitted mostly on the runs' top pairs, not a
    random sample of the rest, and its recall ran biased (a simulated top-3 world: 73% coverage, against 97% for the
    judge's; blended, 87%: tests/test_evaluation_corrected_top.py)."""

    def __init__(self, pool: GoldPool, settings: Settings, specs: list[MetricSpec]):
        self.pool = blind_pool(pool)
        self.model = _Model(self.pool, settings)
        self.tilted = _Model(self.pool, settings, tilt=True) if any(s.kind in TILTED for s in specs) else self.model
        self.spread = Anticipated(self.pool, self.model.expected) if self.pool.certain.any() else None

    @classmethod
    def of(cls, pool: GoldPool, settings: Settings, specs: list[MetricSpec]) -> _Blind | None:
        if pool.design != "pairs" or len(pool.stratum_sizes()) < 2 or pool.certain.any() \
                or uniform_p(pool) < UNIFORM_P:
            return None
        return cls(pool, settings, specs)

    @staticmethod
    def warnings(pool: GoldPool) -> list[str]:
        if pool.design != "pairs" or len(pool.stratum_sizes()) < 2 or pool.certain.any():
            return []
        p = uniform_p(pool)
        if p >= UNIFORM_P:
            return []
        return [f"the gold's shares of the judge's grades are not those of a uniform sample of the pool (p = {p:.1g}: "
                "a stratified plan with other shares per grade?): the human-only estimate would be biased, so the "
                "corrected figures are the judge-calibrated ones alone (no power tuning, lambda 1), and can be wider "
                "than what the gold alone says"]

    def contribution(self, ranking: Ranking, queries: list[str], spec: MetricSpec, settings: Settings) -> Contribution:
        return contribution(ranking, queries, spec, self.tilted if spec.kind in TILTED else self.model, settings)

    def terms(self, part: Contribution) -> tuple[Contribution, GoldPool, Anticipated | None]:
        return part, self.pool, self.spread


class _PerQuery:
    """Per-query intervals by conformal risk control (labeller.evaluation.corrected_conformal), calibrated on the
    queries people graded whole; their value under people's grades is the truth the width is calibrated on."""

    def __init__(self, pool: GoldPool, model: _Model, settings: Settings, coverage: float | None):
        self.pool, self.model, self.settings, self.coverage = pool, model, settings, coverage
        self.whole = set(pool.gold_queries())
        self.out: list = []
        self.queries = None

    def add(self, ranking: Ranking, spec: MetricSpec, queries: list[str]) -> None:
        from labeller.evaluation.corrected_conformal import PoolModel, per_query_intervals

        if self.coverage is None or spec.kind not in SUPPORTED_KINDS:
            return
        pool, model = self.pool, self.model
        if self.queries is None:
            self.queries = PoolModel(pool, self.whole, self.settings.gain, self.settings.relevant_from)
        positions = {q: _positions(ranking, pool, q, spec.k) for q in queries}
        empty = np.zeros(0, dtype=np.int64)
        truth = {q: _value(spec, model.human, model.feature(spec), pool.by_query.get(q, empty), *positions[q], model,
                           self.settings).value for q in queries if q in self.whole}
        self.out.append(per_query_intervals(ranking.name, spec, queries, positions, self.queries, truth,
                                            self.coverage))
