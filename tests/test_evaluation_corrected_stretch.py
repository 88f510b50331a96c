"""The interval stretched by a ratio's estimated second-order remainder (labeller.evaluation.corrected_stretch):
by hand on planted numbers, and for NDCG@10 under the pair design (no certain stratum), where the stretch is the mean
over queries of the second-order term the estimate holds, checked against plain loops over the gold pairs, for a
run and for a difference of runs (the run's less the reference's)."""

from __future__ import annotations

import math
import random

import numpy as np

from labeller.evaluation.corrected import _Model, _positions, corrected
from labeller.evaluation.corrected_estimate import Contribution
from labeller.evaluation.corrected_pool import gold_pool
from labeller.evaluation.corrected_power import blind_pool
from labeller.evaluation.corrected_results import CorrectedValue
from labeller.evaluation.corrected_stretch import stretched
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking
from labeller.evaluation.scoring import score_run
from tests.test_evaluation_corrected import judgments
from tests.test_evaluation_corrected_recall import random_gold, world

SETTINGS = Settings(relevant_from=3, gain="exponential")


def test_stretch_by_hand():
    """Remainders 0.02 and 0.04 over two queries (mean 0.03), the judge-free estimate's -0.01 and +0.01 (mean 0),
    lambda 0.5: the stretch is 0.015, upward; both upper ends move by it, the lower ends and the estimate do not."""
    value = CorrectedValue(estimate=0.5, ci_low=0.4, ci_high=0.6, ci_low_queries=0.35, ci_high_queries=0.65,
                           power_lambda=0.5)
    part = Contribution({"a": 0.5, "b": 0.5}, {}, remainder={"a": 0.02, "b": 0.04})
    blind = Contribution({"a": 0.5, "b": 0.5}, {}, remainder={"a": -0.01, "b": 0.01})
    out = stretched(value, part, blind)
    assert math.isclose(out.remainder, 0.015) and out.estimate == 0.5
    assert (out.ci_low, out.ci_low_queries) == (0.4, 0.35)
    assert math.isclose(out.ci_high, 0.615) and math.isclose(out.ci_high_queries, 0.665)
    down = stretched(value, Contribution({"a": 0.5}, {}, remainder={"a": -0.02}))  # no judge-free part: its own
    assert math.isclose(down.ci_low, 0.38) and math.isclose(down.ci_low_queries, 0.33) and down.ci_high == 0.6
    assert stretched(value, Contribution({"a": 0.5}, {})) is value  # no remainder (another metric): untouched


def _loop_term(model: _Model, run: Ranking, k: int = 10) -> float:
    """Mean over queries of NDCG's second-order term DCG0 P(b, b) / I0^3 - P(t, b) / I0^2 at the model point, by
    plain loops: P(a, c) = sum over gold pairs i != j of w_i w_j a_i c_j plus sum over i of w_i a_i c_i; t_i a gold
    pair's effect on DCG (its discount times its gain residual, where the run's top k holds it), b_i on the expected
    ideal DCG (E[IDCG | its grade] dotted with its residual), w_i = N_j / n_j - 1."""
    pool, total = model.pool, 0.0
    for q, rows in pool.by_query.items():
        pos = _positions(run, pool, q, k)[0]
        disc = [1.0 / math.log2(r + 2) for r in range(len(pos))]
        dcg = sum(disc[r] * float(model.model[i] @ model.gains) for r, i in enumerate(pos) if i >= 0)
        ideal, per_row, _ = model.ideal(q, rows, k)
        gold = [(t, int(i)) for t, i in enumerate(rows) if pool.in_gold[i]]
        where = {int(i): r for r, i in enumerate(pos) if i >= 0}
        top = {i: disc[where[i]] * float(model.residual[i] @ model.gains) if i in where else 0.0 for _, i in gold}
        bottom = {i: float(per_row[t] @ model.residual[i]) for t, i in gold}
        w = {i: model.weight[i] for _, i in gold}

        def product(a, c):
            return sum(w[i] * (w[j] if i != j else 1.0) * a[i] * c[j] for _, i in gold for _, j in gold)

        total += dcg * product(bottom, bottom) / ideal**3 - product(top, bottom) / ideal**2
    return total / len(pool.by_query)


def test_ndcg_interval_is_stretched_by_its_second_order_term():
    """40 queries of 80 pairs, 160 random gold pairs (4 a query), exponential gain, a good run and a shuffled one as
    the reference: each figure's remainder is lambda times the judge's loop term plus (1 - lambda) the judge-free
    estimate's (a difference's: the run's less the reference's), and the interval, symmetric about the estimate
    before, is longer by it on its side (here upward, by 0.15 se for the good run)."""
    human, judge, good = world(0)
    rng = random.Random(1)
    shuffled = Ranking("shuffled", docs={q: rng.sample(docs, len(docs)) for q, docs in good.docs.items()})
    specs, labels, gold = parse_metrics("ndcg@10"), judgments(judge, kind="labels"), judgments(
        random_gold(human, 160, random.Random(3)))
    scores = {r.name: score_run(r, labels, specs, SETTINGS) for r in (good, shuffled)}
    out = corrected([good, shuffled], scores, labels, gold, specs, SETTINGS, design="pairs", bootstrap=1,
                    reference="shuffled", per_query_coverage=None)
    pool = gold_pool(labels, gold, "pairs")
    judged, free = _Model(pool, SETTINGS), _Model(blind_pool(pool), SETTINGS)
    terms = {r.name: (_loop_term(judged, r), _loop_term(free, r)) for r in (good, shuffled)}
    assert terms["good"][0] > 0.005 and out.runs["good"][0].corrected.power_lambda < 1  # both parts of the blend count

    def check(value: CorrectedValue, term: tuple[float, float], low: float = 0.0) -> None:
        lam = value.power_lambda if value.power_lambda is not None else 1.0
        assert math.isclose(value.remainder, lam * term[0] + (1 - lam) * term[1], rel_tol=1e-9, abs_tol=1e-12)
        assert low < value.ci_low and value.ci_high < 1  # not cut at the metric's range
        assert math.isclose(value.ci_high - value.estimate - max(value.remainder, 0.0),
                            value.estimate - value.ci_low + min(value.remainder, 0.0), rel_tol=1e-9)

    for name in ("good", "shuffled"):
        check(out.runs[name][0].corrected, terms[name])
    (diff,) = out.differences
    check(diff.corrected, tuple(np.subtract(terms["good"], terms["shuffled"])), -1.0)
    # recall's remainder warning is recall's; the few-pairs one (4 a query) names NDCG
    assert not [w for w in out.warnings if "second-order remainder" in w], out.warnings
    assert [w for w in out.warnings if "4.0 a query" in w and "NDCG's ratio" in w], out.warnings
