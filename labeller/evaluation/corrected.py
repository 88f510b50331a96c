"""Corrected metrics (`labeller evaluate --gold`): each run's figure under the judge's labels, and beside it
a prediction-powered estimate of the figure under people's grades, with 95% intervals that carry
the judge's error (and, wider, the query sample too). Differences between runs get the same.

The pieces: labeller.evaluation.corrected_pool (the pool, the gold, the design and its warnings), corrected_terms
(one query's metric and gradient from grade distributions), corrected_estimate (the estimators and their intervals),
corrected_spread (NDCG's anticipated spread under the pair design, and beside a certain stratum its fallback to the
human-only interval of the same gold). See docs/evaluate.md for the method and when to trust it.

Which design each estimator assumes: NDCG@k (linear or exponential gain), recall@k and P@k, sums and
ratios of sums over pairs, are corrected under both designs. MRR and hit rate hang on every pair above the
first relevant one at once: under the query design they are corrected as the others; under the pair design
only where the gold holds every pool pair of a run's ranking down to its first relevant one (people's grade),
for every query (the sample plan top:K grades each given run's top K with certainty): the value is then
people's, exactly, with no judge error. Scattered random pairs cannot correct them (a first-order correction
covered the truth 52-99% of the time per run on LLMJudge: benchmarks/README.md). MAP is not corrected. A figure
without a correction says why beside the plain one. Under the pair design recall is predicted from the calibration
tilted towards each query's own gold (TILTED, corrected_tilt), with corrected_recall's warnings. Under the pair design
without a certain stratum NDCG is DCG over the expected ideal DCG plus the ratio's second-order term (corrected_ideal:
the plug-in ideal DCG ran NDCG high). Both ratios' intervals are stretched by their estimated second-order remainder
(corrected_stretch; a difference's by the run's less the reference's), on its side."""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_estimate import Contribution, estimate, p_worse
from labeller.evaluation.corrected_ideal import expected_ideal, second_order
from labeller.evaluation.corrected_pool import GRADES, GoldPool, gold_pool
from labeller.evaluation.corrected_recall import linearisation_warnings, remainder
from labeller.evaluation.corrected_power import UNIFORM_P, blind_pool, tuning_warnings, uniform_p
from labeller.evaluation.corrected_spread import Anticipated, Larger, narrower
from labeller.evaluation.corrected_stretch import stretched
from labeller.evaluation.corrected_results import (Corrected, CorrectedDifference, CorrectedMetric, CorrectedValue,
                                                   Stratum)
from labeller.evaluation.corrected_terms import SUPPORTED_KINDS, grade_gains, query_terms
from labeller.evaluation.corrected_tilt import learning_gold, query_tilt, top_tilt
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
FIRST_RELEVANT = ("mrr", "hit_rate")  # pair design: only where the graded prefix decides them (above); query design:
# one pair can move a query's value across all of [0, 1], so both take the small-sample guard (corrected_estimate)
# Sums (and ratios of sums) of per-pair gains or relevance: the judge's grade distribution predicts them by its
# expected gain or relevance. MRR and hit rate hang on the first relevant pair, whose expectation under independent
# pairs predicted people's value worse than the judge's grades did (on a planted case the interval covered 68% and
# 24%): they are predicted from the judge's grades.
ADDITIVE = ("ndcg", "recall", "precision")

# Predicted with the calibration tilted towards each query's own gold (corrected_tilt.query_tilt): recall, whose
# first-order correction is scaled by 1 / (the query's relevant count at the model point); untilted, that count ran
# twice the truth on queries with few relevant pairs (LLMJudge: 44 against 18) and recall@100 of the BM25 runs half
# an se low. NDCG is not (the tilt raised its bias) except beside a certain stratum (corrected_tilt.top_tilt).
TILTED = ("recall",)


