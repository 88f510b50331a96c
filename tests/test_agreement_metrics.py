"""Agreement figures against hand computations and independent implementations (sklearn, scipy, krippendorff)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr
from sklearn.metrics import cohen_kappa_score

from labeller.agreement.alpha import alpha_from_confusion, ordinal_alpha
from labeller.agreement.correlation import (exact_agreement, kendall_from_confusion, mean_signed_difference,
                                            spearman_from_confusion, within_one)
from labeller.agreement.kappa import binarize_confusion, binary_kappa, cohen_kappa, kappa_from_confusion

GRADES = [1, 2, 3, 4, 5]


def confusion(gold, judge, k=5):
    c = np.zeros((k, k))
    np.add.at(c, (np.asarray(gold) - 1, np.asarray(judge) - 1), 1)
    return c


def test_kappa_of_a_two_by_two_case_by_hand():
    # observed agreement 3/4; chance agreement .5*.25 + .5*.75 = .5; kappa = (.75 - .5) / (1 - .5)
    gold, judge = [1, 1, 2, 2], [1, 2, 2, 2]
    assert cohen_kappa(gold, judge, [1, 2]) == pytest.approx(0.5)
    assert float(kappa_from_confusion(confusion(gold, judge, 2))) == pytest.approx(0.5)


def test_unused_grades_still_count_in_weighted_kappa():
    # Both sides use grades 1 and 5 only: with the whole scale passed, 1 vs 5 is 4 grades apart.
    gold, judge = [1, 1, 5, 5], [1, 5, 5, 5]
    weights = np.abs(np.subtract.outer(np.arange(5), np.arange(5)))
    c = confusion(gold, judge)
    expected = np.outer(c.sum(1), c.sum(0)) / c.sum()
    by_hand = 1 - (weights * c).sum() / (weights * expected).sum()
    assert cohen_kappa(gold, judge, GRADES, "linear") == pytest.approx(by_hand)


def test_ordinal_alpha_of_a_two_grade_case_by_hand():
    # Units (1,1), (1,2), (2,2), (2,2): coincidences o12 = o21 = 1; n1 = 3, n2 = 5, n = 8.
    # With two grades ordinal alpha is nominal alpha: 1 - (n - 1) * 2 * o12 / (2 * n1 * n2) = 1 - 14/30.
    data = np.array([[1, 1], [1, 2], [2, 2], [2, 2]], dtype=float)
    assert ordinal_alpha(data, [1, 2]) == pytest.approx(1 - 14 / 30)


def test_undefined_figures_are_none_not_nan():
    assert cohen_kappa([3, 3, 3], [3, 3, 3], GRADES) is None
    assert ordinal_alpha(np.array([[2, 2], [2, 2]], dtype=float), GRADES) is None
    assert binary_kappa([1, 2], [1, 2], 5) is None


@pytest.mark.parametrize("seed", range(8))
def test_kappas_match_sklearn_on_random_data(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 200))
    gold = rng.integers(1, 6, n)
    judge = np.clip(gold + rng.integers(-2, 3, n), 1, 5)
    c = confusion(gold, judge)
    for weights in (None, "linear", "quadratic"):
        reference = cohen_kappa_score(gold, judge, labels=GRADES, weights=weights)
        assert cohen_kappa(gold, judge, GRADES, weights) == pytest.approx(reference, abs=1e-12)
        assert float(kappa_from_confusion(c, weights)) == pytest.approx(reference, abs=1e-12)
    for cut in (2, 3, 4, 5):
        reference = cohen_kappa_score(gold >= cut, judge >= cut)
        assert binary_kappa(gold, judge, cut) == pytest.approx(reference, abs=1e-12)
        assert float(kappa_from_confusion(binarize_confusion(c, cut - 1))) == pytest.approx(reference, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_ordinal_alpha_matches_krippendorff_package(seed):
    rng = np.random.default_rng(100 + seed)
    coders, units = int(rng.integers(2, 6)), int(rng.integers(5, 120))
    data = rng.integers(1, 6, (coders, units)).astype(float)
    data[rng.random(data.shape) < 0.25] = np.nan  # missing grades, as with several annotators
    reference = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=GRADES)
    assert ordinal_alpha(data.T, GRADES) == pytest.approx(reference, abs=1e-9)
    pair = rng.integers(1, 6, (2, units)).astype(float)
    reference = krippendorff.alpha(reliability_data=pair, level_of_measurement="ordinal", value_domain=GRADES)
    assert float(alpha_from_confusion(confusion(pair[0].astype(int), pair[1].astype(int)))) == \
        pytest.approx(reference, abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_confusion_based_figures_match_scipy(seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(5, 300))
    gold = rng.integers(1, 6, n)
    judge = np.clip(gold + rng.integers(-3, 3, n), 1, 5)
    c = confusion(gold, judge)
    assert float(spearman_from_confusion(c)) == pytest.approx(spearmanr(gold, judge).statistic, abs=1e-10)
    assert float(kendall_from_confusion(c)) == pytest.approx(kendalltau(gold, judge).statistic, abs=1e-10)
    assert float(exact_agreement(c)) == pytest.approx(np.mean(gold == judge))
    assert float(within_one(c)) == pytest.approx(np.mean(np.abs(gold - judge) <= 1))
    assert float(mean_signed_difference(c)) == pytest.approx(np.mean(judge - gold))


def test_stacked_confusions_give_one_figure_each():
    rng = np.random.default_rng(7)
    stack = []
    for _ in range(4):
        gold = rng.integers(1, 6, 50)
        judge = np.clip(gold + rng.integers(-1, 2, 50), 1, 5)
        stack.append((gold, judge, confusion(gold, judge)))
    many = np.stack([c for _, _, c in stack])
    kappas = kappa_from_confusion(many, "quadratic")
    alphas = alpha_from_confusion(many)
    for i, (gold, judge, c) in enumerate(stack):
        assert kappas[i] == pytest.approx(cohen_kappa_score(gold, judge, labels=GRADES, weights="quadratic"))
        assert alphas[i] == pytest.approx(float(alpha_from_confusion(c)))
