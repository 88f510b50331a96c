"""Prediction-powered estimate of the share of relevant pairs (Angelopoulos et al. 2023; used by ARES).

The judge labels many pairs; people graded a few of them. The judge's own share of relevant pairs is
biased by however generous or strict it is. Prediction-powered inference corrects it with the gold
pairs: estimate = (judge's share on the unlabelled pairs) + (mean of human minus judge relevance on the
gold pairs), and the interval adds the uncertainty of both parts. It is valid when the gold pairs are a
uniform random sample of all labelled pairs.

The stratified variant fits gold sets sampled across the judge's grades (as gold/README.md advises):
within each judge grade it takes the share people found relevant, weighted by how often the judge gave
that grade over all pairs. A judge grade with no gold pair at all is bounded rather than guessed: its
share could be anything from 0 to 1, and the interval widens by its weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from labeller.agreement.bootstrap import Interval


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def classic_ppi(gold: Sequence[int], judge_on_gold: Sequence[int], judge_unlabelled: Sequence[int],
                relevant_from: int, confidence: float = 0.95) -> tuple[float, Interval]:
    """PPI mean estimate of P(human grade >= relevant_from) with a normal-approximation interval."""
    y = np.asarray(gold) >= relevant_from
    y_hat = np.asarray(judge_on_gold) >= relevant_from
    u_hat = np.asarray(judge_unlabelled) >= relevant_from
    rectifier = y.astype(float) - y_hat
    estimate = u_hat.mean() + rectifier.mean()
    se = np.sqrt(u_hat.var(ddof=1) / len(u_hat) + rectifier.var(ddof=1) / len(y))
    half = _z(confidence) * se
    return float(estimate), Interval(low=float(estimate - half), high=float(estimate + half))


def stratified_ppi(gold: Sequence[int], judge_on_gold: Sequence[int], judge_unlabelled: Sequence[int],
                   relevant_from: int, confidence: float = 0.95) -> tuple[float, Interval]:
    """Per-judge-grade share of human-relevant pairs, weighted by the judge's grade distribution."""
    y = np.asarray(gold) >= relevant_from
    strata = np.asarray(judge_on_gold)
    everyone = np.concatenate([strata, np.asarray(judge_unlabelled)])
    estimate = variance = unknown = 0.0
    for grade in np.unique(everyone):
        weight = float(np.mean(everyone == grade))
        in_stratum = y[strata == grade]
        if len(in_stratum) == 0:
            estimate += weight * float(grade >= relevant_from)  # the judge's call, bounded below
            unknown += weight
            continue
        share = float(in_stratum.mean())
        estimate += weight * share
        # shrink 0/1 shares a little so a small all-agreeing stratum does not claim zero variance
        smoothed = (in_stratum.sum() + 0.5) / (len(in_stratum) + 1)
        variance += weight**2 * smoothed * (1 - smoothed) / len(in_stratum)
    half = _z(confidence) * np.sqrt(variance)
    judged_relevant = sum(float(np.mean(everyone == g)) for g in np.unique(everyone)
                          if g >= relevant_from and not np.any(strata == g))
    low = estimate - judged_relevant - half  # unknown strata might hold no relevant pair...
    high = estimate + (unknown - judged_relevant) + half  # ...or only relevant pairs
    return float(estimate), Interval(low=float(max(low, 0.0)), high=float(min(high, 1.0)))
