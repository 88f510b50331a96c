"""NDCG under the top-k certainty design (`annotate sample --plan top:K`): DCG@k is people's exactly, but the ideal
DCG hangs on every pool pair, and a small random remainder mostly misses the rare highly relevant pairs outside the
top. Each random stratum's spread is then at least the one the pool predicts (labeller.evaluation.corrected_spread).
A hand-computed case, a simulation where the sample's own spread under-covers and the anticipated one covers, the
warning, and what `annotate sample --plan top:K` says about the random remainder."""

from __future__ import annotations

import json
import math
import random
import re

import numpy as np
import pytest

from labeller.evaluation import corrected as corrected_module
from labeller.evaluation.corrected_estimate import estimate
from labeller.evaluation.corrected_pool import gold_pool, recommended_random
from labeller.evaluation.corrected_power import blind_pool
from labeller.evaluation.corrected_spread import Anticipated, Larger, narrower
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking
from tests.annotate_helpers import BASELINE, label_rows, write_jsonl
from tests.cli_helpers import cli
from tests.test_evaluation_corrected import human_means, judgments, run_corrected

# One query. a (judge 4, people 4) and b (judge 1, people 3) are the run's top 2, drawn with certainty; c, d, e, f
# (judge 1) are the random stratum, of which c and d were drawn and people found both not relevant (grade 1).
LABELS = judgments({"q": {"a": 4, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1}}, kind="labels")
GOLD = judgments({"q": {"a": 4, "b": 3, "c": 1, "d": 1}})
CERTAIN = {("q", "a"), ("q", "b")}
RUN = Ranking("run", docs={"q": ["a", "b"]})


def test_hand_computed_anticipated_spread():
    """The predictions learn from the random gold only (c 1, d 1): P(people | judge 1) = 1 at grade 1, the query's
    own the same, so e and f are predicted (2 + 4, 0) / 6 = grade 1 surely, and c and d left out (1 + 4, 0) / 5 the
    same: residuals 0. Linear gains (grade - 1). Counts at the model point: grade 4: 1, grade 3: 1, grade 1: 4, so
    DCG (a, b) = IDCG = 3 + 2/log2(3), NDCG 1 and the estimate 1 + 2 * 0 (N/n - 1) = 1. IDCG's slope in the count of
    grade 3 (at 1, the next position's) is 2 * 1/2 = 1, in grade 1's 0 (gain 0): a3 = -DCG / IDCG^2 = -1/IDCG.
    The sample's spread is 0, and so is the one anticipated under these predictions (no pair may be relevant):
    the interval would be a point. The anticipated spread is the larger of that and the one under predictions
    learned from all the gold, NDCG's beside a certain stratum (corrected_tilt.top_tilt): the calibration (b 3, c 1,
    d 1 -> 2/3 at 1, 1/3 at 3) tilted by the query's gold, each pair against its own stratum's calibration (a and b,
    the certain pairs: judge 4 -> 4, judge 1 -> 3; c and d the calibration above). Over grades 1, 3, 4: seen (2, 1,
    1), expected (4/3, 5/3, 1), 4 pseudo-pairs at the gold's shares (2, 1, 1): factors 4 / (10/3) = 6/5, 2 / (8/3) =
    3/4, 1; e and f's prior (2/3 * 6/5, 1/3 * 3/4) normalised = (16/21, 5/21) and their prediction ((2, 1) + 4 (16/21,
    5/21)) / 7 = (106/147, 41/147). c left out of the tilt: seen (1, 1, 1), expected (2/3, 4/3, 1), factors 9/8, 6/7,
    prior (3/4, 2/7) normalised (21/29, 8/29); left out of the cell ((1, 1) + 4 (21/29, 8/29)) / 6 = (113/174,
    61/174), d the same. Sum over c, d, e, f of a3^2 p1 p3 = a3^2 (2 (106/147)(41/147) + 2 (113/174)(61/174)), over N
    - 1 = 3; variance N^2 (1 - n/N) s^2 / n = 16 (1/2) s^2 / 2 = 4 s^2; normal quantile (the spread is not estimated
    from the stratum's 2 pairs). Untilted (before corrected_tilt.top_tilt) e and f were (2/3, 1/3) and c, d
    (11/18, 7/18)."""
    dcg = idcg = 3 + 2 / math.log2(3)
    a3 = -dcg / idcg**2
    spread = a3**2 * (2 * (106 / 147) * (41 / 147) + 2 * (113 / 174) * (61 / 174)) / 3
    result, _ = run_corrected([RUN], LABELS, GOLD, Settings(relevant_from=3), metrics="ndcg", design="pairs",
                              certain=CERTAIN, per_query_coverage=None)
    value = result.runs["run"][0].corrected
    assert value.estimate == pytest.approx(1.0)
    assert value.se_judge == pytest.approx(math.sqrt(4 * spread))
    assert value.estimate - value.ci_low == pytest.approx(1.959964 * math.sqrt(4 * spread), rel=1e-6)  # high: cut at 1
    assert value.spread == "anticipated"
    assert any("only 2 random gold pairs beside the 2 drawn with certainty, of the other 4 pool pairs" in w
               and "draw at least 4 of the rest" in w for w in result.warnings)
    # the same gold without the certain stratum named: the pair design's own anticipated spread (from all the gold,
    # tests/test_evaluation_corrected_pair_spread.py), and no word of a random remainder
    plain, _ = run_corrected([RUN], LABELS, GOLD, Settings(relevant_from=3), metrics="ndcg", design="pairs",
                             per_query_coverage=None)
    assert plain.runs["run"][0].corrected.spread == "anticipated"
    assert not any("random gold pairs beside" in w for w in plain.warnings)


