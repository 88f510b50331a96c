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
from tests.test_evaluation_corrected_recall import _check_stretch, random_gold, world

SETTINGS = Settings(relevant_from=3, gain="exponential")


def test_stretch_by_hand():
    """Remainders 0.02 and 0.04 over two queries, the judge-free estimate's -0.01 and +0.01, lambda 0.5: per query
    0.005 and 0.025, mean 0.015, standard error over the queries 0.01, reach t(1) 12.7062 x 0.01 = 0.127062; the
    upper ends move up by 0.015 + 0.127062, the lower ends down by 0.127062 - 0.015, the estimate not at all."""
    value = CorrectedValue(estimate=0.5, ci_low=0.4, ci_high=0.6, ci_low_queries=0.35, ci_high_queries=0.65,
                           power_lambda=0.5)
    part = Contribution({"a": 0.5, "b": 0.5}, {}, remainder={"a": 0.02, "b": 0.04})
    blind = Contribution({"a": 0.5, "b": 0.5}, {}, remainder={"a": -0.01, "b": 0.01})
    out = stretched(value, part, blind)
    assert math.isclose(out.remainder, 0.015) and math.isclose(out.remainder_reach, 0.1270620473617, rel_tol=1e-12)
    assert out.estimate == 0.5
    assert math.isclose(out.ci_low, 0.4 - 0.1120620473617) and math.isclose(out.ci_low_queries, 0.35 - 0.1120620473617)
    assert math.isclose(out.ci_high, 0.6 + 0.1420620473617)
    assert math.isclose(out.ci_high_queries, 0.65 + 0.1420620473617)
    # three queries, 0.03, -0.03 and 0 (no judge-free part: its own): mean 0, standard error 0.03 / sqrt(3), reach
    # t(2) 4.302653 x 0.0173205 = 0.0745242 either way
    both = stretched(value, Contribution({"a": 0.5, "b": 0.5, "c": 0.5}, {}, remainder={"a": 0.03, "b": -0.03}))
    assert abs(both.remainder) < 1e-15 and math.isclose(both.remainder_reach, 0.0745242, rel_tol=1e-6)
    assert math.isclose(both.ci_low, 0.4 - 0.0745242, rel_tol=1e-6) and math.isclose(both.ci_high, 0.6 + 0.0745242,
                                                                                       rel_tol=1e-6)
    down = stretched(value, Contribution({"a": 0.5}, {}, remainder={"a": -0.02}))  # one query: no spread, the mean
    assert down.remainder_reach == 0.0 and down.ci_high == 0.6
    assert math.isclose(down.ci_low, 0.38) and math.isclose(down.ci_low_queries, 0.33)
    assert stretched(value, Contribution({"a": 0.5}, {})) is value  # no remainder (another metric): untouched


def _loop_terms(model: _Model, run: Ranking, k: int = 10) -> np.ndarray:
    """Per query, NDCG's second-order term DCG0 P(b, b) / I0^3 - P(t, b) / I0^2 at the model point, by
    plain loops: P(a, c) = sum over gold pairs i != j of w_i w_j a_i c_j plus sum over i of w_i a_i c_i; t_i a gold
    pair's effect on DCG (its discount times its gain residual, where the run's top k holds it), b_i on the expected
    ideal DCG (E[IDCG | its grade] dotted with its residual), w_i = N_j / n_j - 1."""
    pool, terms = model.pool, []
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

        terms.append(dcg * product(bottom, bottom) / ideal**3 - product(top, bottom) / ideal**2)
    return np.array(terms)


