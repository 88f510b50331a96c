"""Paired tests on per-query differences: t-test, randomization test, bootstrap interval, and the
smallest p-value a test can reach on the queries at hand.

The t-test is the one ranx.compare runs: ranx's paired_student_t_test is scipy's ttest_rel,
called here directly (importing ranx.statistical_tests would import all of ranx, ~1 s).

The randomization test is our own, because ranx's `fisher_randomization_test` draws its
permutations inside numba's parallel loop, where the seed it is given does not reach the worker
threads: the same call returns p = 0.897 .. 0.929 from run to run (measured), and a CI gate must
not flip on a re-run. Ours flips the sign of each query's difference (the same null hypothesis:
the two runs are exchangeable per query) with a seeded numpy generator. A query whose difference
is 0 looks the same under either sign, so only the m queries that differ are flipped: the test is
exact (all 2^m sign patterns) when m <= EXACT_UP_TO, whatever the number of tied queries.

Both tests answer either the two-sided question of a comparison ("do the runs differ?") or the
one-sided question of a regression gate ("is the run worse?", alternative="less").

`smallest_p` is the floor a test cannot go below on given differences, whatever their sizes: an
exact sign-flip test over m differing queries cannot give less than 2^-m (the one pattern where
every one of them is a loss), so with 4 differing queries no exact test rejects at 0.05. The
t-test gets the same floor on top of its own bound: a t-test "significant" on fewer differing
queries than any exact test could be owes it to assuming 4 numbers are normally distributed. A gate
whose floor is >= alpha cannot reject and must not pretend it tested anything.
"""

from __future__ import annotations

import math

import numpy as np

EXACT_UP_TO = 20
TIE = 1e-12  # differences this small are ties (float noise between equal rankings)
_CHUNK = 2_000_000  # values per block: keeps memory flat for 10k-query runs
ALTERNATIVES = ("two-sided", "less")


def differing(diffs: np.ndarray) -> np.ndarray:
    """The differences that are not ties."""
    return diffs[np.abs(diffs) > TIE]


def t_test(reference: np.ndarray, run: np.ndarray, alternative: str = "two-sided") -> float | None:
    """Paired Student's t-test p-value ("less": the run is worse); None with fewer than two queries."""
    if len(reference) < 2:
        return None
    diffs = run - reference
    if np.allclose(diffs, diffs[0], rtol=0, atol=1e-15):  # no variance: scipy would return nan
        if abs(diffs[0]) <= 1e-15:
            return 1.0
        return 0.0 if alternative == "two-sided" or diffs[0] < 0 else 1.0
    from scipy.stats import ttest_rel

    return float(ttest_rel(run, reference, alternative=alternative).pvalue)


def _tail(means: np.ndarray, observed: float, tolerance: float, alternative: str) -> int:
    """How many sign patterns are at least as extreme as the observed mean."""
    if alternative == "less":
        return int(np.sum(means <= observed + tolerance))
    return int(np.sum(np.abs(means) >= abs(observed) - tolerance))


def _signed_sums(values: np.ndarray) -> np.ndarray:
    """The sums of all 2^len(values) sign patterns of values."""
    sums = np.zeros(1)
    for value in values:
        sums = np.concatenate([sums + value, sums - value])
    return sums


def _exact_tail(moving: np.ndarray, observed: float, tolerance: float, alternative: str) -> int:
    """_tail over all 2^m sign patterns, met in the middle: every pattern's sum is a sum of one
    half's pattern (a) and the other's (b), so counting a + b beyond a bound is a binary search of
    the sorted b for each a: 2 x 2^(m/2) sums instead of 2^m."""
    half = len(moving) // 2
    first, second = _signed_sums(moving[:half]), np.sort(_signed_sums(moving[half:]))
    if alternative == "less":
        return int(np.searchsorted(second, observed + tolerance - first, side="right").sum())
    bound = abs(observed) - tolerance
    if bound <= 0:  # |sum| >= a bound <= 0 holds for every pattern
        return len(first) * len(second)
    above = len(second) - np.searchsorted(second, bound - first, side="left")
    below = np.searchsorted(second, -bound - first, side="right")
    return int(above.sum() + below.sum())


def randomization_test(diffs: np.ndarray, permutations: int = 10_000, seed: int = 42,
                       alternative: str = "two-sided") -> float | None:
    """Paired sign-flip randomization test of mean(diffs) = 0 (two-sided, or "less": diffs < 0);
    None without queries."""
    n = len(diffs)
    if n == 0:
        return None
    moving = differing(np.asarray(diffs, dtype=np.float64))
    m = len(moving)
    if m == 0:
        return 1.0
    observed = float(moving.sum())  # sums over the differing queries order patterns as the means do
    tolerance = 1e-12 * max(1.0, abs(observed))  # a permuted sum equal to the observed one counts
    if m <= EXACT_UP_TO:
        return _exact_tail(moving, observed, tolerance, alternative) / 2**m
    rng = np.random.default_rng(seed)
    extreme, done, block = 0, 0, max(1, _CHUNK // m)
    while done < permutations:
        size = min(block, permutations - done)
        signs = rng.integers(0, 2, size=(size, m)) * 2 - 1
        extreme += _tail((signs * moving).sum(axis=1), observed, tolerance, alternative)
        done += size
    # (extreme + 1) / (permutations + 1): the observed assignment is one of the permutations,
    # so an estimated p is never 0.
    return (extreme + 1) / (permutations + 1)


def smallest_p(diffs: np.ndarray, test: str, permutations: int = 10_000) -> float | None:
    """The smallest one-sided p `test` can reach with these queries, whatever the sizes of the
    differences: the p of the most extreme case where every differing query is a loss (for the
    t-test, never below the exact test's 2^-m). None when the test cannot run at all (no queries;
    one query for the t-test)."""
    n, m = len(diffs), len(differing(np.asarray(diffs, dtype=np.float64)))
    if n == 0 or (test == "t-test" and n < 2):
        return None
    if m == 0:
        return 1.0
    exact = 2.0**-m
    if test == "randomization":
        return exact if m <= EXACT_UP_TO else max(exact, 1 / (permutations + 1))
    if m == n:
        return exact  # equal losses everywhere give t unbounded: only the exact floor is left
    # With m equal losses among n queries t^2 = (n-1) m / (n-m), the largest |t| any m losses reach
    # (t^2 grows with (sum d)^2 / sum d^2, which is at most m).
    from scipy.stats import t as student

    return max(exact, float(student.sf(math.sqrt((n - 1) * m / (n - m)), df=n - 1)))


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
