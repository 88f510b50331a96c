"""Power tuning of the pair design (labeller.evaluation.corrected_power): lambda, the estimate and the interval
checked against a plain-Python computation from the two estimators' terms, lambda = 0 against the benchmark's
"human only" (the same gold with a judge that knows nothing, through `corrected` itself), and a simulated pool
where the judge-calibrated estimator alone is wider than human-only and the tuned one is never wider."""

from __future__ import annotations

import math
import random

import numpy as np
from scipy.stats import t as student

from labeller.evaluation.corrected import TILTED, _Model, contribution
from labeller.evaluation.corrected_estimate import estimate, pair_terms
from labeller.evaluation.corrected_pool import gold_pool
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.results import Settings
from tests.test_evaluation_corrected import judgments, run_corrected, subset, world

METRICS = "ndcg@10,recall@20,precision@5"
SETTINGS = Settings(relevant_from=3)


def blind(grades):
    return {q: {d: 3 for d in docs} for q, docs in grades.items()}


def _z_and_parts(pool, ranking, queries, spec):
    model = _Model(pool, SETTINGS, tilt=spec.kind in TILTED)
    return pair_terms(contribution(ranking, queries, spec, model, SETTINGS), pool)


def _by_hand(judge_terms, blind_terms, pool):
    """lambda, variance and degrees of freedom by the module docstring's formulas, in plain Python."""
    v_j, v_b = sum(v for v, _ in judge_terms.parts), sum(v for v, _ in blind_terms.parts)
    cross = 0.0
    for j in sorted(set(int(g) for g in pool.judge)):
        rows = [i for i in range(len(pool.judge)) if pool.judge[i] == j and pool.human[i] > 0]
        size, graded = int(sum(pool.judge == j)), len(rows)
        if graded > 1:
            a = [float(judge_terms.z[i]) for i in rows]
            b = [float(blind_terms.z[i]) for i in rows]
            ma, mb = sum(a) / graded, sum(b) / graded
            cov = sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (graded - 1)
            cross += size * size * (1 - graded / size) / graded * cov
    cross = max(-math.sqrt(v_j * v_b), min(cross, math.sqrt(v_j * v_b)))
    candidates = [k / 100 for k in range(100, -1, -1)]  # from the judge's own end, ties kept at the larger lambda
    if v_j + v_b - 2 * cross > 0:
        candidates.append(min(max((v_b - cross) / (v_j + v_b - 2 * cross), 0.0), 1.0))
    best = None
    for lam in candidates:
        var = lam * lam * v_j + (1 - lam) ** 2 * v_b + 2 * lam * (1 - lam) * cross
        parts = ([(lam * lam * v, df) for v, df in judge_terms.parts] if lam > 0 else []) + \
                ([((1 - lam) ** 2 * v, df) for v, df in blind_terms.parts] if lam < 1 else [])
        bottom = sum(v * v / df for v, df in parts)
        df = sum(v for v, _ in parts) ** 2 / bottom if bottom > 0 else math.inf
        quantile = float(student.ppf(0.975, df)) if df < 1e6 else 1.959963984540054
        half = quantile * math.sqrt(max(var, 0.0))
        centre = lam * judge_terms.value + (1 - lam) * blind_terms.value
        width = min(centre + half, 1.0) - max(centre - half, 0.0)
        if best is None or width < best[0] - 2e-15:
            best = (width, lam, centre, half)
    return best