class _Model:
    """Grade distributions of every pool pair at three points: the judge's grades, people's grades (where
    known), and the model point: people's grade where known, else a prediction from the gold, P(human |
    judge grade) within the pair's own query, shrunk towards all queries' (SHRINK pseudo-pairs: queries
    differ in how often the judge is right, and a prediction closer to the truth leaves the first-order
    correction less to do). Beside a certain stratum only the random gold teaches these predictions
    (corrected_tilt.learning_gold); people's grades of the certain pairs are their values. A gold pair's residual
    is against its prediction without itself (leave one out), as the difference estimator needs predictions that
    do not use the pair's own grade. `tilt`: the
    all-query calibration is first tilted towards the query's own gold of every judge grade (TILTED).
    `plug_in_ideal`: NDCG at the ideal DCG of the expected counts, first order only (before corrected_ideal).
    `from_all`: learn from all the gold, the certain pairs too (for `_anticipated`). `top`: NDCG's beside a certain
    stratum, tilted by all of each query's gold (corrected_tilt.top_tilt)."""

    def __init__(self, pool: GoldPool, settings: Settings, tilt: bool = False, plug_in_ideal: bool = False,
                 from_all: bool = False, top: bool = False):
        self.pool, self.plug_in_ideal, self.top = pool, plug_in_ideal, top
        self.gains = grade_gains(settings.gain, GRADES)
        self.relevant_from = settings.relevant_from
        self.relevant = (GRADES >= settings.relevant_from).astype(np.float64)
        learn = pool.in_gold if from_all else learning_gold(pool)
        self.calibration = pool.calibration(learn)
        self.plain = _point_masses(pool.judge)
        # the judge's prediction: its grade distribution where the label row has one (`label --grade-probs`)
        given = ~np.isnan(pool.judge_probs[:, 0]) if len(pool.judge_probs) else np.zeros(len(pool.judge), bool)
        self.prediction = np.where(given[:, None], np.nan_to_num(pool.judge_probs), self.plain)
        gold = pool.in_gold
        self.human = self.plain.copy()
        self.human[gold] = _point_masses(pool.human[gold])
        base = self.calibration[pool.judge - GRADE_MIN]
        tilted, tilted_out = top_tilt(pool, base, self.human, SHRINK) if top else \
            query_tilt(pool, base, self.human, learn, SHRINK) if tilt else (base, base)
        prior, prior_out = tilted * SHRINK, tilted_out * SHRINK
        groups: dict[tuple[str, int], int] = {}
        group = np.array([groups.setdefault(key, len(groups)) for key in zip(pool.query, pool.judge.tolist())])
        sums = np.zeros((group.max() + 1, len(GRADES)))
        np.add.at(sums, group[learn], self.human[learn])
        counts = np.bincount(group[learn], minlength=len(sums)).astype(np.float64)
        predicted = (sums[group] + prior) / (counts[group] + SHRINK)[:, None]
        left_out = (sums[group] - self.human + prior_out) / (counts[group] - 1 + SHRINK)[:, None]
        left_out = np.where(learn[:, None], left_out, predicted)  # a certain pair taught nothing: nothing to leave out
        # a pair with the judge's own distribution is predicted by it (which uses no gold: no leave-one-out)
        predicted = np.where(given[:, None], self.prediction, predicted)
        left_out = np.where(given[:, None], self.prediction, left_out)
        self.residual = np.where(gold[:, None], self.human - left_out, 0.0)
        self.model = np.where(gold[:, None], self.human, predicted)
        self.expected = np.where(gold[:, None], left_out, predicted)  # every pair's prediction without its grade
        self.weight = np.zeros(len(pool.judge))  # a gold pair's N_j / n_j - 1 (0: certain, or not gold)
        for j, (size, graded) in pool.stratum_sizes().items():
            if graded:
                self.weight[gold & pool.stratum(j)] = size / graded - 1.0
        self._ideal: dict[tuple[str, int], tuple] = {}

    def ideal(self, query: str, rows: np.ndarray, k: int) -> tuple:
        """NDCG's expected ideal DCG of a query under the pair design (labeller.evaluation.corrected_ideal)."""
        if (query, k) not in self._ideal:
            self._ideal[query, k] = expected_ideal(self.model[rows], self.pool.in_gold[rows], self.gains, k)
        return self._ideal[query, k]

    def feature(self, spec: MetricSpec) -> np.ndarray:
        return self.gains if spec.kind == "ndcg" else self.relevant