def _pool_and_model(seed: int = 0):
    human, judge, ranker, shuffled = _world(seed, queries=6, pool=20)
    certain = {(q, d) for q, docs in ranker.docs.items() for d in docs[:3]}
    rest = sorted((q, d) for q in judge for d in judge[q] if (q, d) not in certain)
    gold: dict[str, dict[str, int]] = {}
    for q, d in sorted(certain) + random.Random(seed).sample(rest, 30):
        gold.setdefault(q, {})[d] = human[q][d]
    pool = gold_pool(judgments(judge, kind="labels"), judgments(gold), "pairs", certain)
    return pool, corrected_module._Model(pool, Settings(relevant_from=3)), ranker, shuffled


def test_anticipated_total_against_each_pairs_own_variance():
    """The per-(query, stratum) sums give what summing a_i' (diag p_i - p_i p_i') a_i pair by pair gives, a_i the
    pair's gradient found by finite differences of the metric (the shuffled run ranks random-stratum pairs in its
    top 5, whose own gain moves the DCG too); for a difference of two runs, a_i is the difference of theirs."""
    pool, model, ranker, shuffled = _pool_and_model()
    spec = parse_metrics("ndcg@5")[0]
    settings = Settings(relevant_from=3)
    anticipated = Anticipated(pool, model.expected)
    queries = sorted(pool.by_query)
    parts = {r.name: corrected_module.contribution(r, queries, spec, model, settings) for r in (ranker, shuffled)}
    assert parts["shuffled"].positioned

    def value(ranking, q, at):
        rows = pool.by_query[q]
        pos, length = corrected_module._positions(ranking, pool, q, spec.k)
        return corrected_module._value(spec, at, model.feature(spec), rows, pos, length, model, settings).value

    for runs in ((shuffled,), (shuffled, ranker)):
        c = parts[runs[0].name] if len(runs) == 1 else parts[runs[0].name].minus(parts[runs[1].name])
        for j, _ in pool.stratum_sizes().items():
            brute = 0.0
            for i in np.flatnonzero(pool.stratum(j)):
                q, p = pool.query[i], model.expected[i]
                a = np.zeros(len(p))
                for h in range(len(p)):
                    step = np.zeros(len(p))
                    step[h] = 1e-6
                    moved = model.model.copy()
                    moved[i] = model.model[i] + step
                    a[h] = sum(sign * (value(r, q, moved) - value(r, q, model.model)) / 1e-6
                               for sign, r in zip((1, -1), runs))
                brute += p @ (a * a) - (p @ a) ** 2
            assert anticipated.total(c.gradient, c.positioned, j) == pytest.approx(brute, rel=1e-4, abs=1e-9)


def _world(seed: int, queries: int = 20, pool: int = 80):
    """Rare highly relevant pairs (3% grade 5) that the judge misses half the time, among many it rightly calls not
    relevant: a ranker by the judge's grades (its top holds most of the judge's 5s) and a shuffled run."""
    rng = random.Random(seed)
    human, judge, ranked, shuffled = {}, {}, {}, {}
    for q in range(queries):
        qid = f"q{q}"
        docs = [f"d{q}-{i}" for i in range(pool)]
        human[qid] = {d: rng.choices([1, 2, 3, 5], [70, 15, 12, 3])[0] for d in docs}
        judge[qid] = {d: rng.choice([1, 3, 5, 5]) if g == 5 else rng.choice([g, g, 1]) if g > 1
                      else rng.choice([1, 1, 1, 2]) for d, g in human[qid].items()}
        noisy = {d: judge[qid][d] + rng.random() * 3 for d in docs}
        ranked[qid] = sorted(docs, key=lambda d: -noisy[d])
        shuffled[qid] = rng.sample(docs, len(docs))
    return human, judge, Ranking("ranker", docs=ranked), Ranking("shuffled", docs=shuffled)


