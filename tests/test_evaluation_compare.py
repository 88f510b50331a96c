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
from labeller.evaluation.significance import bootstrap_interval, randomization_test, t_test


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
    result = compare(reference, run, parse_metrics("map"))
    test = result.tests[0]
    assert (test.n, test.wins, test.losses, test.ties) == (3, 1, 1, 1)  # a, b, c: paired on shared queries
    assert test.difference == pytest.approx(((0.7 - 0.5) + 0 + (0.1 - 0.2)) / 3)
    assert (result.only_in_reference, result.only_in_run) == (1, 1)  # d and e
    assert test.p_randomization == pytest.approx(brute_force_p([0.2, 0.0, -0.1]))
