"""The downstream-weighted gate: does the run's retrieval predict fewer successful tasks than the baseline's?

The outcome model is the logistic fit of the task's success on the gating metric, fitted on the queries whose
outcomes are known (with the retrieval that led to them). Each run's predicted success rate is the mean fitted
chance over the same queries; the drop is baseline minus run, with a bootstrap interval (queries resampled,
the model refitted). A metric drop on queries whose outcome does not depend on it moves the prediction little
or not at all, so the gate fails on what the product would lose, not on every wobble of a metric. It fails
when the predicted drop is above the threshold, and when nothing can be compared.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from labeller.outcomes import stats
from labeller.outcomes.results import DownstreamGate
from labeller.outcomes.table import OutcomeRow

DEFAULT_MAX_DROP = 0.02


def downstream_gate(metric: str, baseline_name: str, fit_values: Mapping[str, float],
                    outcomes: Mapping[str, OutcomeRow], baseline: Mapping[str, float], run: Mapping[str, float], *,
                    ok_from: float, threshold: float = DEFAULT_MAX_DROP, confidence: float = 0.95,
                    bootstrap: int = 1000, seed: int = 42) -> DownstreamGate:
    """`fit_values`: the metric on the run whose outcomes are known; `baseline`/`run`: the metric on the two runs
    compared (a query a run lacks scores 0: nothing retrieved)."""
    queries = sorted(q for q in fit_values if q in outcomes)
    common = dict(metric=metric, baseline=baseline_name, threshold=threshold)
    if not queries:
        return DownstreamGate(baseline_rate=None, run_rate=None, drop=None, passed=False, **common,
                              reason="no query has both an outcome and a value: nothing to compare, so the gate fails")
    x = np.array([fit_values[q] for q in queries])
    y = np.array([outcomes[q].success for q in queries], dtype=np.float64)
    old = np.array([baseline.get(q, 0.0) for q in queries])
    new = np.array([run.get(q, 0.0) for q in queries])
    (intercept,), (slope,) = stats.logistic(x, y)
    base_rate = float(stats.probability(intercept, slope, old).mean())
    run_rate = float(stats.probability(intercept, slope, new).mean())
    draws = stats.resample(len(queries), bootstrap, seed)
    intercepts, slopes = stats.logistic(x[draws], y[draws])
    drops = (stats.probability(intercepts[:, None], slopes[:, None], old[draws]).mean(axis=1)
             - stats.probability(intercepts[:, None], slopes[:, None], new[draws]).mean(axis=1))
    low, high = stats.interval(drops, confidence)
    drop = base_rate - run_rate
    at_risk = [q for q, a, b in zip(queries, old, new) if outcomes[q].success and a >= ok_from > b]
    passed = drop <= threshold
    reason = (f"predicted task success {base_rate:.3f} with the baseline's retrieval, {run_rate:.3f} with the run's "
              f"(drop {drop:+.3f}, {100 * confidence:.0f}% interval {low:+.3f} to {high:+.3f}; "
              f"{'within' if passed else 'above'} the threshold {threshold:g}) by {metric}; "
              f"{len(at_risk)} succeeded task{'s' if len(at_risk) != 1 else ''} lost {metric} >= {ok_from:g}")
    return DownstreamGate(baseline_rate=base_rate, run_rate=run_rate, drop=drop, drop_low=low, drop_high=high,
                          at_risk=at_risk, passed=passed, reason=reason, **common)


def no_model_gate(baseline_name: str, threshold: float) -> DownstreamGate:
    """Every outcome alike: no model to predict today's outcomes with, so nothing to compare, and the gate fails."""
    return DownstreamGate(metric="–", baseline=baseline_name, baseline_rate=None, run_rate=None, drop=None,
                          threshold=threshold, passed=False,
                          reason="every outcome is the same, so no metric can be fitted to them: nothing to compare "
                                 "the runs by (collect outcomes with both results, or name the metric to gate on)")