def _larger(pool, model, settings):
    """The anticipated spread the library takes: the larger of the one under the model's predictions (from the
    random gold) and the one under predictions learned from all the gold (the certain pairs too), tilted alike."""
    return Larger(Anticipated(pool, model.expected),
                  Anticipated(pool, corrected_module._Model(pool, settings, from_all=True, top=model.top).expected))


def test_simulated_coverage_sample_spread_against_anticipated():
    """Both runs' top 5 certain (194 pairs) plus 60 random of the other 1,406; NDCG@5 (DCG exact, the ideal DCG on
    the rare 5s outside the top). Over 40 draws the interval from the random pairs' own spread covered the truth
    35% and 38% of the time (it must stay under 70% here: the failure this fixes), the interval with the anticipated
    spread 95% and 100% (at least 90% required; 97.5% each before NDCG's predictions here were tilted by each query's
    gold, corrected_tilt.top_tilt: this world's queries do not differ, and the tilt only adds noise). The human-only fallback (corrected_spread.narrower): taken
    whenever narrower it covered 20% for the ranker while the predictions learned from all the gold (the query's gold
    mostly the judge's 5s of the certain top), and covers 97.5% now that they learn from the random gold only; it is
    still taken only where the two estimates agree. Not reached: an accurate spread; the anticipated one is 1.75
    and 2.0 times the estimate's spread here (1.55 and 1.75 before top_tilt, 1.6-1.9 before that)."""
    human, judge, ranker, shuffled = _world(0)
    settings = Settings(relevant_from=3)
    labels = judgments(judge, kind="labels")
    spec = parse_metrics("ndcg@5")[0]
    certain = {(q, d) for r in (ranker, shuffled) for q, docs in r.docs.items() for d in docs[:5]}
    rest = sorted((q, d) for q in judge for d in judge[q] if (q, d) not in certain)
    hits: dict[str, list[bool]] = {}
    errors: dict[str, list[tuple[float, float]]] = {}
    for seed in range(40):
        gold: dict[str, dict[str, int]] = {}
        for q, d in sorted(certain) + random.Random(seed).sample(rest, 60):
            gold.setdefault(q, {})[d] = human[q][d]
        result, scores = run_corrected([ranker, shuffled], labels, judgments(gold), settings, metrics="ndcg@5",
                                       design="pairs", certain=certain, per_query_coverage=None)
        pool = gold_pool(labels, judgments(gold), "pairs", certain)
        model = corrected_module._Model(pool, settings, top=True)  # NDCG's beside a certain stratum (top_tilt)
        blind = corrected_module._Model(blind_pool(pool), settings)
        for r in (ranker, shuffled):
            truth = human_means(r, human, scores[r.name], settings, "ndcg@5")["ndcg@5"]
            new = result.runs[r.name][0].corrected
            c = corrected_module.contribution(r, corrected_module._averaged(scores[r.name], "ndcg@5"), spec, model,
                                              settings)
            old = estimate(c, pool, 0.95)  # the random pairs' own spread only
            judge = corrected_module._within(estimate(c, pool, 0.95, anticipated=_larger(pool, model, settings)),
                                             0.0, 1.0)
            alone = corrected_module._within(estimate(corrected_module.contribution(r, sorted(scores[r.name].per_query[
                "ndcg@5"]), spec, blind, settings), blind.pool, 0.95, anticipated=_larger(blind.pool, blind, settings)),
                0.0, 1.0)
            # the judge's estimate, or the human-only one where that interval is the narrower and they agree
            assert old.estimate == pytest.approx(judge.estimate)
            assert new == narrower(judge, alone)
            any_narrower = alone if alone.ci_high - alone.ci_low < judge.ci_high - judge.ci_low else judge
            errors.setdefault(r.name, []).append((judge.estimate - truth, judge.se_judge))
            for name, v in (("new", new), ("old", old), ("any narrower", any_narrower)):
                hits.setdefault(f"{r.name} {name}", []).append(v.ci_low - 1e-12 <= truth <= v.ci_high + 1e-12)
    for run in ("ranker", "shuffled"):
        assert np.mean(hits[f"{run} old"]) < 0.7, (run, np.mean(hits[f"{run} old"]))
        assert np.mean(hits[f"{run} new"]) >= 0.9, (run, np.mean(hits[f"{run} new"]))
        # the anticipated spread is conservative here (se 1.7 and 2.0 times the estimate's spread when written)
        err, se = np.array(errors[run]).T
        assert se.mean() > 1.2 * err.std(ddof=1), run
    # taking the human-only interval whenever it is the narrower (no agreement guard) covered 20% for the ranker
    # while the predictions learned from all the gold (up to 1eca0ac); from the random gold only 97.5%, tilted 95%
    assert np.mean(hits["ranker any narrower"]) >= 0.9


