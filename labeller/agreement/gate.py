"""The prompt-change gate: is the new judge (prompt, rubric, model) worse than the old on the same gold?

Both label sets are compared on the gold pairs both graded. The difference new - old of the chosen
metric gets a paired bootstrap interval: each resample draws the same queries for both, so what the two
share (hard queries, easy queries) cancels out.

Verdict (documented in the README and `labeller agree --help`):
- fail when the upper end of the interval of new - old is below -max_drop: even the most favourable
  reading of the data says the new labels lost more than max_drop;
- fail when the new labels' metric (point estimate) is below min_kappa, or undefined;
- pass otherwise. `change` says "better" when the interval's lower end is above 0, "worse" when its
  upper end is below 0, else "no clear change".
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from labeller.agreement import bootstrap as bs
from labeller.agreement.align import AlignedPair, Alignment
from labeller.agreement.alpha import alpha_from_confusion
from labeller.agreement.kappa import binarize_confusion, kappa_from_confusion
from labeller.errors import BadInputError
from labeller.records import Pair, Record

GATE_METRICS = ("kappa", "kappa_linear", "kappa_quadratic", "alpha_ordinal", "kappa_relevant")


class PairChange(Record):
    query_id: str
    doc_id: str
    gold: int
    old: int
    new: int


class GateResult(Record):
    metric: str
    new: float | None
    old: float | None = None
    difference: float | None = None  # new - old
    ci: bs.Interval | None = None  # of the difference
    old_ci: bs.Interval | None = None  # of each side, from the same query resamples as the difference
    new_ci: bs.Interval | None = None
    max_drop: float
    min_kappa: float | None
    pairs: int
    not_in_both: list[Pair] = []  # gold pairs only one of the two label sets graded
    fixed: list[PairChange] = []  # the new grade is closer to the human grade than the old one
    broken: list[PairChange] = []  # the new grade is further away
    verdict: Literal["pass", "fail"]
    change: Literal["better", "worse", "no clear change", "no baseline", "not computable"]
    reasons: list[str]


def metric_of(confusion: np.ndarray, metric: str, relevant_from: int) -> np.ndarray:
    if metric == "alpha_ordinal":
        return alpha_from_confusion(confusion)
    if metric == "kappa_relevant":
        return kappa_from_confusion(binarize_confusion(confusion, relevant_from - 1))
    return kappa_from_confusion(confusion, {"kappa": None, "kappa_linear": "linear", "kappa_quadratic": "quadratic"}[metric])


def _confusions(pairs: list[AlignedPair], queries: dict[str, int], k: int) -> np.ndarray:
    gold = np.array([p.gold for p in pairs])
    judge = np.array([p.judge for p in pairs])
    return bs.per_query_confusions(np.array([queries[p.query_id] for p in pairs]), gold, judge, len(queries), k)


def _number(value: np.ndarray) -> float | None:
    return None if np.isnan(value) else float(value)


def run_gate(new: Alignment, old: Alignment | None, *, metric: str = "kappa", relevant_from: int = 3,
             max_drop: float = 0.02, min_kappa: float | None = None, resamples: int = 1000, seed: int = 0,
             confidence: float = 0.95) -> GateResult:
    if metric not in GATE_METRICS:
        raise BadInputError(f"gate metric '{metric}' is unknown; expected one of {', '.join(GATE_METRICS)}")
    k = max(len(new.grades), len(old.grades) if old else 0)
    reasons: list[str] = []
    if old is None:
        queries = {q: i for i, q in enumerate(dict.fromkeys(p.query_id for p in new.pairs))}
        value = _number(metric_of(_confusions(new.pairs, queries, k).sum(axis=0), metric, relevant_from))
        return _verdict(GateResult(metric=metric, new=value, max_drop=max_drop, min_kappa=min_kappa,
                                   pairs=len(new.pairs), verdict="pass", change="no baseline", reasons=reasons))
    old_by = {(p.query_id, p.doc_id): p for p in old.pairs}
    new_by = {(p.query_id, p.doc_id): p for p in new.pairs}
    both = sorted(old_by.keys() & new_by.keys())
    if not both:
        raise BadInputError("the new and the baseline labels share no gold pair; expected labels of the same pairs")
    queries = {q: i for i, q in enumerate(dict.fromkeys(q for q, _ in both))}
    per_new = _confusions([new_by[p] for p in both], queries, k)
    per_old = _confusions([old_by[p] for p in both], queries, k)
    weights = bs.query_weights(len(queries), resamples, seed)
    boot_new = metric_of(bs.resample(per_new, weights), metric, relevant_from)
    boot_old = metric_of(bs.resample(per_old, weights), metric, relevant_from)
    boot = boot_new - boot_old
    new_value = _number(metric_of(per_new.sum(axis=0), metric, relevant_from))
    old_value = _number(metric_of(per_old.sum(axis=0), metric, relevant_from))
    changes = [PairChange(query_id=q, doc_id=d, gold=new_by[q, d].gold, old=old_by[q, d].judge, new=new_by[q, d].judge)
               for q, d in both if old_by[q, d].judge != new_by[q, d].judge]
    closer = [c for c in changes if abs(c.new - c.gold) < abs(c.old - c.gold)]
    further = [c for c in changes if abs(c.new - c.gold) > abs(c.old - c.gold)]
    interval = bs.interval(boot, confidence)
    change = ("better" if interval.low is not None and interval.low > 0 else
              "worse" if interval.high is not None and interval.high < 0 else "no clear change")
    result = GateResult(
        metric=metric, new=new_value, old=old_value,
        difference=None if new_value is None or old_value is None else new_value - old_value,
        ci=interval, old_ci=bs.interval(boot_old, confidence), new_ci=bs.interval(boot_new, confidence),
        max_drop=max_drop, min_kappa=min_kappa, pairs=len(both),
        not_in_both=[Pair(query_id=q, doc_id=d) for q, d in sorted(old_by.keys() ^ new_by.keys())],
        fixed=sorted(closer, key=lambda c: (-abs(c.old - c.gold), c.query_id, c.doc_id)),
        broken=sorted(further, key=lambda c: (-abs(c.new - c.gold), c.query_id, c.doc_id)),
        verdict="pass", change=change, reasons=reasons)
    if interval.high is not None and interval.high < -max_drop:
        reasons = [f"{metric} {old_value:.3f} -> {new_value:.3f} (delta {result.difference or 0:+.3f}; the new - old "
                   f"interval [{interval.low:+.3f}, {interval.high:+.3f}] lies below -{max_drop:g})"]
    return _verdict(result.model_copy(update={"reasons": reasons}))


def _verdict(result: GateResult) -> GateResult:
    reasons = list(result.reasons)
    if result.pairs < 2:  # a gate that cannot compute its figure must not pass
        reasons.append(f"only {result.pairs} pair to compare: {result.metric} cannot be computed from one pair "
                       "(chance agreement needs at least two)")
        return result.model_copy(update={"new": None, "old": None, "difference": None, "verdict": "fail",
                                         "change": "not computable", "reasons": reasons})
    if result.min_kappa is not None:
        if result.new is None:
            reasons.append(f"{result.metric} of the new labels is undefined (every pair has one grade)")
        elif result.new < result.min_kappa:
            reasons.append(f"{result.metric} of the new labels is {result.new:.3f}, below --min-kappa {result.min_kappa:g}")
    return result.model_copy(update={"verdict": "fail" if reasons else "pass", "reasons": reasons})
