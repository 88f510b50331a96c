"""Compute every agreement figure for one alignment of judge labels with human gold."""

from __future__ import annotations

import numpy as np

from labeller.agreement import bootstrap as bs
from labeller.agreement.align import Alignment
from labeller.agreement.alpha import alpha_from_confusion, ordinal_alpha
from labeller.agreement.ceiling import human_ceiling
from labeller.agreement.correlation import (exact_agreement, kendall, kendall_from_confusion, mean_signed_difference,
                                            spearman, spearman_from_confusion, within_one)
from labeller.agreement.kappa import WEIGHTINGS, binarize_confusion, binary_kappa, cohen_kappa, kappa_from_confusion
from labeller.agreement.ppi import classic_ppi, stratified_ppi
from labeller.agreement.summary import (Agreement, BaseRates, BootstrapInfo, Clipping, Confusion, GradeScore,
                                        Intervals, OneSideOnly, PredictionPowered)
from labeller.errors import BadInputError
from labeller.records import GRADE_MAX

CUTS = range(2, GRADE_MAX + 1)  # relevant from grade 2, 3, 4 or 5
MIN_PAIRS = 2  # kappa, alpha and the correlations need two pairs at least: below, they cannot be computed


def arrays(alignment: Alignment) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Human grades, judge grades, query index of each pair, and the number of queries."""
    queries = {q: i for i, q in enumerate(dict.fromkeys(p.query_id for p in alignment.pairs))}
    gold = np.array([p.gold for p in alignment.pairs])
    judge = np.array([p.judge for p in alignment.pairs])
    return gold, judge, np.array([queries[p.query_id] for p in alignment.pairs]), len(queries)


def _ratio(top: int, bottom: int) -> float | None:
    return top / bottom if bottom else None


def measure(alignment: Alignment, *, relevant_from: int = 3, resamples: int = 1000, seed: int = 0,
            confidence: float = 0.95, min_diff: int = 2, clip: bool = False) -> Agreement:
    if relevant_from not in CUTS:
        raise BadInputError(f"--relevant-from {relevant_from} is not a grade from 2 to {GRADE_MAX}")
    if resamples < 1:
        raise BadInputError(f"--bootstrap {resamples} must be at least 1")
    grades = alignment.grades
    gold, judge, query_index, n_queries = arrays(alignment)
    per_query = bs.per_query_confusions(query_index, gold, judge, n_queries, len(grades))
    confusion = per_query.sum(axis=0)
    boot = bs.resample(per_query, bs.query_weights(n_queries, resamples, seed))

    def ci(values: np.ndarray) -> bs.Interval:
        return bs.interval(values, confidence)

    kappas = {name: cohen_kappa(gold, judge, grades, w) for name, w in WEIGHTINGS.items()}
    binary = {str(r): binary_kappa(gold, judge, r) for r in CUTS}
    if len(gold) < MIN_PAIRS:  # one pair: chance agreement cannot be estimated; 0.000 "0 to 0" would be a guess
        kappas, binary = dict.fromkeys(kappas), dict.fromkeys(binary)
    intervals = Intervals(
        **{name: ci(kappa_from_confusion(boot, w)) for name, w in WEIGHTINGS.items()},
        alpha_ordinal=ci(alpha_from_confusion(boot)),
        kappa_binary={str(r): ci(kappa_from_confusion(binarize_confusion(boot, r - 1))) for r in CUTS},
        spearman=ci(spearman_from_confusion(boot)), kendall=ci(kendall_from_confusion(boot)),
        exact_agreement=ci(exact_agreement(boot)), within_one=ci(within_one(boot)),
        mean_signed_difference=ci(mean_signed_difference(boot)))
    judge_counts, gold_counts = confusion.sum(axis=0).astype(int), confusion.sum(axis=1).astype(int)
    per_grade = [GradeScore(grade=g, precision=_ratio(int(confusion[i, i]), int(judge_counts[i])),
                            recall=_ratio(int(confusion[i, i]), int(gold_counts[i])),
                            judge_count=int(judge_counts[i]), gold_count=int(gold_counts[i]))
                 for i, g in enumerate(grades)]
    n = len(gold)
    differences = judge - gold
    if n < MIN_PAIRS:
        undefined = bs.Interval(low=None, high=None)
        intervals = intervals.model_copy(update={
            **dict.fromkeys(("alpha_ordinal", "spearman", "kendall", *WEIGHTINGS), undefined),
            "kappa_binary": dict.fromkeys(binary, undefined)})
    return Agreement(
        n=n, queries=n_queries, relevant_from=relevant_from, **kappas,
        alpha_ordinal=ordinal_alpha(np.stack([gold, judge], axis=1), grades) if n >= MIN_PAIRS else None,
        kappa_binary=binary, kappa_relevant=binary[str(relevant_from)],
        spearman=spearman(gold, judge) if n >= MIN_PAIRS else None,
        kendall=kendall(gold, judge) if n >= MIN_PAIRS else None,
        exact_agreement=float(exact_agreement(confusion)), within_one=float(within_one(confusion)),
        mean_signed_difference=float(mean_signed_difference(confusion)), ci=intervals,
        confusion=Confusion(grades=grades, matrix=confusion.astype(int).tolist()), per_grade=per_grade,
        base_rates=BaseRates(judge={str(g): float(judge_counts[i] / n) for i, g in enumerate(grades)},
                             gold={str(g): float(gold_counts[i] / n) for i, g in enumerate(grades)}),
        one_side_only=OneSideOnly(labels_only=len(alignment.labels_only), gold_only=len(alignment.gold_only),
                                  labels_only_pairs=alignment.labels_only, gold_only_pairs=alignment.gold_only),
        clipping=Clipping(enabled=clip, count=len(alignment.clipped), rows=alignment.clipped),
        too_generous=int((differences >= min_diff).sum()), too_strict=int((differences <= -min_diff).sum()),
        min_diff=min_diff, ceiling=human_ceiling(alignment.pairs, grades),
        prediction_powered=prediction_powered(alignment, gold, judge, relevant_from, confidence),
        bootstrap=BootstrapInfo(resamples=resamples, seed=seed, queries=n_queries, confidence=confidence))


def prediction_powered(alignment: Alignment, gold: np.ndarray, judge: np.ndarray, relevant_from: int,
                       confidence: float) -> PredictionPowered | None:
    """None unless the label file has at least two pairs beyond the gold set (the large unlabelled part)."""
    unlabelled = np.array(alignment.labels_only_grades)
    if len(unlabelled) < 2 or len(gold) < 2:
        return None
    classic, classic_ci = classic_ppi(gold, judge, unlabelled, relevant_from, confidence)
    stratified, stratified_ci = stratified_ppi(gold, judge, unlabelled, relevant_from, confidence)
    return PredictionPowered(relevant_from=relevant_from, n_gold=len(gold), n_unlabelled=len(unlabelled),
                             judge_only_share=float(np.mean(np.concatenate([judge, unlabelled]) >= relevant_from)),
                             classic_estimate=classic, classic=classic_ci, stratified_estimate=stratified,
                             stratified=stratified_ci, confidence=confidence)
