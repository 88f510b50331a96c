"""Recall under the pair design (labeller.evaluation.corrected_recall): its interval stretched by the estimated
second-order remainder of the ratio's linearisation, and the warning that the linearisation is likely off. In a
world where it is (a judge whose error does not depend on the run, a good run, ~6 gold pairs a query, queries with
3-38% relevant pairs) the first-order interval misses the truth most of the time and the stretched one covers; the
remainder is checked against a plain double loop over the gold pairs; the warning fires there, not with 40 gold
pairs a query, and reaches the report and result.json."""

from __future__ import annotations

import math
import random

import numpy as np

from labeller.evaluation.corrected import _Model, _positions, corrected
from labeller.evaluation.corrected_pool import gold_pool
from labeller.evaluation.corrected_power import blind_pool
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking
from labeller.evaluation.scoring import score_run
from tests.test_evaluation_corrected import judgments

SETTINGS = Settings(relevant_from=3)


def world(seed: int = 0, queries: int = 40, pool: int = 80, noise: float = 1.0):
    """Queries with 3-38% relevant pairs; the judge keeps people's grade half the time, else draws one at random
    (its error ignores the run); one run ranking by people's grade plus N(0, noise)."""
    rng = random.Random(seed)
    human, judge, run = {}, {}, {}
    for q in range(queries):
        qid, share = f"q{q}", 0.03 + 0.35 * (q % 8) / 7
        docs = [f"d{q}-{i}" for i in range(pool)]
        human[qid] = {d: rng.choice([3, 4]) if rng.random() < share else rng.choice([1, 2]) for d in docs}
        judge[qid] = {d: g if rng.random() < 0.5 else rng.choice([1, 2, 3, 4]) for d, g in human[qid].items()}
        noisy = {d: human[qid][d] + rng.gauss(0, noise) for d in docs}
        run[qid] = sorted(docs, key=lambda d: -noisy[d])
    return human, judge, Ranking("good", docs=run)


def random_gold(human, pairs: int, rng: random.Random) -> dict:
    everything = [(q, d) for q in sorted(human) for d in sorted(human[q])]
    gold: dict[str, dict[str, int]] = {}
    for q, d in rng.sample(everything, pairs):
        gold.setdefault(q, {})[d] = human[q][d]
    return gold


def _corrected(human, judge, run, gold, per_query=0.9, metrics="recall@30"):
    specs, labels = parse_metrics(metrics), judgments(judge, kind="labels")
    scores = {run.name: score_run(run, labels, specs, SETTINGS)}
    return corrected([run], scores, labels, judgments(gold), specs, SETTINGS, design="pairs", bootstrap=1,
                     per_query_coverage=per_query)


def _warnings(human, judge, run, gold, metrics="recall@30") -> list[str]:
    return _corrected(human, judge, run, gold, metrics=metrics).warnings


def test_stretched_interval_covers_where_the_first_order_one_misses():
    """30 random golds of 240 pairs (6 a query): the truth, recall@30 under people's grades, lies above the first-order
    interval (the reported one less its stretch) in most draws, and inside the stretched one in nearly all; a stretch
    by the remainder's mean alone, without its own interval, covers in no more draws."""
    human, judge, run = world(0)
    truth = score_run(run, judgments(human), parse_metrics("recall@30"), SETTINGS).metrics["recall@30"]
    stretched = first_order = by_mean = 0
    shifts = []
    for seed in range(30):
        value = _corrected(human, judge, run, random_gold(human, 240, random.Random(seed)), None).runs["good"][0]
        value = value.corrected
        shifts.append(value.remainder or 0.0)
        stretched += value.ci_low <= truth <= value.ci_high
        # the first-order interval, estimate +- q se_judge: q from the lower end of the wider interval (not cut at 0)
        assert value.ci_low_queries > 0 and value.remainder_reach > 0
        wider = value.estimate + min(shifts[-1] - value.remainder_reach, 0.0) - value.ci_low_queries
        half = wider * value.se_judge / math.hypot(value.se_judge, value.se_queries)
        first_order += value.estimate - half <= truth <= value.estimate + half
        by_mean += value.estimate - half + min(shifts[-1], 0) <= truth <= value.estimate + half + max(shifts[-1], 0)
    assert first_order <= 20 and stretched >= 26 and by_mean <= stretched, (first_order, by_mean, stretched)
    assert min(shifts) > 0  # the truth likely above: the upper end moves


