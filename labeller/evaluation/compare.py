"""Runs side by side: per metric, the mean difference with a bootstrap interval, paired t-test and
randomization test p-values (two-sided, and one-sided "is the run worse?" for the gate), the
smallest p the tests can reach on these queries, and per-query wins, losses and ties.

Every run is compared with one reference (the --baseline, else the first --run) on the queries
either side averaged (evaluated, outside the no-answer bucket). A query one side lacks scores 0
for that side, as `trec_eval -c` scores a query missing from a run: a candidate that returns
nothing for a query has lost it, and must not be compared on the queries it kept ("union"
pairing). A saved --json baseline carries per-query values only for the queries it was evaluated
on, so a query it lacks may be one its labels never had: then the pairing is the reference's own
queries, the run zero-filled where it lacks one ("reference" pairing), which never credits the
run with a query the baseline could not be scored on. "shared" (both sides only) is the old way.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from labeller.evaluation.metrics import MetricSpec
from labeller.evaluation.results import Comparison, PairedTest, RunScores
from labeller.evaluation.significance import (TIE, bootstrap_interval, differing, finite, randomization_test,
                                              smallest_p, t_test)

Pairing = Literal["union", "reference", "shared"]


def averaged_queries(scores: RunScores, metric: str) -> set[str]:
    return set(scores.per_query.get(metric, {})) - set(scores.no_answer.query_ids)


def compared_queries(reference: RunScores, run: RunScores, metric: str, pairing: Pairing = "union") -> list[str]:
    ref_q, run_q = averaged_queries(reference, metric), averaged_queries(run, metric)
    chosen = {"union": ref_q | run_q, "reference": ref_q, "shared": ref_q & run_q}[pairing]
    return sorted(chosen)


def paired(reference: RunScores, run: RunScores, metric: str,
           pairing: Pairing = "union") -> tuple[list[str], np.ndarray, np.ndarray]:
    """(queries, reference values, run values); a query a side lacks is 0 for it."""
    queries = compared_queries(reference, run, metric, pairing)
    ref_values, run_values = reference.per_query.get(metric, {}), run.per_query.get(metric, {})
    ref = np.array([ref_values.get(q, 0.0) for q in queries], dtype=np.float64)
    new = np.array([run_values.get(q, 0.0) for q in queries], dtype=np.float64)
    return queries, ref, new


def paired_test(reference: RunScores, run: RunScores, metric: str, *, confidence: float = 0.95,
                permutations: int = 10_000, bootstrap: int = 10_000, seed: int = 42,
                pairing: Pairing = "union") -> PairedTest:
    queries, ref, new = paired(reference, run, metric, pairing)
    diffs = new - ref
    low, high = bootstrap_interval(diffs, confidence, bootstrap, seed)
    return PairedTest(
        metric=metric, n=len(queries),
        reference_mean=float(ref.mean()) if len(ref) else None,
        run_mean=float(new.mean()) if len(new) else None,
        difference=float(diffs.mean()) if len(diffs) else None,
        ci_low=low, ci_high=high,
        p_t_test=finite(t_test(ref, new)),
        p_randomization=randomization_test(diffs, permutations, seed),
        p_worse_t_test=finite(t_test(ref, new, alternative="less")),
        p_worse_randomization=randomization_test(diffs, permutations, seed, alternative="less"),
        smallest_p_t_test=smallest_p(diffs, "t-test", permutations),
        smallest_p_randomization=smallest_p(diffs, "randomization", permutations),
        differing=len(differing(diffs)),
        wins=int(np.sum(diffs > TIE)), losses=int(np.sum(diffs < -TIE)), ties=int(np.sum(np.abs(diffs) <= TIE)),
    )


def not_comparable(reference: RunScores, run: RunScores, metric: str) -> str | None:
    """Why the two cannot be compared at all, or None: a gate over nothing could only pass."""
    ref_q, run_q = averaged_queries(reference, metric), averaged_queries(run, metric)
    if not ref_q and not run_q:
        evaluated = set(reference.per_query.get(metric, {})) | set(run.per_query.get(metric, {}))
        if not evaluated:
            return f"neither {reference.name} nor {run.name} was evaluated on any judged query"
        level = run.no_answer.relevant_from
        return (f"every one of the {len(evaluated)} evaluated queries is in the no-answer bucket: no judged "
                f"document is graded >= {level} (--relevant-from {level}), so no query has an answer to find")
    if not ref_q & run_q:
        return (f"no shared queries: {reference.name} was averaged over {len(ref_q)} queries and {run.name} over "
                f"{len(run_q)}, none of them the same")
    return None


def compare(reference: RunScores, run: RunScores, specs: list[MetricSpec], *, confidence: float = 0.95,
            permutations: int = 10_000, bootstrap: int = 10_000, seed: int = 42,
            pairing: Pairing = "union") -> Comparison:
    tests = [paired_test(reference, run, s.name, confidence=confidence, permutations=permutations,
                         bootstrap=bootstrap, seed=seed, pairing=pairing) for s in specs]
    first = specs[0].name
    ref_q, run_q = averaged_queries(reference, first), averaged_queries(run, first)
    return Comparison(reference=reference.name, run=run.name, tests=tests, confidence=confidence,
                      permutations=permutations, bootstrap=bootstrap, pairing=pairing,
                      only_in_reference=len(ref_q - run_q), only_in_run=len(run_q - ref_q),
                      not_comparable=not_comparable(reference, run, first))