def test_recommended_random_pairs():
    """15% of the rest of the pool, at least 100 (and never more than there are)."""
    assert recommended_random(3310) == 497 and recommended_random(200) == 100 and recommended_random(40) == 40
    assert recommended_random(0) == 0


def test_sample_plan_top_says_how_many_random_pairs_it_leaves(tmp_path, capsys):
    labels = write_jsonl(tmp_path / "labels.jsonl", label_rows(n_per_query=10))
    top = len(label_rows(n_per_query=2))
    pool = len(label_rows(n_per_query=10))
    code, out, err = cli(capsys, "annotate", "sample", "--labels", labels, "--plan", "top:2", "--top-run", BASELINE,
                         "--size", str(top + 5), "--out", tmp_path / "a.jsonl")
    assert code in (0, None), err
    pool -= int(re.search(r"left out (\d+) pairs", out).group(1))  # the rubric's worked examples
    advice = recommended_random(pool - top)
    assert f"{top} pairs drawn with certainty" in out and f"5 at random from the other {pool - top} pool pairs" in out
    assert f"below about {advice}" in out and f"--size {top + advice} draws them" in out
    code, out, err = cli(capsys, "annotate", "sample", "--labels", labels, "--plan", "top:2", "--top-run", BASELINE,
                         "--size", str(top + advice), "--out", tmp_path / "b.jsonl")
    assert code in (0, None), err
    assert f"{advice} at random" in out and "below about" not in out
    rows = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert len(rows) == top + advice


def test_a_difference_and_the_gate_say_where_the_spread_came_from():
    """run minus a reference that ranks a random-stratum pair first: the difference's spread is anticipated too (its
    gradient the difference of theirs), and a gate decided on it says the spread is the pool's prediction."""
    from labeller.evaluation.gate import _corrected_check
    from labeller.evaluation.results import GateCheck

    other = Ranking("other", docs={"q": ["e", "a"]})
    result, _ = run_corrected([RUN, other], LABELS, GOLD, Settings(relevant_from=3), metrics="ndcg", design="pairs",
                              certain=CERTAIN, per_query_coverage=None, reference="other")
    (diff,) = result.differences
    assert diff.corrected.spread == "anticipated" and diff.corrected.se_judge > 0
    plain = GateCheck(run="run", metric="ndcg", threshold=0.0, baseline=0.5, run_value=0.4, drop=0.1, p_value=0.01,
                      decided_by="threshold and significance", verdict="regression")
    check = _corrected_check(plain, diff, (None, None), 0.05, "gold.jsonl")
    assert "its judge-error spread is the one the pool predicts" in check.note
    sample = diff.model_copy(update={"corrected": diff.corrected.model_copy(update={"spread": "sample"})})
    assert "pool predicts" not in _corrected_check(plain, sample, (None, None), 0.05, "gold.jsonl").note