def _loop_remainder(model, run, k: int = 30) -> float:
    return float(np.mean(_loop_remainders(model, run, k)))


def _loop_remainders(model, run, k: int = 30) -> np.ndarray:
    """Per query, H0 / B0^3 * P(d, d) - P(t d, d) / B0^2, P(a, b) = sum over gold pairs i != j of
    w_i w_j a_i b_j plus sum over i of w_i a_i b_i, at the model point (H0, B0 the run's hits and the relevant count),
    d_i a gold pair's relevance residual, t_i 1 when the run's top k holds it, w_i = N_j / n_j - 1: the second-order
    term of H / B about (H0, B0), by plain loops."""
    pool, terms = model.pool, []
    p = model.expected @ model.relevant
    rel = (pool.human >= SETTINGS.relevant_from).astype(float)
    point = np.where(pool.in_gold, rel, p)
    for q, rows in pool.by_query.items():
        top = {int(i) for i in _positions(run, pool, q, k)[0] if i >= 0}
        hits, count = sum(point[i] for i in top), float(point[rows].sum())
        gold = [int(i) for i in rows if pool.in_gold[i]]
        d = {i: rel[i] - p[i] for i in gold}
        t = {i: float(i in top) for i in gold}
        w = {i: model.weight[i] for i in gold}

        def product(a, b):
            return sum(w[i] * (w[j] if i != j else 1.0) * a[i] * b[j] for i in gold for j in gold)

        td = {i: t[i] * d[i] for i in gold}
        terms.append(hits * product(d, d) / count**3 - product(td, d) / count**2)
    return np.array(terms)


def _check_stretch(value, judged: np.ndarray, free: np.ndarray, wider: bool = True) -> None:
    """The remainder is the mean of lambda * the judge's per-query loop terms + (1 - lambda) * the judge-free ones;
    its reach the t quantile (Q - 1 degrees of freedom) times their standard error over the queries; the interval,
    symmetric about the estimate before, had its low end moved to the remainder's interval's low end where below 0
    and its high end to its high end where above 0, both intervals alike (`wider`: the one with the query sample
    checked too, where it is not cut at the metric's range)."""
    from scipy.stats import t

    lam = value.power_lambda if value.power_lambda is not None else 1.0
    terms = lam * judged + (1 - lam) * free
    assert abs(value.remainder - terms.mean()) < 1e-9, (value, terms.mean())
    reach = t.ppf(0.975, len(terms) - 1) * terms.std(ddof=1) / math.sqrt(len(terms))
    assert math.isclose(value.remainder_reach, reach, rel_tol=1e-9), (value.remainder_reach, reach)
    low, high = min(value.remainder - reach, 0.0), max(value.remainder + reach, 0.0)
    assert abs((value.ci_low + value.ci_high) / 2 - value.estimate - (low + high) / 2) < 1e-12
    if wider:
        width, other = (value.ci_high - value.ci_low - (high - low),
                        value.ci_high_queries - value.ci_low_queries - (high - low))
        assert width > 0 and math.isclose(width / other, value.se_judge / math.hypot(value.se_judge,
                                                                                       value.se_queries), rel_tol=1e-9)


def test_remainder_and_stretch_against_loops():
    """The reported remainder and its reach against plain loops (`_check_stretch`); with the query sample or without,
    both intervals have the same quantile times their se once the stretch is off."""
    human, judge, run = world(0)
    gold = random_gold(human, 240, random.Random(3))
    value = _corrected(human, judge, run, gold, None).runs["good"][0].corrected
    pool = gold_pool(judgments(judge, kind="labels"), judgments(gold), "pairs")
    judged, free = _loop_remainders(_Model(pool, SETTINGS, tilt=True), run), \
        _loop_remainders(_Model(blind_pool(pool), SETTINGS, tilt=True), run)
    assert judged.mean() > 0.02  # the world's bias is visible in it
    _check_stretch(value, judged, free)


def test_warning_fires_with_few_gold_pairs_a_query_and_a_large_remainder():
    human, judge, run = world(0)
    few = _warnings(human, judge, run, random_gold(human, 240, random.Random(3)))
    assert any("6.0 a query" in w and "--gold-design queries" in w for w in few), few
    # the remainder's own warning, on the draw of the same world where it is largest (it is noisy per draw)
    fired = [w for seed in range(6) for w in _warnings(human, judge, run, random_gold(human, 240, random.Random(seed)))
             if "second-order remainder" in w]
    assert fired and "recall@30 of good" in fired[0], fired