def _anticipated(pool: GoldPool, settings: Settings, model: _Model) -> Larger:
    """NDCG's anticipated spread (corrected_spread) under the pair design; beside a certain stratum the larger of the
    one under the predictions (from the random gold) and under predictions learned from all the gold: a random rest
    with few relevant pairs predicts the rest never relevant, the certain pairs say the judge can be wrong there."""
    return Larger(Anticipated(pool, model.expected),
                  *([Anticipated(pool, _Model(pool, settings, from_all=True, top=model.top).expected)]
                    if pool.certain.any() else []))


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
    whole, out = set(pool.gold_queries()) if pool.design == "queries" else set(), Contribution({}, {})
    if pool.design == "pairs" and not pool.certain.any() and (spec.kind == "recall" or spec.kind == "ndcg"
                                                             and not model.plug_in_ideal):
        out.remainder = {}  # the ratio's estimated second-order remainder, per query (corrected_stretch)
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
        where = {int(i): t for t, i in enumerate(pos) if i >= 0}
        if spec.kind == "ndcg" and out.remainder is not None:
            out.model[q], out.remainder[q] = _expected_ndcg(q, rows, pos, where, spec.k, model, out)
            continue
        terms = _value(spec, model.model, weights, rows, pos, length, model, settings)
        out.model[q] = terms.value
        if spec.kind == "ndcg" and len(pool.certain) and pool.certain.any():  # for corrected_spread
            out.gradient[q] = terms.count_grad
            out.positioned.update({i: terms.feature_grad[t] * weights for i, t in where.items() if not pool.certain[i]})
        for i in rows[pool.in_gold[rows]]:  # each gold pair's first-order effect, for the variance
            z = float(terms.count_grad @ model.residual[i])
            if int(i) in where:
                z += terms.feature_grad[where[int(i)]] * float(model.residual[i] @ weights)
            if z:
                out.influence[int(i)] = z
        if out.remainder is not None:
            out.remainder[q] = remainder(terms, rows[pool.in_gold[rows]], where, model)
    return out


def _expected_ndcg(query: str, rows: np.ndarray, pos: np.ndarray, where: dict[int, int], k: int, model: _Model,
                   out: Contribution) -> tuple[float, float]:
    """One query's NDCG under the pair design without a certain stratum: DCG at the model point over the expected
    ideal DCG (labeller.evaluation.corrected_ideal) plus the ratio's second-order term, less the extra effects below
    (the estimator adds them back; each gold pair's into `out.influence`), and the term, which stretches the
    interval. Also the gradients the anticipated spread (corrected_spread) needs: ideal DCG's, DCG's in the top k."""
    disc = 1.0 / np.log2(np.arange(len(pos), dtype=np.float64) + 2.0)
    dcg = float(np.where(pos >= 0, model.model[np.maximum(pos, 0)] @ model.gains, 0.0) @ disc) if len(pos) else 0.0
    ideal, per_row, extra = model.ideal(query, rows, k)
    if ideal <= 1e-12:
        return 0.0, 0.0
    out.gradient[query] = -dcg / ideal**2 * extra
    out.positioned.update({i: disc[t] * model.gains / ideal for i, t in where.items()})
    local = np.flatnonzero(model.pool.in_gold[rows])
    gold = rows[local]
    top = np.array([disc[where[int(i)]] * float(model.residual[i] @ model.gains) if int(i) in where else 0.0
                    for i in gold])
    bottom = np.einsum("ij,ij->i", per_row[local], model.residual[gold]) if len(gold) else np.zeros(0)
    weights = model.weight[gold]
    term, effect = second_order(dcg, ideal, top, bottom, weights)
    # the variance takes each pair's effect with the second-order term's (the gradient at the corrected point); the
    # estimate is unchanged: the value here gives back what the extra effects add through their weights
    for i, z in zip(gold.tolist(), top / ideal - dcg / ideal**2 * bottom + effect):
        if z:
            out.influence[i] = float(z)
    return dcg / ideal + term - float(weights @ effect), term


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
    model, top = _Model(pool, settings), pool.design == "pairs" and pool.certain.any()
    ndcg = _Model(pool, settings, top=True) if top else model  # beside a certain stratum: corrected_tilt.top_tilt
    spread = _anticipated(pool, settings, ndcg) if pool.design == "pairs" else None
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
                parts[ranking.name, spec.name] = contribution(ranking, queries, spec, tilted if spec.kind in TILTED
                                                              else ndcg if spec.kind == "ndcg" else model, settings)
                if blind is not None and blind.serves(spec):
                    blind_parts[ranking.name, spec.name] = blind.contribution(ranking, queries, spec, settings)
                own = parts[ranking.name, spec.name], blind_parts.get((ranking.name, spec.name))
                value = _within(stretched(estimate(own[0], pool, confidence, spec.kind in FIRST_RELEVANT, spread,
                                                   blind and blind.terms(own[1])), *own, confidence), 0.0, 1.0)
                if blind is not None:
                    value = blind.fallback(value, blind_parts.get((ranking.name, spec.name)), confidence, (0.0, 1.0))
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
                both = blind_parts.get((ranking.name, spec.name)), blind_parts.get((reference, spec.name))
                blind_diff = both[0].minus(both[1]) if None not in both else None
                value = _within(stretched(estimate(diff, pool, confidence, spec.kind in FIRST_RELEVANT, spread, blind
                                                   and blind.terms(blind_diff)), diff, blind_diff, confidence), -1, 1)
                if blind is not None:
                    value = blind.fallback(value, blind_diff, confidence, (-1.0, 1.0))
                plain = float(np.mean(list(diff.plain.values()))) if diff.plain else None
                differences.append(CorrectedDifference(reference=reference, run=ranking.name, metric=spec.name,
                                                       plain=plain, corrected=value, p_worse=p_worse(value)))
    return Corrected(
        gold=gold.source, design=pool.design, pool_pairs=len(pool.judge), gold_pairs=int(pool.in_gold.sum()),
        gold_outside=pool.outside, gold_queries=len(pool.gold_queries()) if pool.design == "queries"
        else len({pool.query[i] for i in np.flatnonzero(pool.in_gold)}),
        strata=[Stratum(judge_grade=j, pool=n, gold=g) for j, (n, g) in pool.stratum_sizes().items()],
        certain_pairs=int(pool.certain.sum()) if len(pool.certain) else 0, confidence=confidence, runs=runs,
        differences=differences,
        warnings=pool.warnings + tuning_warnings(pool) + linearisation_warnings(pool, parts, runs, specs),
        per_query=intervals.out)