def test_hand_computed_human_only_fallback():
    """PPI++'s fallback (labeller.evaluation.corrected_spread.narrower), by hand in plain Python on the pool of
    test_hand_computed_anticipated_spread. Without the judge every pair is one stratum and one cell of its query.
    The predictions learn from the random gold (c 1, d 1): grade 1 surely, for e and f ((2, 0, 0) + 4 (1, 0, 0)) / 6
    and for c and d left out ((1, 0, 0) + 4 (1, 0, 0)) / 5: residuals 0, estimate NDCG at the model point = 1 (as
    the judge's). Counts: grade 4: 1, 3: 1, 1: 4; IDCG = 3 cum(1) + 2 (cum(2) - cum(1)), cum(x) the sum of the first
    x discounts, its slope at x the next position's discount (1/L at 1, 1/2 at 2, L = log2 3): IDCG's slope in the
    count of grade 4 is 3/L + 2 (1/2 - 1/L), of grade 3 2 (1/2), of grade 2 1/2, of grade 1 0. The anticipated
    spread under these predictions is 0; under predictions learned from all the gold (a 4, b 3, c 1, d 1 -> 1/2 at
    grade 1, 1/4 at 3, 1/4 at 4; e and f ((2, 1, 1) + 4 (1/2, 1/4, 1/4)) / 8 = the same, c and d left out ((1, 1, 1)
    + (2, 1, 1)) / 7 = (3/7, 2/7, 2/7)) it is the larger, and taken. The judge's interval (the other test) reaches
    past 1 and is cut there; whichever is narrower after the cut is reported."""
    log3 = math.log2(3)
    dcg = idcg = 3 + 2 / log3
    slope = {1: 0.0, 2: 0.5, 3: 1.0, 4: 3 / log3 + 2 * (0.5 - 1 / log3)}
    grad = {g: -dcg / idcg**2 * slope[g] for g in slope}  # d NDCG / d count of grade g

    def variance(p):  # a' (diag p - p p') a over grades
        return sum(p[g] * grad[g] ** 2 for g in p) - sum(p[g] * grad[g] for g in p) ** 2

    left_out, predicted = {1: 3 / 7, 3: 2 / 7, 4: 2 / 7}, {1: 0.5, 3: 0.25, 4: 0.25}
    alone = dcg / idcg + 2 * 0.0  # N/n - 1 = 1, two pairs, residuals 0
    alone_se = math.sqrt(4 * (2 * variance(left_out) + 2 * variance(predicted)) / 3)  # N^2 (1 - n/N) / n = 4
    alone_ends = (max(alone - 1.959964 * alone_se, 0.0), min(alone + 1.959964 * alone_se, 1.0))
    # the judge's, as in test_hand_computed_anticipated_spread
    a3 = -dcg / idcg**2
    judge = 1.0
    judge_se = math.sqrt(4 * a3**2 * (2 * (106 / 147) * (41 / 147) + 2 * (113 / 174) * (61 / 174)) / 3)
    judge_ends = (max(judge - 1.959964 * judge_se, 0.0), min(judge + 1.959964 * judge_se, 1.0))
    result, _ = run_corrected([RUN], LABELS, GOLD, Settings(relevant_from=3), metrics="ndcg", design="pairs",
                              certain=CERTAIN, per_query_coverage=None)
    value = result.runs["run"][0].corrected
    # here the judge's is the narrower (0.492 against 0.737 wide): it is reported
    assert judge_ends[1] - judge_ends[0] < alone_ends[1] - alone_ends[0]
    assert value.spread == "anticipated" and (value.estimate, value.se_judge) == pytest.approx((judge, judge_se))
    # the human-only one, as the library computes it for the fallback, is the hand-computed one
    pool = gold_pool(LABELS, GOLD, "pairs", CERTAIN)
    model = corrected_module._Model(blind_pool(pool), Settings(relevant_from=3))
    c = corrected_module.contribution(RUN, ["q"], parse_metrics("ndcg")[0], model, Settings(relevant_from=3))
    own = corrected_module._within(estimate(c, model.pool, 0.95, anticipated=_larger(model.pool, model,
                                                                                      Settings(relevant_from=3))),
                                   0.0, 1.0)
    assert (own.estimate, own.se_judge) == pytest.approx((alone, alone_se))
    assert narrower(value, own) == value.model_copy(update={"power_lambda": 1.0})
    assert narrower(value.model_copy(update={"ci_low": 0.1}), own).spread == "human only"
    # two estimates more than 1 human-only se apart: one is biased, and the interval is the hull of both
    assert own.ci_low == pytest.approx(1 - 1.959964 * alone_se) and own.ci_high == 1.0
    far = value.model_copy(update={"estimate": 0.2, "ci_low": 0.1, "ci_high": 0.3, "ci_low_queries": 0.05,
                                   "ci_high_queries": 0.35})
    hull = narrower(far, own)
    assert hull.spread == "both" and hull.estimate == 0.2 and (hull.ci_low, hull.ci_high) == (0.1, 1.0)
    assert (hull.ci_low_queries, hull.ci_high_queries) == (0.05, 1.0)
    near = far.model_copy(update={"estimate": 1 - 0.9 * alone_se})  # within 1 se, the judge's the narrower: it
    assert narrower(near, own) == near.model_copy(update={"power_lambda": 1.0})
