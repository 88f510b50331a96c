"""Bootstrap intervals resample queries, are reproducible, and are honestly wide on small gold sets."""

from __future__ import annotations

import numpy as np

from agreement_helpers import synthetic
from labeller.agreement import align, measure
from labeller.io.gold import GradeFile, Graded


def grade_file(grades: dict, kind: str, query_of=lambda q, d: q) -> GradeFile:
    rows = [Graded(query_id=query_of(q, d), doc_id=d, grade=g, annotator=kind, line=i + 1)
            for i, ((q, d), g) in enumerate(grades.items())]
    return GradeFile(path=f"{kind}.jsonl", kind="gold" if kind == "gold" else "labels", scale=(1, 5), rows=rows)


def width(interval) -> float:
    return interval.high - interval.low


def test_intervals_widen_on_small_gold_sets():
    gold, judge = synthetic(200, 5, seed=1)
    large = measure(align(grade_file(judge, "labels"), grade_file(gold, "gold")), resamples=400)
    few = {k: v for k, v in gold.items() if int(k[0][1:]) < 8}
    small = measure(align(grade_file(judge, "labels"), grade_file(few, "gold")), resamples=400)
    assert small.n == 40 and large.n == 1000
    for name in ("kappa", "kappa_quadratic", "alpha_ordinal", "spearman", "exact_agreement"):
        assert width(getattr(small.ci, name)) > 2 * width(getattr(large.ci, name)), name
    for result in (small, large):
        assert result.ci.kappa.low <= result.kappa <= result.ci.kappa.high


def test_resampling_queries_not_pairs():
    # Within each query the judge is either right on every pair or off by two on every pair: pairs of a
    # query are perfectly correlated, so 10 queries carry about 10 facts, not 300.
    gold, judge = {}, {}
    rng = np.random.default_rng(3)
    for q in range(10):
        good = q % 2 == 0
        for d in range(30):
            g = int(rng.integers(1, 4))
            gold[f"q{q}", f"d{q}_{d}"] = g
            judge[f"q{q}", f"d{q}_{d}"] = g if good else g + 2
    by_query = measure(align(grade_file(judge, "labels"), grade_file(gold, "gold")), resamples=500)
    # the same pairs, each pretending to be its own query: a pair-level bootstrap
    alone = lambda q, d: f"{q}/{d}"  # noqa: E731
    by_pair = measure(align(grade_file(judge, "labels", alone), grade_file(gold, "gold", alone)), resamples=500)
    assert by_query.kappa == by_pair.kappa
    assert by_query.bootstrap.queries == 10 and by_pair.bootstrap.queries == 300
    assert width(by_query.ci.exact_agreement) > 3 * width(by_pair.ci.exact_agreement)


def test_same_seed_same_interval_other_seed_differs():
    gold, judge = synthetic(30, 4, seed=2)
    alignment = align(grade_file(judge, "labels"), grade_file(gold, "gold"))
    a, b = measure(alignment, seed=5, resamples=200), measure(alignment, seed=5, resamples=200)
    c = measure(alignment, seed=6, resamples=200)
    assert a.ci == b.ci
    assert a.ci.kappa != c.ci.kappa


def test_generous_judge_has_positive_mean_signed_difference():
    gold, judge = synthetic(40, 5, seed=4, noise=0.3, shift=1.0)
    result = measure(align(grade_file(judge, "labels"), grade_file(gold, "gold")), resamples=200)
    assert result.mean_signed_difference > 0.5
    assert result.ci.mean_signed_difference.low > 0
    assert result.too_generous > result.too_strict
