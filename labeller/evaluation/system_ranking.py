"""Do LLM labels order retrievers the way human labels do?

Each run is scored twice, under the primary labels (usually human) and under alternative labels
(usually an LLM judge's); per metric, Kendall's tau (tau-b, which handles ties) and Spearman's rho
between the two lists of run means say how far the system orderings agree. This is the question
that decides whether LLM labels can replace people when choosing between retrievers.

The means used are the trec_eval-comparable ones (no-answer queries included): the two label sets
may disagree on which queries have an answer, and published agreement figures (e.g. the LLMJudge
challenge's) are computed from trec_eval means.
"""

from __future__ import annotations

import math
import warnings

from labeller.errors import BadInputError
from labeller.evaluation.metrics import MetricSpec
from labeller.evaluation.results import RankingAgreement, RunScores, SystemRanking


def _finite(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def agreement(primary: dict[str, float | None], alternative: dict[str, float | None],
              metric: str) -> RankingAgreement:
    from scipy.stats import kendalltau, spearmanr

    runs = [r for r in primary if primary[r] is not None and alternative.get(r) is not None]
    tau = tau_p = rho = rho_p = None
    if len(runs) >= 2:
        x, y = [primary[r] for r in runs], [alternative[r] for r in runs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # all runs tied on a metric: no ordering, reported as None
            kt, sr = kendalltau(x, y), spearmanr(x, y)
        tau, tau_p, rho, rho_p = (_finite(v) for v in (kt.statistic, kt.pvalue, sr.statistic, sr.pvalue))
    return RankingAgreement(metric=metric, kendall_tau=tau, kendall_p=tau_p, spearman_rho=rho, spearman_p=rho_p,
                            primary=primary, alternative=alternative)


def system_ranking(primary: dict[str, RunScores], alternative: dict[str, RunScores], specs: list[MetricSpec],
                   primary_labels: str, alternative_labels: str) -> SystemRanking:
    if len(primary) < 2:
        raise BadInputError("comparing system rankings needs at least two runs; give --run several times",
                            field="labels_alt")
    metrics = [agreement({n: s.trec_eval[m.name] for n, s in primary.items()},
                         {n: s.trec_eval[m.name] for n, s in alternative.items()}, m.name) for m in specs]
    return SystemRanking(primary_labels=primary_labels, alternative_labels=alternative_labels,
                         runs=list(primary), metrics=metrics, alternative_scores=alternative)