def test_lambda_matches_a_plain_python_choice_and_lambda_0_is_human_only():
    human, judge, good, bad = world(seed=5, queries=10, pool=30)
    gold = judgments(subset(human, 0.3, seed=6))
    labels, nothing = judgments(judge, kind="labels"), judgments(blind(judge), kind="labels")
    tuned, scores = run_corrected([good, bad], labels, gold, SETTINGS, METRICS, design="pairs", reference="bad")
    alone, _ = run_corrected([good, bad], nothing, gold, SETTINGS, METRICS, design="pairs", reference="bad")
    pool = gold_pool(labels, gold, "pairs")
    free = gold_pool(nothing, gold, "pairs")
    lambdas = []
    for ranking in (good, bad):
        for spec, row, human_only in zip(parse_metrics(METRICS), tuned.runs[ranking.name], alone.runs[ranking.name]):
            queries = sorted(set(scores[ranking.name].per_query[spec.name]) - set(scores[ranking.name].no_answer.query_ids))
            judge_terms, blind_terms = _z_and_parts(pool, ranking, queries, spec), _z_and_parts(free, ranking, queries,
                                                                                                 spec)
            # the judge-free end is the benchmark's human-only estimate, exactly
            assert blind_terms.value == human_only.corrected.estimate
            width, lam, centre, half = _by_hand(judge_terms, blind_terms, pool)
            c = row.corrected
            assert c.power_lambda is not None and abs(c.power_lambda - lam) < 1e-9, (spec.name, c.power_lambda, lam)
            assert abs(c.estimate - centre) < 1e-12
            assert abs(c.ci_high - min(centre + half, 1.0)) < 1e-12 and abs(c.ci_low - max(centre - half, 0.0)) < 1e-12
            assert c.ci_high - c.ci_low <= human_only.corrected.ci_high - human_only.corrected.ci_low + 1e-12
            lambdas.append(lam)
    assert any(0 < x < 1 for x in lambdas) or len(set(lambdas)) > 1, lambdas  # the choice is not one constant here
    for d, h in zip(tuned.differences, alone.differences):  # differences get the same treatment
        assert d.corrected.power_lambda is not None
        assert d.corrected.ci_high - d.corrected.ci_low <= h.corrected.ci_high - h.corrected.ci_low + 1e-12


def _widths(draws: int = 25):
    """(judge alone, tuned, human only) judge-error widths of P@5 and recall@20 of one run over random golds
    of a pool whose judge knows nothing useful (grades at random): its strata only cost degrees of freedom."""
    rng = random.Random(11)
    human, _, good, _ = world(seed=12, queries=12, pool=40)
    judge = {q: {d: rng.choice([1, 2, 3, 4]) for d in docs} for q, docs in human.items()}
    labels, nothing = judgments(judge, kind="labels"), judgments(blind(judge), kind="labels")
    out = []
    for k in range(draws):
        gold = judgments(subset(human, 0.12, seed=100 + k))
        tuned, scores = run_corrected([good], labels, gold, SETTINGS, "precision@5,recall@20", design="pairs")
        alone, _ = run_corrected([good], nothing, gold, SETTINGS, "precision@5,recall@20", design="pairs")
        pool = gold_pool(labels, gold, "pairs")
        for spec, row, h in zip(parse_metrics("precision@5,recall@20"), tuned.runs["good"], alone.runs["good"]):
            queries = sorted(set(scores["good"].per_query[spec.name]) - set(scores["good"].no_answer.query_ids))
            old = estimate(contribution(good, queries, spec, _Model(pool, SETTINGS, tilt=spec.kind in TILTED),
                                        SETTINGS), pool, 0.95)
            cut = min(old.ci_high, 1.0) - max(old.ci_low, 0.0)
            out.append((cut, row.corrected.ci_high - row.corrected.ci_low, h.corrected.ci_high - h.corrected.ci_low))
    return np.array(out)


def test_tuned_interval_is_never_wider_than_human_only_where_the_judge_alone_is():
    """Measured: the judge-calibrated interval alone averages about 1.1 times the human-only one with a judge that
    grades at random (wider in most draws); tuned, never wider in any draw and narrower than the judge alone."""
    w = _widths()
    old, new, human_only = w[:, 0], w[:, 1], w[:, 2]
    assert np.mean(old / human_only) > 1.03 and np.mean(old > human_only + 1e-12) > 0.5, np.mean(old / human_only)
    assert np.all(new <= human_only + 1e-12), np.max(new / human_only)
    assert np.all(new <= old + 1e-12)


def test_a_gold_not_drawn_uniformly_keeps_lambda_1_and_says_why():
    human, judge, good, bad = world(seed=7, queries=10, pool=30)
    rng = random.Random(8)
    # every judge-grade-4 pair graded, a tenth of the others: the shares of a deliberate allocation
    gold = judgments({q: {d: g for d, g in docs.items() if judge[q][d] == 4 or rng.random() < 0.1}
                      for q, docs in human.items()})
    result, _ = run_corrected([good, bad], judgments(judge, kind="labels"), gold, SETTINGS, METRICS, design="pairs")
    assert any("not those of a uniform sample" in w for w in result.warnings), result.warnings
    assert all(m.corrected.power_lambda in (None, 1.0) for m in result.runs["good"])
    uniform, _ = run_corrected([good, bad], judgments(judge, kind="labels"), judgments(subset(human, 0.3, seed=9)),
                               SETTINGS, METRICS, design="pairs")
    assert not any("not those of a uniform sample" in w for w in uniform.warnings)  # the check can pass
