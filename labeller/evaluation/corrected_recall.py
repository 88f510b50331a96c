"""Recall@k under the pair design: its estimated second-order remainder, which stretches its interval
(labeller.evaluation.corrected_stretch), and a warning where the ratio's linearisation is likely off.

recall@k = hits / relevant, a ratio of two sums over the query's pool pairs. The first-order correction
(labeller.evaluation.corrected_estimate) leaves the ratio's second-order remainder, (B - B0) / B0 (R0 - R) with
B the relevant count and R the recall, which is small only when the model point is near the truth per query. With
few random gold pairs a query it is not: on TREC DL19 with simulated judges (about 7 gold pairs a query) the model
point's relevant count ran 1.6 times the truth on the queries with few relevant pairs, and recall@100 of the runs
whose top 100 holds most of a query's relevant pairs ran 1.2-2 se low, covered 50-63% (benchmarks/README.md).

corrected.contribution gives the run's recall per query at the model point (people's grade where known, else the
prediction of the tilted calibration, corrected._Model with tilt) and each gold pair's first-order effect of its
leave-one-out residual, as for every additive metric; `remainder` adds per query the estimated second-order
remainder (corrected_ideal.second_order with the hits in the numerator) from those terms; corrected_stretch moves
the interval's end on its side by it and by its own interval (DL19, 300 pairs: 50-63% -> 80-87% for those runs by
the mean alone, 87-100% over its interval), and
`linearisation_warnings` warns with it (and, for recall and NDCG alike, where the gold has few pairs a query).
Tried and not kept: adding the remainder to the estimate (noisy: 1.6 times wider); a relevant count nearer the
truth (a per-query prior from the judge's labels with the judge's confusion pooled over the gold, or the true count
itself): the bias goes but the estimate spreads 2-3 times wider, as 1 / B0 scales every gold pair's
effect; the classical ratio-estimator bias (Beale, Tin: the gold pairs' own variance terms), which is about 0 there
(it is the bias of hits over relevant both estimated, not of a linearisation about a model point that is off); a
run-aware prediction (branch pairrecall, 65e6721: on LLMJudge at 300 pairs recall@100's pooled coverage 94-96% ->
87-94%, and a random ranking's on DL19 100% -> 80%); the grouped jackknife's bias correction of the whole estimate
(branch scratch45: bias -1.8 -> -1.4 se at 300 pairs, but the estimate spreads 1.5 times wider; coverage no better);
a model-based posterior in place of the correction (branch scratch49, Dawid-Skene with per-query grade shares: it
spreads imputed relevant pairs over a judge grade's pairs alike, so a run that ranks well is scored low; 0-27% for
the BM25 and strong runs on DL19 and LLMJudge).
"""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_ideal import second_order
from labeller.evaluation.corrected_stretch import mean_remainder

# warn when the mean second-order remainder of a run's recall exceeds this many judge-error se: on TREC DL19 (sim
# judges, 1,200 gold pairs; recall@100 of good runs 70-77% covered before the stretch) every subset's worst run was
# 1.6-2.8 se, on LLMJudge (93-100% covered) 0.75 or less at 1,200 pairs, beyond 1.5 in 3 of 20 subsets at 300
# (benchmarks/README.md)
REMAINDER_SE = 1.5
FEW_PER_QUERY = 10  # ... and when the gold has fewer random pairs a query (DL19 at 300 pairs: 7; LLMJudge: 12)


def remainder(terms, gold: np.ndarray, where: dict[int, int], model) -> float:
    """One query's estimated second-order remainder of recall@k (corrected_ideal.second_order with the hits over
    the relevant count), from the terms of corrected.contribution at the model point: `terms.feature_grad` is 1 /
    the relevant count B0, `terms.value` the recall R0; `gold` the query's gold rows, `where` the rows in the run's
    top k. A gold pair's effect on the hits is its relevance residual where the run's top k holds it, on B0 always."""
    if not len(terms.feature_grad) or not len(gold) or terms.feature_grad[0] <= 0:
        return 0.0  # no ranking (no hits: no remainder), or no relevant pair predicted
    total = 1.0 / float(terms.feature_grad[0])
    residual = model.residual[gold] @ model.relevant
    top = np.array([int(i) in where for i in gold], dtype=np.float64)
    return second_order(terms.value * total, total, residual * top, residual, model.weight[gold])[0]


def linearisation_warnings(pool, parts: dict, runs: dict, specs) -> list[str]:
    """Under the pair design: one warning naming the recall figure whose estimated second-order remainder (the mean
    over queries of `remainder`, Contribution.remainder) is the largest beyond REMAINDER_SE of its judge-error se,
    and one when the gold has under FEW_PER_QUERY random pairs a query and a recall or NDCG figure was linearised
    (stretched by its remainder, corrected_stretch); both name the query design, which needs no linearisation.
    NDCG's remainder gets no warning of its own: its term is already in the estimate, and the few-pairs warning is
    the one that held on DL19 (its near-oracle run covered 70-77% at 7 pairs a query, 77-87% at 28)."""
    kinds = {s.name: s.kind for s in specs}
    stretched = {key: part for key, part in parts.items() if kinds.get(key[1]) in ("recall", "ndcg")}
    out, worst = [], None
    for (run, metric), part in stretched.items():
        value = next((m.corrected for m in runs.get(run, []) if m.metric == metric), None)
        if kinds[metric] != "recall" or part.remainder is None or not part.model or value is None \
                or not value.se_judge:
            continue
        ratio = mean_remainder(part) / value.se_judge
        if abs(ratio) > REMAINDER_SE and (worst is None or abs(ratio) > abs(worst[2]) + 1e-9):  # ties: the first
            worst = (run, metric, ratio)
    if worst is not None:
        out.append(f"{worst[1]} of {worst[0]} (and maybe others): the ratio's second-order remainder, which the "
                   f"first-order correction leaves out, is estimated at {worst[2]:+.2f} judge-error se; its "
                   "intervals are stretched by it on that side, but the estimate of it is itself noisy and the "
                   "interval may still miss the truth; grade whole random queries (--gold-design queries) for recall")
    graded = int(pool.in_gold.sum())
    per_query = graded / max(len(pool.by_query), 1)
    linearised = [k for k in ("recall", "ndcg") if any(kinds[m] == k and p.remainder is not None
                                                       for (_, m), p in stretched.items())]
    if linearised and per_query < FEW_PER_QUERY:
        names = " and ".join({"recall": "recall's", "ndcg": "NDCG's"}[k] for k in linearised)
        out.append(f"{graded} random gold pairs over {len(pool.by_query)} queries ({per_query:.1f} a query): {names} "
                   "ratio is linearised around a prediction few of each query's pairs check, and on a held-out set "
                   "(TREC DL19, 7 a query) the interval, stretched by the estimated remainder, covered 70-90% "
                   "(recall@100, re-ranked BM25 runs) and 70-77% (exponential nDCG@10) for runs that retrieve most "
                   "relevant pairs; grade whole random queries (--gold-design queries) for these metrics")
    return out
