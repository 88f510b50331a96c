"""Which retrieval metric predicts the downstream outcome, at which cutoff, and a sentence saying what to gate on.

Every metric is judged on the same queries by its AUC (with a bootstrap interval over queries) and a
logistic fit. The best is the highest AUC; metrics whose AUC is exactly the same (hit_rate@3, recall@3 and
mrr@10 split the queries alike when each has one relevant document) go to the simplest to gate on:
hit rate, then recall, MRR, precision, NDCG, MAP, coverage, judged share; then the smaller cutoff.
Metrics the paired bootstrap cannot tell from the best are marked `as_good_as_best` and named.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from labeller.outcomes import stats
from labeller.outcomes.results import Cutoff, MetricPrediction, Recommendation

SIMPLEST_FIRST = ("hit_rate", "recall", "mrr", "precision", "ndcg", "map", "coverage", "judged")


def _rate(mask: np.ndarray, y: np.ndarray) -> float | None:
    return float(y[mask].mean()) if mask.any() else None


def predict(metric: str, kind: str, k: int, x: np.ndarray, y: np.ndarray, draws: np.ndarray, *, ok_from: float,
            confidence: float) -> MetricPrediction:
    """One metric's prediction of the 0/1 outcomes `y` from its values `x`; `draws` are resampled indices."""
    ok = x >= ok_from
    base = dict(metric=metric, kind=kind, k=k, n=len(y), successes=int(y.sum()), ok_n=int(ok.sum()),
                ok_rate=_rate(ok, y), failed_n=int((~ok).sum()), failed_rate=_rate(~ok, y))
    point = stats.auc(x, y)[0]
    if not np.isfinite(point):
        return MetricPrediction(auc=None, **base)
    distinct, ok_counts, failed_counts = stats.resampled_counts(x, y, draws)
    auc_low, auc_high = stats.interval(stats.counted_auc(ok_counts, failed_counts), confidence)
    (intercept,), (slope,) = stats.logistic(x, y)
    _, slopes = stats.weighted_logistic(distinct, ok_counts, failed_counts)
    slope_low, slope_high = stats.interval(slopes, confidence)
    return MetricPrediction(auc=float(point), auc_low=auc_low, auc_high=auc_high, intercept=float(intercept),
                            slope=float(slope), slope_low=slope_low, slope_high=slope_high,
                            p_at_0=float(stats.probability(intercept, slope, 0.0)),
                            p_at_1=float(stats.probability(intercept, slope, 1.0)),
                            separated=stats.separated(x, y), **base)


def _order(p: MetricPrediction) -> tuple:
    kind = SIMPLEST_FIRST.index(p.kind) if p.kind in SIMPLEST_FIRST else len(SIMPLEST_FIRST)
    return (-(p.auc if p.auc is not None else -1.0), kind, p.k or 10**9)


def rank_predictions(values: Mapping[str, Mapping[str, float]], kinds: Mapping[str, tuple[str, int]],
                     outcomes: Mapping[str, bool], *, ok_from: float, confidence: float, bootstrap: int,
                     seed: int) -> list[MetricPrediction]:
    """Every metric's prediction, best first. Metrics over the same queries share their resamples, so the
    difference of two AUCs has a paired interval."""
    best_draws: dict[tuple[str, ...], np.ndarray] = {}
    out, arrays = [], {}
    for metric, per_query in values.items():
        queries = tuple(sorted(q for q in per_query if q in outcomes))
        if not queries:
            continue
        x = np.array([per_query[q] for q in queries], dtype=np.float64)
        y = np.array([outcomes[q] for q in queries], dtype=np.float64)
        draws = best_draws.setdefault(queries, stats.resample(len(queries), bootstrap, seed))
        kind, k = kinds[metric]
        out.append(predict(metric, kind, k, x, y, draws, ok_from=ok_from, confidence=confidence))
        arrays[metric] = (queries, x, y, draws)
    out.sort(key=_order)
    if out and out[0].auc is not None:
        best_q, best_x, y, draws = arrays[out[0].metric]
        best = stats.counted_auc(*stats.resampled_counts(best_x, y, draws)[1:])
        for p in out[1:]:
            queries, x, _, _ = arrays[p.metric]
            if queries == best_q and p.auc is not None:
                low, _ = stats.interval(best - stats.counted_auc(*stats.resampled_counts(x, y, draws)[1:]),
                                        confidence)
                p.as_good_as_best = low is not None and low <= 0
    return out


def cutoffs(predictions: list[MetricPrediction]) -> list[Cutoff]:
    """Per kind of metric with more than one cutoff: the cutoff whose AUC is highest."""
    by_kind: dict[str, list[MetricPrediction]] = {}
    for p in predictions:
        by_kind.setdefault(p.kind, []).append(p)
    out = []
    for kind, group in by_kind.items():
        if len(group) > 1 and any(p.auc is not None for p in group):
            best = min(group, key=_order)
            out.append(Cutoff(kind=kind, best_k=best.k, auc={p.metric: p.auc for p in sorted(group, key=lambda p: p.k)}))
    return out


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def recommend(predictions: list[MetricPrediction], cuts: list[Cutoff], *, ok_from: float,
              confidence: float) -> Recommendation:
    """In words: which metric to gate on for this product, at which cutoff, and how sure that is."""
    if not predictions or predictions[0].auc is None:
        return Recommendation(metric=None, predictive=False, sentence=(
            "No metric can be judged: every analysed task had the same outcome, so nothing separates success "
            "from failure. Collect outcomes with both results before choosing a gate."))
    best = predictions[0]
    level = f"{100 * confidence:.0f}%"
    interval = f"{level} interval {best.auc_low:.2f}–{best.auc_high:.2f}" if best.auc_low is not None else "no interval"
    if best.auc_low is None or best.auc_low <= 0.5:
        return Recommendation(metric=None, predictive=False, sentence=(
            f"No retrieval metric predicts the downstream outcome here: the best, {best.metric}, has AUC "
            f"{best.auc:.2f} ({interval}, {best.n} queries), which chance alone could give. Do not gate this "
            "product on retrieval metrics yet: the task's failures come from elsewhere, or more outcomes are needed."))
    words = [f"Gate on {best.metric}: it predicts the downstream outcome best (AUC {best.auc:.2f}, {interval}, "
             f"{best.n} queries)."]
    if best.ok_rate is not None and best.failed_rate is not None:
        words.append(f"When {best.metric} >= {ok_from:g} the task succeeded {_pct(best.ok_rate)} of the time "
                     f"({best.ok_n} queries); below it {_pct(best.failed_rate)} ({best.failed_n}).")
    cut = next((c for c in cuts if c.kind == best.kind), None)
    if cut is not None:
        others = ", ".join(f"{m} {a:.2f}" for m, a in cut.auc.items() if m != best.metric and a is not None)
        words.append(f"The cutoff that matters is {best.k} ({others}).")
    alike = [p.metric for p in predictions[1:] if p.as_good_as_best]
    if alike:
        shown = ", ".join(alike[:4]) + (f" and {len(alike) - 4} more" if len(alike) > 4 else "")
        words.append(f"{shown} predict{'s' if len(alike) == 1 else ''} about as well on these queries "
                     "(the resampled difference includes 0).")
    return Recommendation(metric=best.metric, predictive=True, sentence=" ".join(words))
