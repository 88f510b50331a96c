"""Paired tests on per-query differences: t-test, randomization test, bootstrap interval.

The t-test is the one ranx.compare runs: ranx's paired_student_t_test is scipy's ttest_rel,
called here directly (importing ranx.statistical_tests would import all of ranx, ~1 s).

The randomization test is our own, because ranx's `fisher_randomization_test` draws its
permutations inside numba's parallel loop, where the seed it is given does not reach the worker
threads: the same call returns p = 0.897 .. 0.929 from run to run (measured), and a CI gate must
not flip on a re-run. Ours flips the sign of each query's
difference (the same null hypothesis: the two runs are exchangeable per query) with a seeded
numpy generator, and enumerates all 2^n sign patterns exactly when n <= 16.
"""

from __future__ import annotations

import math

import numpy as np

EXACT_UP_TO = 16
_CHUNK = 2_000_000  # values per block: keeps memory flat for 10k-query runs


def t_test(reference: np.ndarray, run: np.ndarray) -> float | None:
    """Two-sided paired Student's t-test p-value; None with fewer than two queries."""
    if len(reference) < 2:
        return None
    diffs = run - reference
    if np.allclose(diffs, diffs[0], rtol=0, atol=1e-15):  # no variance: scipy would return nan
        return 1.0 if abs(diffs[0]) <= 1e-15 else 0.0
    from scipy.stats import ttest_rel

    return float(ttest_rel(reference, run, alternative="two-sided").pvalue)


def randomization_test(diffs: np.ndarray, permutations: int = 10_000, seed: int = 42) -> float | None:
    """Two-sided paired randomization test of mean(diffs) = 0; None without queries."""
    n = len(diffs)
    if n == 0:
        return None
    observed = abs(float(diffs.mean()))
    if observed <= 1e-15:
        return 1.0
    tolerance = 1e-12 * max(1.0, observed)  # a permuted mean equal to the observed one counts
    if n <= EXACT_UP_TO:
        patterns = np.arange(2**n)[:, None] >> np.arange(n) & 1
        means = ((1 - 2 * patterns) * diffs).mean(axis=1)
        return float(np.mean(np.abs(means) >= observed - tolerance))
    rng = np.random.default_rng(seed)
    extreme, done, block = 0, 0, max(1, _CHUNK // n)
    while done < permutations:
        size = min(block, permutations - done)
        signs = rng.integers(0, 2, size=(size, n)) * 2 - 1
        extreme += int(np.sum(np.abs((signs * diffs).mean(axis=1)) >= observed - tolerance))
        done += size
    # (extreme + 1) / (permutations + 1): the observed assignment is one of the permutations,
    # so an estimated p is never 0.
    return (extreme + 1) / (permutations + 1)


def bootstrap_interval(diffs: np.ndarray, confidence: float = 0.95, resamples: int = 10_000,
                       seed: int = 42) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean difference (queries resampled with replacement)."""
    n = len(diffs)
    if n == 0:
        return None, None
    rng = np.random.default_rng(seed)
    means, block = [], max(1, _CHUNK // n)
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        means.append(diffs[rng.integers(0, n, size=(size, n))].mean(axis=1))
    all_means = np.concatenate(means)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(all_means, [tail, 100 - tail])
    return float(low), float(high)


def finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value