def test_ndcg_interval_is_stretched_by_its_second_order_term():
    """40 queries of 80 pairs, 160 random gold pairs (4 a query), exponential gain, a good run and a shuffled one as
    the reference: each figure's remainder and its reach against the loop terms, lambda times the judge's plus
    (1 - lambda) the judge-free estimate's (a difference's: the run's less the reference's), and the interval,
    symmetric about the estimate before, stretched to the remainder's interval (recall's `_check_stretch`)."""
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
    terms = {r.name: (_loop_terms(judged, r), _loop_terms(free, r)) for r in (good, shuffled)}
    lam = out.runs["good"][0].corrected.power_lambda
    assert terms["good"][0].mean() > 0.005 and lam is not None and lam < 1  # both parts of the blend count

    def check(value: CorrectedValue, term: tuple[np.ndarray, np.ndarray], low: float = 0.0) -> None:
        assert low < value.ci_low and value.ci_high < 1  # not cut at the metric's range
        _check_stretch(value, *term, wider=False)

    for name in ("good", "shuffled"):
        check(out.runs[name][0].corrected, terms[name])
    (diff,) = out.differences
    check(diff.corrected, (terms["good"][0] - terms["shuffled"][0], terms["good"][1] - terms["shuffled"][1]), -1.0)
    # recall's remainder warning is recall's; the few-pairs one (4 a query) names NDCG
    assert not [w for w in out.warnings if "second-order remainder" in w], out.warnings
    assert [w for w in out.warnings if "4.0 a query" in w and "NDCG's ratio" in w], out.warnings



def test_the_gate_names_a_stretch_its_p_does_not_take():
    """A difference of -0.1 with se 0.03 (judge) and 0.04 (queries): p_worse = Phi(-0.1 / 0.05) = Phi(-2) = 0.02275,
    and a gate at 0.05 calls a regression, stretched or not: the p is first order (taking the stretch in cost 2-22
    points of detected drops for one false regression fewer in 450 in three of 14 cells: benchmarks/README.md, "Stop
    51"). Stretched
    up by a remainder 0.05 reaching 0.06 either side (0.11 up), the check's note says so; a remainder whose interval
    lies below 0 (-0.1 +- 0.06) stretches only the low end, and the note is silent, as it is at 0.05 without one."""
    from labeller.evaluation.corrected_estimate import p_worse
    from labeller.evaluation.corrected_results import CorrectedDifference
    from labeller.evaluation.corrected_stretch import stretched_up
    from labeller.evaluation.gate import _corrected_check
    from labeller.evaluation.results import GateCheck

    flat = CorrectedValue(estimate=-0.1, ci_low=-0.2, ci_high=0.0, se_judge=0.03, se_queries=0.04)
    up = flat.model_copy(update={"remainder": 0.05, "remainder_reach": 0.06})
    down = flat.model_copy(update={"remainder": -0.1, "remainder_reach": 0.06})
    assert math.isclose(p_worse(flat), 0.0227501319, rel_tol=1e-8) and p_worse(up) == p_worse(down) == p_worse(flat)
    assert math.isclose(stretched_up(up), 0.11) and stretched_up(down) == stretched_up(flat) == 0.0
    plain = GateCheck(run="run", metric="recall@100", threshold=0.0, baseline=0.5, run_value=0.4, drop=0.1,
                      p_value=0.01, decided_by="threshold and significance", verdict="regression")

    def gate(value: CorrectedValue, estimate: float = -0.1) -> GateCheck:
        value = value.model_copy(update={"estimate": estimate})
        diff = CorrectedDifference(reference="base", run="run", metric="recall@100", plain=-0.1, corrected=value,
                                   p_worse=p_worse(value))
        return _corrected_check(plain, diff, (None, None), 0.05, "gold.jsonl")

    assert gate(flat).verdict == gate(down).verdict == gate(up).verdict == "regression"
    assert "first order" not in gate(flat).note and "first order" not in gate(down).note
    assert "also reaches 0.1100 higher for the ratio's second-order remainder" in gate(up).note
    # a drop the p does not call significant (-0.05: Phi(-1) = 0.159) needs no such note
    assert gate(up, -0.05).verdict == "drop-not-significant" and "first order" not in gate(up, -0.05).note