class _Blind:
    """The judge-free estimator on the same gold (a judge that knows nothing: one grade for every pair), PPI++'s
    lambda = 0, in one of two roles. Pair design, all gold random: power tuning blends it with the judge's for every
    metric (labeller.evaluation.corrected_power; `tuned`), where the gold's judge-grade shares are those of a uniform
    draw (else its estimate is biased). Beside a certain stratum (plan top:K) it was fitted mostly on the runs' top
    pairs and its recall ran biased (a simulated top-3 world: 73% coverage, blended 87%:
    tests/test_evaluation_corrected_top.py; measured before the predictions learned from the random gold only), so
    there it serves only NDCG, as the fallback
    labeller.evaluation.corrected_spread.narrower takes when its interval is the narrower and the two agree."""

    def __init__(self, pool: GoldPool, settings: Settings, specs: list[MetricSpec]):
        self.pool, self.tuned = blind_pool(pool), not pool.certain.any()
        self.model = _Model(self.pool, settings)
        self.tilted = _Model(self.pool, settings, tilt=True) if any(s.kind in TILTED for s in specs) else self.model
        self.spread = _anticipated(self.pool, settings, self.model)

    @classmethod
    def of(cls, pool: GoldPool, settings: Settings, specs: list[MetricSpec]) -> _Blind | None:
        if pool.design != "pairs":
            return None
        if pool.certain.any():
            return cls(pool, settings, specs) if any(s.kind == "ndcg" for s in specs) else None
        if len(pool.stratum_sizes()) < 2 or uniform_p(pool) < UNIFORM_P:
            return None
        return cls(pool, settings, specs)

    def serves(self, spec: MetricSpec) -> bool:
        return self.tuned or spec.kind == "ndcg"

    def contribution(self, ranking: Ranking, queries: list[str], spec: MetricSpec, settings: Settings) -> Contribution:
        return contribution(ranking, queries, spec, self.tilted if spec.kind in TILTED else self.model, settings)

    def terms(self, part: Contribution | None) -> tuple[Contribution, GoldPool, Anticipated | Larger | None] | None:
        """What power tuning blends with (corrected_estimate.estimate), in the tuned role."""
        return (part, self.pool, self.spread) if self.tuned and part is not None else None

    def fallback(self, value: CorrectedValue, part: Contribution | None, confidence: float,
                 bounds: tuple[float, float]) -> CorrectedValue:
        """Beside a certain stratum: the human-only interval where it is the narrower and agrees (NDCG)."""
        if self.tuned or part is None:
            return value
        return narrower(value, _within(estimate(part, self.pool, confidence, False, self.spread), *bounds))


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
