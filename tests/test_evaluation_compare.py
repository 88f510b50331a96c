"""Paired comparisons: randomization test, t-test, bootstrap interval, wins and losses."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import ttest_rel

from labeller.evaluation import compare, parse_metrics
from labeller.evaluation.results import NoAnswer, QueryCounts, RunScores
from labeller.evaluation.significance import bootstrap_interval, randomization_test, smallest_p, t_test


def scores(name: str, values: dict[str, float], no_answer: list[str] = ()) -> RunScores:
    counts = QueryCounts(in_run=len(values), judged=len(values), evaluated=len(values), averaged=len(values),
                         no_answer=len(no_answer), run_only=0, missing_from_run=0)
    mean = sum(values.values()) / len(values)
    return RunScores(name=name, source="", metrics={"map": mean}, trec_eval={"map": mean}, per_query={"map": values},
                     judged={}, unjudged={}, queries=counts, no_answer=NoAnswer(query_ids=list(no_answer)))


def ranx_fisher_p(control: np.ndarray, treatment: np.ndarray, permutations: int) -> float:
    """ranx's own randomization test, in a separate interpreted process: importing all of ranx here
    would switch this process's ranx kernels to compiled mode (and compile them)."""
    code = ("import json, sys, numpy as np; from ranx.statistical_tests import fisher_randomization_test as f; "
            "a, b = json.load(sys.stdin); print(f(np.array(a), np.array(b), %d, 0.05, 42)[0])" % permutations)
    done = subprocess.run([sys.executable, "-c", code], input=json.dumps([control.tolist(), treatment.tolist()]),
                          env=dict(os.environ, NUMBA_DISABLE_JIT="1"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return float(done.stdout)


def brute_force_p(diffs: list[float]) -> float:
    observed = abs(sum(diffs) / len(diffs))
    flips = list(itertools.product([1, -1], repeat=len(diffs)))
    extreme = sum(abs(sum(s * d for s, d in zip(signs, diffs)) / len(diffs)) >= observed - 1e-12 for signs in flips)
    return extreme / len(flips)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_randomization_test_is_exact_for_small_samples(seed):
    rng = np.random.default_rng(seed)
    diffs = rng.normal(0.05, 0.1, size=10)
    assert randomization_test(diffs) == pytest.approx(brute_force_p(list(diffs)), abs=1e-12)


def test_randomization_test_sampled_agrees_with_ranx_and_is_repeatable():
    rng = np.random.default_rng(3)
    control = rng.random(40)
    treatment = control + rng.normal(0.03, 0.1, size=40)
    ours = randomization_test(treatment - control, permutations=10_000, seed=1)
    assert ours == randomization_test(treatment - control, permutations=10_000, seed=1)
    theirs = ranx_fisher_p(control, treatment, 4000)
    assert abs(ours - theirs) < 0.04  # two Monte Carlo estimates of one p-value


def test_randomization_test_edge_cases():
    assert randomization_test(np.zeros(30)) == 1.0
    assert randomization_test(np.array([])) is None
    # All 30 queries improve: p is as small as the sample allows, never 0.
    p = randomization_test(np.full(30, 0.1), permutations=999)
    assert p == pytest.approx(1 / 1000)


def test_t_test_is_scipys_paired_t_test():
    rng = np.random.default_rng(4)
    a, b = rng.random(25), rng.random(25)
    assert t_test(a, b) == pytest.approx(ttest_rel(a, b).pvalue, rel=1e-12)
    assert t_test(a, a) == 1.0  # no differences at all: scipy would say nan
    assert t_test(a[:1], b[:1]) is None


def test_bootstrap_interval():
    assert bootstrap_interval(np.full(20, 0.05)) == pytest.approx((0.05, 0.05))
    rng = np.random.default_rng(5)
    diffs = rng.normal(0.1, 0.2, size=200)
    low, high = bootstrap_interval(diffs, 0.95, 4000, seed=9)
    # Percentile interval of the mean: about mean +- 1.96 standard errors.
    se = diffs.std(ddof=1) / np.sqrt(len(diffs))
    assert low == pytest.approx(diffs.mean() - 1.96 * se, abs=0.25 * se)
    assert high == pytest.approx(diffs.mean() + 1.96 * se, abs=0.25 * se)
    assert (low, high) == bootstrap_interval(diffs, 0.95, 4000, seed=9)


def test_compare_counts_wins_losses_and_leaves_out_no_answer_queries():
    reference = scores("ref", {"a": 0.5, "b": 0.5, "c": 0.2, "d": 0.0, "z": 0.0}, no_answer=["z"])
    run = scores("new", {"a": 0.7, "b": 0.5, "c": 0.1, "e": 0.9, "z": 0.0}, no_answer=["z"])
    result = compare(reference, run, parse_metrics("map"), pairing="shared")
    test = result.tests[0]
    assert (test.n, test.wins, test.losses, test.ties) == (3, 1, 1, 1)  # a, b, c: paired on shared queries
    assert test.difference == pytest.approx(((0.7 - 0.5) + 0 + (0.1 - 0.2)) / 3)
    assert (result.only_in_reference, result.only_in_run) == (1, 1)  # d and e
    assert test.p_randomization == pytest.approx(brute_force_p([0.2, 0.0, -0.1]))


def test_compare_zero_fills_a_query_one_side_lacks():
    """The default pairing is the union of the queries either side averaged, a missing one 0 for
    the side that lacks it (trec_eval -c): a run that lost a query has lost it, not skipped it."""
    reference = scores("ref", {"a": 0.5, "b": 0.5, "c": 0.2, "d": 0.6, "z": 0.0}, no_answer=["z"])
    run = scores("new", {"a": 0.7, "b": 0.5, "c": 0.1, "e": 0.9, "z": 0.0}, no_answer=["z"])
    test = compare(reference, run, parse_metrics("map")).tests[0]
    diffs = [0.2, 0.0, -0.1, -0.6, 0.9]  # a, b, c, d (run lacks it: 0 - 0.6), e (reference lacks it)
    assert (test.n, test.wins, test.losses, test.ties, test.differing) == (5, 2, 2, 1, 4)
    assert test.reference_mean == pytest.approx((0.5 + 0.5 + 0.2 + 0.6) / 5)
    assert test.difference == pytest.approx(sum(diffs) / 5)
    assert test.p_randomization == pytest.approx(brute_force_p(diffs))
    # The saved-baseline pairing: the reference's queries only, the run zero-filled (d), e left out.
    saved = compare(reference, run, parse_metrics("map"), pairing="reference").tests[0]
    assert (saved.n, saved.losses) == (4, 2) and saved.difference == pytest.approx(sum(diffs[:4]) / 4)


def brute_force_one_sided_p(diffs: list[float]) -> float:
    flips = list(itertools.product([1, -1], repeat=len(diffs)))
    observed = sum(diffs)
    return sum(sum(s * d for s, d in zip(signs, diffs)) <= observed + 1e-12 for signs in flips) / len(flips)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_sided_randomization_test_is_exact_and_ignores_ties(seed):
    rng = np.random.default_rng(seed)
    moving = rng.normal(-0.05, 0.1, size=12)
    diffs = np.concatenate([moving, np.zeros(30)])  # 42 queries, 30 of them ties: still exact
    expected = brute_force_one_sided_p(list(moving))
    assert randomization_test(diffs, alternative="less") == pytest.approx(expected, abs=1e-12)
    assert randomization_test(diffs, alternative="less", seed=seed + 5) == randomization_test(diffs, alternative="less")
    assert randomization_test(diffs) == pytest.approx(brute_force_p(list(moving)), abs=1e-12)


def test_one_sided_t_test_is_scipys():
    rng = np.random.default_rng(6)
    a = rng.random(25)
    b = a - rng.normal(0.02, 0.1, size=25)
    assert t_test(a, b, alternative="less") == pytest.approx(ttest_rel(b, a, alternative="less").pvalue, rel=1e-12)
    assert t_test(a, a - 0.1, alternative="less") == 0.0 and t_test(a, a + 0.1, alternative="less") == 1.0


@pytest.mark.parametrize("losses, queries", [(1, 1), (2, 10), (4, 4), (5, 5), (5, 12), (25, 30)])
def test_smallest_p_is_the_most_extreme_case(losses, queries):
    """smallest_p is the p of the case where every differing query is a loss, and no sizes of the
    losses do better: checked against the tests themselves on random sizes."""
    diffs = np.concatenate([-np.full(losses, 0.3), np.zeros(queries - losses)])
    floor_r, floor_t = smallest_p(diffs, "randomization"), smallest_p(diffs, "t-test")
    exact = losses <= 20
    assert floor_r == (2.0 ** -losses if exact else pytest.approx(1 / 10_001))
    if exact:
        assert randomization_test(diffs, alternative="less") == pytest.approx(floor_r)
    if queries >= 2:  # the t-test's own bound, never below the exact test's 2^-m
        t_extreme = t_test(np.zeros(queries), diffs, alternative="less")
        assert floor_t == pytest.approx(max(t_extreme, 2.0 ** -losses), abs=1e-12)
    else:
        assert floor_t is None
    rng = np.random.default_rng(losses * 100 + queries)
    for _ in range(20):
        sized = np.concatenate([-rng.uniform(0.01, 1, losses), np.zeros(queries - losses)])
        assert randomization_test(sized, alternative="less") >= floor_r - 1e-12
        if queries >= 2:
            assert t_test(np.zeros(queries), sized, alternative="less") >= t_extreme - 1e-12
    assert smallest_p(np.zeros(7), "randomization") == 1.0 and smallest_p(np.array([]), "t-test") is None
