"""Runs side by side: per metric, the mean difference with a bootstrap interval, paired t-test and
randomization test p-values, and per-query wins, losses and ties.

Every run is compared with one reference (the --baseline, else the first --run), on the queries
both averaged: evaluated queries outside the no-answer bucket. A query only one side has is
counted and left out, since a paired test needs both values.
"""

from __future__ import annotations

import numpy as np

from labeller.evaluation.metrics import MetricSpec
from labeller.evaluation.results import Comparison, PairedTest, RunScores
from labeller.evaluation.significance import bootstrap_interval, finite, randomization_test, t_test

TIE = 1e-12


def averaged_queries(scores: RunScores, metric: str) -> set[str]:
    return set(scores.per_query.get(metric, {})) - set(scores.no_answer.query_ids)


def paired(reference: RunScores, run: RunScores, metric: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    shared = sorted(averaged_queries(reference, metric) & averaged_queries(run, metric))
    ref = np.array([reference.per_query[metric][q] for q in shared], dtype=np.float64)
    new = np.array([run.per_query[metric][q] for q in shared], dtype=np.float64)
    return shared, ref, new


def paired_test(reference: RunScores, run: RunScores, metric: str, *, confidence: float = 0.95,
                permutations: int = 10_000, bootstrap: int = 10_000, seed: int = 42) -> PairedTest:
    shared, ref, new = paired(reference, run, metric)
    diffs = new - ref
    low, high = bootstrap_interval(diffs, confidence, bootstrap, seed)
    return PairedTest(
        metric=metric, n=len(shared),
        reference_mean=float(ref.mean()) if len(ref) else None,
        run_mean=float(new.mean()) if len(new) else None,
        difference=float(diffs.mean()) if len(diffs) else None,
        ci_low=low, ci_high=high,
        p_t_test=finite(t_test(ref, new)),
        p_randomization=randomization_test(diffs, permutations, seed),
        wins=int(np.sum(diffs > TIE)), losses=int(np.sum(diffs < -TIE)), ties=int(np.sum(np.abs(diffs) <= TIE)),
    )


def compare(reference: RunScores, run: RunScores, specs: list[MetricSpec], *, confidence: float = 0.95,
            permutations: int = 10_000, bootstrap: int = 10_000, seed: int = 42) -> Comparison:
    tests = [paired_test(reference, run, s.name, confidence=confidence, permutations=permutations,
                         bootstrap=bootstrap, seed=seed) for s in specs]
    first = specs[0].name
    ref_q, run_q = averaged_queries(reference, first), averaged_queries(run, first)
    return Comparison(reference=reference.name, run=run.name, tests=tests, confidence=confidence,
                      permutations=permutations, bootstrap=bootstrap,
                      only_in_reference=len(ref_q - run_q), only_in_run=len(run_q - ref_q))
