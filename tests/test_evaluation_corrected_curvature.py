"""The expected ideal DCG's own second-order term (labeller.evaluation.corrected_ideal.curvature, `shrunk` and the
bend `expected_ideal` returns) against plain-Python computations: the bend by enumerating every grade assignment,
the term and its effects by a double loop and central differences, the shrunk residuals and noise weights by hand."""

from __future__ import annotations

import math
import random

import numpy as np

from labeller.evaluation.corrected_ideal import (
    curvature,
    expected_ideal,
    levels,
    shrunk,
)
from labeller.evaluation.corrected_pool import GRADES
from labeller.evaluation.corrected_terms import grade_gains
from tests.test_evaluation_corrected_ideal import _by_enumeration


def test_bend_is_the_second_difference_of_the_expected_ideal_in_added_pairs():
    """Two more pairs of grade g add sum_{h <= g} bend_h beyond twice one: E[I(+2 g)] - 2 E[I(+1 g)] + E[I]."""
    rng = random.Random(11)
    width = len(GRADES)
    for gain in ("linear", "exponential"):
        gains = list(grade_gains(gain, GRADES))
        for k in (2, 3, 5):
            dist, fixed = [], []
            for i in range(6):
                if i % 3 == 0:
                    g = rng.randrange(width)
                    dist.append([float(x == g) for x in range(width)])
                    fixed.append(g)
                else:
                    raw = [rng.random() ** 2 for _ in range(width)]
                    dist.append([r / sum(raw) for r in raw])
                    fixed.append(None)
            bend = expected_ideal(np.array(dist), np.array([f is not None for f in fixed]), np.array(gains), k)[2]
            base = _by_enumeration(dist, fixed, gains, k)[0]
            for g in range(1, width):
                mass = [float(x == g) for x in range(width)]
                one = _by_enumeration(dist + [mass], fixed + [g], gains, k)[0]
                two = _by_enumeration(dist + [mass, mass], fixed + [g, g], gains, k)[0]
                assert math.isclose(float(bend[:g].sum()), two - 2 * one + base, abs_tol=1e-10), (gain, k, g)


def test_curvature_matches_a_double_loop_and_its_effects_the_derivative():
    rng = np.random.default_rng(5)
    gold, levels_, rows = 7, len(GRADES) - 1, 12
    bend = -rng.uniform(0.0, 0.3, levels_)
    residual = rng.uniform(-1, 1, (gold, levels_))
    weights = rng.uniform(0.5, 5.0, gold)
    noise = rng.uniform(0, 0.2, rows)
    above = rng.uniform(0, 1, (rows, levels_))
    want = 0.0
    for h in range(levels_):
        pairs = sum(weights[i] * weights[j] * residual[i, h] * residual[j, h] for i in range(gold) for j in range(gold)
                    if i != j)
        spread = sum(noise[r] * above[r, h] * (1 - above[r, h]) for r in range(rows))
        want += 0.5 * bend[h] * (pairs + spread)
    got, effect = curvature(bend, residual, weights, noise, above)
    assert math.isclose(got, want, rel_tol=1e-12)
    sums = weights @ residual

    def leading(x):  # the term's leading part as a function of the weighted sums
        return 0.5 * float(bend @ (x**2))

    step = 1e-6
    gradient = np.array([(leading(sums + step * e) - leading(sums - step * e)) / (2 * step) for e in np.eye(levels_)])
    assert np.allclose(effect, residual @ gradient, rtol=1e-6)
    assert curvature(bend, residual[:0], weights[:0], noise, above)[1].shape == (0,)


def test_shrunk_residuals_and_noise_weights_by_hand():
    """One query, one judge grade: 2 gold pairs and 3 ungraded (share K / (c + K) = 4/6, noise c / (c + K)^2 (U - 1)
    = 2/36 * 2); a second group with no gold (no share of noise: its prediction is the all-query one, no variance
    from the gold); a pair with the judge's own distribution (given: unshrunk, no noise)."""
    width = len(GRADES)
    residual = np.zeros((7, width))
    residual[0, -1], residual[0, 0] = 0.7, -0.7
    residual[1, 0], residual[1, 1] = 0.4, -0.4
    residual[6, -1], residual[6, 0] = 0.5, -0.5
    gold = np.array([True, True, False, False, False, False, True])
    given = np.array([False] * 6 + [True])
    group = np.array([0, 0, 0, 0, 0, 1, 2])
    counts = np.array([2.0, 0.0, 1.0])
    out, noise = shrunk(residual, gold, given, group, counts, 4.0)
    assert np.allclose(out[0], levels(residual[[0]])[0] * 4 / 6) and np.allclose(out[1], levels(residual[[1]])[0] * 4 / 6)
    assert np.allclose(out[6], levels(residual[[6]])[0]) and not out[2:6].any()
    assert np.allclose(noise, [0, 0, 2 / 36 * 2, 2 / 36 * 2, 2 / 36 * 2, 0, 0])