def test_few_pairs_warning_names_ndcg_too_and_only_the_linearised_metrics():
    """NDCG under the pair design is a linearised ratio too (its interval stretched: corrected_stretch): with ~6 gold
    pairs a query it gets the few-pairs warning alone (no remainder warning of its own); P@k, a plain mean of
    per-pair relevance, gets none."""
    human, judge, run = world(0)
    gold = random_gold(human, 240, random.Random(3))
    ndcg = _warnings(human, judge, run, gold, metrics="ndcg@10")
    assert [w for w in ndcg if "6.0 a query" in w and "NDCG's ratio" in w and "recall's" not in w], ndcg
    assert not [w for w in ndcg if "second-order remainder" in w], ndcg
    both = _warnings(human, judge, run, gold, metrics="recall@30,ndcg@10")
    assert [w for w in both if "recall's and NDCG's ratio" in w], both
    assert not [w for w in _warnings(human, judge, run, gold, metrics="p@10") if "a query)" in w]
    many = _warnings(human, judge, run, random_gold(human, 1600, random.Random(3)), metrics="ndcg@10")
    assert not [w for w in many if "a query)" in w], many


def test_no_warning_with_many_gold_pairs_a_query():
    human, judge, run = world(0, noise=3.0)
    many = _warnings(human, judge, run, random_gold(human, 1600, random.Random(3)))  # 40 a query, half the pool
    assert not [w for w in many if "recall" in w], many


def test_warning_reaches_the_report_and_the_json(tmp_path, capsys):
    """`labeller evaluate --gold` with ~6 random gold pairs a query: the markdown report and result.json carry it."""
    import json

    from tests.cli_helpers import cli

    human, judge, run = world(0)
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 {d} {i} {100 - i} x\n" for q, docs in run.docs.items()
                                               for i, d in enumerate(docs)))
    (tmp_path / "labels.txt").write_text("".join(f"{q} 0 {d} {g - 1}\n" for q, ds in judge.items()
                                                 for d, g in ds.items()))
    gold = random_gold(human, 240, random.Random(3))
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps({"query_id": q, "doc_id": d, "grade": g, "annotator": "a"})
                                                 + "\n" for q, ds in gold.items() for d, g in ds.items()))
    code, out, err = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--labels", tmp_path / "labels.txt",
                         "--gold", tmp_path / "gold.jsonl", "--metrics", "recall@30", "--report", tmp_path / "report")
    assert code == 0, out + err
    assert "6.0 a query" in out and "--gold-design queries" in out, out
    saved = (tmp_path / "report" / "result.json").read_text()
    assert "6.0 a query" in saved


def test_difference_stretched_by_the_runs_remainder_less_the_references():
    """`corrected(..., reference=)`: a difference of recall's remainder is lambda (the difference's own power tuning)
    times the judge's loop remainder of the run less the reference's, plus (1 - lambda) times the judge-free ones';
    its interval is moved on that side only (centre by half the remainder), and the run's own figure keeps its own."""
    human, judge, good = world(0)
    _, _, poor = world(0, noise=3.0)
    poor = Ranking("poor", docs=poor.docs)
    gold = random_gold(human, 240, random.Random(3))
    specs, labels = parse_metrics("recall@30"), judgments(judge, kind="labels")
    scores = {r.name: score_run(r, labels, specs, SETTINGS) for r in (good, poor)}
    result = corrected([good, poor], scores, labels, judgments(gold), specs, SETTINGS, design="pairs", bootstrap=1,
                       per_query_coverage=None, reference="poor")
    value = result.differences[0].corrected
    pool = gold_pool(labels, judgments(gold), "pairs")
    judged, free = _Model(pool, SETTINGS, tilt=True), _Model(blind_pool(pool), SETTINGS, tilt=True)
    own = _loop_remainders(judged, good) - _loop_remainders(judged, poor)
    blind = _loop_remainders(free, good) - _loop_remainders(free, poor)
    assert abs(value.remainder) > 0.005  # the two runs' remainders differ visibly in this world
    _check_stretch(value, own, blind)
    assert (value.ci_low < value.estimate - 1e-9) and (value.ci_high > value.estimate + 1e-9)
    runs = {r: result.runs[r][0].corrected.remainder for r in ("good", "poor")}
    assert runs["good"] != runs["poor"] and value.remainder != runs["good"]
