"""A ratio's interval stretched by its estimated second-order remainder, under the pair design without a certain
stratum: recall@k (hits over the relevant count) and NDCG@k (DCG over the expected ideal DCG).

Both are linearised about the model point (labeller.evaluation.corrected_estimate), which leaves the ratio's
second-order remainder; corrected_ideal.second_order estimates its second-order term per query from the gold
pairs' residuals (recall: corrected_recall.remainder; NDCG: corrected._expected_ndcg). With few gold pairs a query
the remainder is large and one-signed for a run near the truth's ranking, and the interval missed on that side:
on TREC DL19 with simulated judges (about 7 gold pairs a query) recall@100 of the runs whose top 100 holds most
relevant pairs covered 50-63% at 300 pairs (80-87% stretched), and the near-oracle run's exponential nDCG@10 ran
about 1 se low, covered 67-87% (the term, added to NDCG's estimate, was about half the remainder beyond first
order: benchmarks/README.md, "Held out"). `stretched` moves the interval's end on the term's side by it, once
(no multiplier tuned on the held-out set). Recall's estimate is not moved by it (as a shift the noisy remainder
spread the estimate 1.6 times wider); NDCG's already holds the term, and the stretch takes the part the term
likely missed as large again.

The remainder is itself estimated from the same few gold pairs, so the stretch reaches over its own interval: the
mean over queries ± the confidence level's t quantile (Q - 1 degrees of freedom) times its standard error over the
queries (their per-query terms' standard deviation over sqrt(Q)), each end kept on its side of 0 so the first-order
interval stays inside. A stretch by the mean alone left recall@100 short on DL19 at 300 pairs (rerankers of the
BM25 run 73-90% per run, the six runs 80-100%; 87-100% and 93-100% over the remainder's interval, 30 subsets;
benchmarks/README.md, "Stop 50").
"""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_estimate import student


def mean_remainder(part) -> float:
    """The run's estimated second-order remainder: the mean over queries of Contribution.remainder."""
    return float(np.sum(list(part.remainder.values()))) / len(part.model)


def remainder_interval(part, confidence: float, blind=None, power_lambda: float | None = None) -> tuple[float, float]:
    """(mean, reach) of the run's per-query remainders (a query without one counts 0; after power tuning the blend
    lambda * the judge's + (1 - lambda) * the judge-free estimate's, query by query): their mean over the queries,
    and the t quantile (Q - 1 degrees of freedom) times its standard error over the queries (0 with one query)."""
    queries = list(part.model)
    terms = np.array([part.remainder.get(q, 0.0) for q in queries])
    if power_lambda is not None and blind is not None and blind.remainder is not None and blind.model:
        terms = power_lambda * terms + (1.0 - power_lambda) * np.array([blind.remainder.get(q, 0.0) for q in queries])
    se = float(np.std(terms, ddof=1) / np.sqrt(len(terms))) if len(terms) > 1 else 0.0
    return float(terms.mean()), se * student(confidence, len(terms) - 1) if se else 0.0


def stretched(value, part, blind=None, confidence: float = 0.95):
    """The interval (both ends) stretched by the run's estimated second-order remainder (corrected_recall.remainder,
    corrected._expected_ndcg) and its own interval: the low end down to the remainder interval's low end where that
    is below 0, the high end up to its high end where above 0. For a difference of runs `part` is the run's less the
    reference's (Contribution.minus). The estimate is not moved. Without a `remainder` (any other metric or design)
    the value is returned as it is."""
    if part.remainder is None or not part.model or value.estimate is None or value.ci_low is None:
        return value
    shift, reach = remainder_interval(part, confidence, blind, value.power_lambda)
    low, high = _moves(shift, reach)
    update = {"remainder": shift, "remainder_reach": reach,
              "ci_low": value.ci_low + low, "ci_high": value.ci_high + high}
    if value.ci_low_queries is not None:
        update |= {"ci_low_queries": value.ci_low_queries + low, "ci_high_queries": value.ci_high_queries + high}
    return value.model_copy(update=update)


def stretched_up(value) -> float:
    """How far a figure's interval was stretched up (`stretched`): the remainder interval's upper end where above 0,
    else 0 (and 0 for a figure not stretched). The gate's p_worse does not take it (corrected_estimate.p_worse)."""
    if value.remainder is None or value.remainder_reach is None:
        return 0.0
    return _moves(value.remainder, value.remainder_reach)[1]


def _moves(shift: float, reach: float) -> tuple[float, float]:
    """How far the low and high ends move: to the remainder interval's ends, each kept on its side of 0."""
    return min(shift - reach, 0.0), max(shift + reach, 0.0)
