"""NDCG's anticipated spread under the pair design (no certain stratum): each random stratum's spread is at least the
one the pool predicts (labeller.evaluation.corrected_spread), as beside a certain stratum. Checked against a
brute-force computation: the gradients by enumerating every grade the ungraded pairs can take, the variance of each
pool pair's effect under its prediction summed by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from labeller.evaluation.corrected import _Model, contribution
from labeller.evaluation.corrected_estimate import pair_terms
from labeller.evaluation.corrected_pool import gold_pool
from labeller.evaluation.corrected_spread import Anticipated
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking
from tests.test_evaluation_corrected import judgments, run_corrected

# One query, two judge grades. Judge 4: a, b (people 4 and 3) graded, c not; judge 1: d, e (people 1 and 2) graded,
# f not. The run ranks c, a, b, d, e first (NDCG@5, linear gains: grade - 1).
LABELS = judgments({"q": {"a": 4, "b": 4, "c": 4, "d": 1, "e": 1, "f": 1}}, kind="labels")
GOLD = judgments({"q": {"a": 4, "b": 3, "d": 1, "e": 2}})
RUN = Ranking("run", docs={"q": ["c", "a", "b", "d", "e", "f"]})
SETTINGS = Settings(relevant_from=3)
GAINS = np.array([0.0, 1.0, 2.0, 3.0, 4.0])  # grades 1-5


def _ideal(gains: list[float], k: int = 5) -> float:
    top = sorted(gains, reverse=True)[:k]
    return sum(g / math.log2(t + 2) for t, g in enumerate(top))


def test_hand_computed_anticipated_spread_under_the_pair_design():
    """Calibration: judge 4 -> people 3 or 4 (1/2 each), judge 1 -> 1 or 2. The (query, judge grade) cell holds the
    same, so c is predicted (0, 0, 1/2, 1/2, 0) over grades 1-5 and f (1/2, 1/2, 0, 0, 0); a gold pair's prediction
    leaves itself out: ((its cell less itself) + 4 x calibration) / 5, a (0, 0, 3/5, 2/5, 0), b (0, 0, 2/5, 3/5, 0),
    d (2/5, 3/5, 0, 0, 0), e (3/5, 2/5, 0, 0, 0). At the model point DCG@5 = E[gain c] + 3/log2(3) + 2/2 + 0 +
    1/log2(6), and the expected ideal DCG@5 I is the mean of IDCG over c's and f's grades. A pair's effect on NDCG
    has gradient, per grade g, DCG's (its discount times g's gain over I, for the run's top 5) less DCG / I^2 times
    the expected ideal DCG with one pair more of grade g (corrected_ideal). Stratum j's anticipated spread is the sum
    over its pool pairs of the variance of that gradient under the pair's prediction, over N_j - 1 (Q = 1); its part
    of the variance N_j^2 (1 - n_j / N_j) max(sample spread, anticipated) / n_j, with no Student t penalty where the
    anticipated one decides."""
    pool = gold_pool(LABELS, GOLD, "pairs")
    model = _Model(pool, SETTINGS)
    spec = parse_metrics("ndcg@5")[0]
    part = contribution(RUN, ["q"], spec, model, SETTINGS)
    terms = pair_terms(part, pool, Anticipated(pool, model.expected))
    # by hand
    prediction = {"a": [0, 0, .6, .4, 0], "b": [0, 0, .4, .6, 0], "c": [0, 0, .5, .5, 0],
                  "d": [.4, .6, 0, 0, 0], "e": [.6, .4, 0, 0, 0], "f": [.5, .5, 0, 0, 0]}
    known = {"a": 3.0, "b": 2.0, "d": 0.0, "e": 1.0}  # people's gains
    for name, p in prediction.items():
        assert model.expected[pool.index["q", name]] == pytest.approx(p)
    dcg = float(np.dot(prediction["c"], GAINS)) + 3 / math.log2(3) + 2 / 2 + 0 / math.log2(5) + 1 / math.log2(6)

    def expected_ideal(extra: list[float]) -> float:
        total = 0.0
        for gc, gf in itertools.product(range(5), range(5)):
            chance = prediction["c"][gc] * prediction["f"][gf]
            if chance:
                total += chance * _ideal([*known.values(), GAINS[gc], GAINS[gf], *extra])
        return total

    ideal = expected_ideal([])
    one_more = np.array([expected_ideal([g]) for g in GAINS])
    positions = {"c": 0, "a": 1, "b": 2, "d": 3, "e": 4}
    parts = {}
    for judge, members, graded in ((4, "abc", 2), (1, "def", 2)):
        total = 0.0
        for name in members:
            a = -dcg / ideal**2 * one_more
            if name in positions:
                a = a + GAINS / math.log2(positions[name] + 2) / ideal
            p = np.array(prediction[name])
            total += float(p @ (a * a) - (p @ a) ** 2)
        parts[judge] = total / (len(members) - 1)
    z = {name: terms.z[pool.index["q", name]] for name in known}
    sample = {4: np.var([z["a"], z["b"]], ddof=1), 1: np.var([z["d"], z["e"]], ddof=1)}
    assert parts[4] > sample[4] and parts[1] > sample[1]  # both strata: the pool predicts more than the pairs show
    expected = [(3**2 * (1 - 2 / 3) * parts[j] / 2, math.inf) for j in (1, 4)]
    assert terms.parts == [pytest.approx(e) for e in expected]
    assert terms.spread_source() == "anticipated"


def test_the_spread_that_agrees_with_the_judge_is_zero():
    """A gold that agrees with the judge predicts every other pair surely: nothing anticipated, no rounding left."""
    gold = judgments({"q": {"a": 4, "b": 4, "d": 1, "e": 1}})
    result, _ = run_corrected([RUN], LABELS, gold, SETTINGS, metrics="ndcg@5", design="pairs", per_query_coverage=None)
    value = result.runs["run"][0].corrected
    assert value.se_judge == 0.0
