"""Recall@k under the pair design: its terms, the estimated second-order remainder, and a warning where the ratio's
linearisation is likely off.

recall@k = hits / relevant, a ratio of two sums over the query's pool pairs. The first-order correction
(labeller.evaluation.corrected_estimate) leaves the ratio's second-order remainder, (B - B0) / B0 (R0 - R) with
B the relevant count and R the recall, which is small only when the model point is near the truth per query. With
few random gold pairs a query it is not: on TREC DL19 with simulated judges (about 7 gold pairs a query) recall@100
of the runs whose top 100 holds most of a query's relevant pairs covered about half the time (benchmarks/README.md).

`recall_contribution` gives the run's recall per query at the model point (people's grade where known, else the
prediction of `model`: the tilted calibration, corrected._Model with tilt), each gold pair's first-order effect of
its leave-one-out residual, and per query the estimated remainder (corrected_ideal.second_order with the hits in
the numerator). The remainder is not added to the estimate (tried: noisy, 1.6 times wider); `recall_warnings`
warns with it. A run-aware prediction (the log odds moved by how much more often a judge grade's gold pairs are
relevant inside the run's top k than overall, the pair's place in the run a covariate) was measured and not kept
(branch pairrecall, 65e6721): on DL19 it lifts the good runs' coverage (BM25 53% -> 70% at 300 gold pairs) but
drops a random ranking's (100% -> 80%), on LLMJudge at 300 pairs recall@100's (94-96% -> 87-94% pooled), and with
gold that agrees with the judge it moves the figure off the plain.
"""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_estimate import Contribution
from labeller.evaluation.corrected_ideal import second_order

# warn when the mean second-order remainder of a run's recall exceeds this many judge-error se: on TREC DL19 (sim
# judges, 1,200 gold pairs; recall@100 of good runs 70-77% covered) every subset's worst run was 1.6-2.8 se, on
# LLMJudge (93-100% covered) 0.75 or less at 1,200 pairs, beyond 1.5 in 3 of 20 subsets at 300 (benchmarks/README.md)
REMAINDER_SE = 1.5
FEW_PER_QUERY = 10  # ... and when the gold has fewer random pairs a query (DL19 at 300 pairs: 7; LLMJudge: 12)


def recall_contribution(ranking, queries: list[str], spec, model, positions) -> Contribution:
    """The run's recall@k per query at the model point (people's grade where known), each gold pair's first-order
    effect of its leave-one-out residual, and per query the estimated second-order remainder."""
    pool, gold = model.pool, model.pool.in_gold
    cut = {q: positions(ranking, pool, q, spec.k)[0] for q in queries}
    top = np.zeros(len(pool.judge))
    for pos in cut.values():
        top[pos[pos >= 0]] = 1.0
    predicted = left_out = model.expected @ model.relevant  # a gold pair's expected is already without its own grade
    rel = (pool.human >= model.relevant_from).astype(np.float64)
    point = np.where(gold, rel, predicted)
    residual = np.where(gold, rel - left_out, 0.0)
    plain_rel = (pool.judge >= model.relevant_from).astype(np.float64)
    out = Contribution({}, {})
    out.remainder = {}
    for q in queries:
        rows = pool.by_query.get(q, np.zeros(0, dtype=np.int64))
        mine = cut[q][cut[q] >= 0]
        out.plain[q] = _ratio(plain_rel[mine].sum(), plain_rel[rows].sum())
        hits, total = float(point[mine].sum()), float(point[rows].sum())
        out.model[q] = _ratio(hits, total)
        if total <= 1e-12:
            continue
        g = rows[gold[rows]]
        numerator, denominator = residual[g] * top[g], residual[g]
        for i, z in zip(g.tolist(), numerator / total - hits / total**2 * denominator):
            if z:
                out.influence[i] = float(z)
        out.remainder[q] = second_order(hits, total, numerator, denominator, model.weight[g])[0]
    return out


def _ratio(a: float, b: float) -> float:
    return float(a / b) if b > 1e-12 else 0.0


def recall_warnings(pool, parts: dict, runs: dict) -> list[str]:
    """Under the pair design: one warning naming the recall figure whose estimated second-order remainder (the mean
    over queries of `remainder`) is the largest beyond REMAINDER_SE of its judge-error se, and one when the gold has
    under FEW_PER_QUERY random pairs a query; both name the query design, under which recall needs no linearisation."""
    out, worst = [], None
    for (run, metric), part in parts.items():
        remainder = getattr(part, "remainder", None)
        value = next((m.corrected for m in runs.get(run, []) if m.metric == metric), None)
        if remainder is None or not part.model or value is None or not value.se_judge:
            continue
        ratio = float(np.sum(list(remainder.values()))) / len(part.model) / value.se_judge
        if abs(ratio) > REMAINDER_SE and (worst is None or abs(ratio) > abs(worst[2])):
            worst = (run, metric, ratio)
    if worst is not None:
        out.append(f"{worst[1]} of {worst[0]} (and maybe others): the ratio's second-order remainder, which the "
                   f"first-order correction leaves out, is estimated at {worst[2]:+.2f} judge-error se, so its "
                   "interval may miss the truth (the estimate is itself noisy); grade whole random queries "
                   "(--gold-design queries) for recall")
    graded = int(pool.in_gold.sum())
    per_query = graded / max(len(pool.by_query), 1)
    if any(getattr(p, "remainder", None) is not None for p in parts.values()) and per_query < FEW_PER_QUERY:
        out.append(f"{graded} random gold pairs over {len(pool.by_query)} queries ({per_query:.1f} a query): recall's "
                   "ratio is linearised around a prediction few of each query's pairs check, and on a held-out set "
                   "(TREC DL19) its interval covered 50-75% for runs that retrieve most relevant pairs; grade whole "
                   "random queries (--gold-design queries) for recall")
    return out
