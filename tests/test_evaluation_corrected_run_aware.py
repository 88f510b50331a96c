"""NDCG's run-aware model point under the pair design (labeller.evaluation.corrected_run_aware): a planted case
computed by hand, and a world where a good run's ranking knows people's grades beyond the judge's."""

from __future__ import annotations

import random

import numpy as np

from labeller.evaluation.corrected import _Model, _positions, corrected
from labeller.evaluation.corrected_pool import gold_pool
from labeller.evaluation.corrected_run_aware import run_aware
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking
from labeller.evaluation.scoring import score_run
from tests.test_evaluation_corrected import judgments
from tests.test_evaluation_corrected_recall import random_gold, world

SETTINGS = Settings(relevant_from=3, gain="exponential")


def test_planted_shift_by_hand():
    """One query: d0-d7 of judge grade 2, e0-e1 of judge grade 4; the run's top 4 is d0-d3. People gave d0, d1 (in the
    top) 4 and d4, d5 (outside it) 1. From the judge grade alone every ungraded d is 1 or 4 at even odds
    (calibration 2 of 4 each, the query's own gold the same). In the top, grade 4's shrunk rate is (2 + 4 * 1/2) /
    (2 + 4) = 2/3 against (2 + 2) / (4 + 4) = 1/2 overall, grade 1's (0 + 2) / 6 = 1/3 against 1/2: d2, d3 become
    P(4) = 1/2 * 4/3 = 2/3 (normalised: 1/3 + 2/3 = 1), outside d6, d7 P(4) = 1/3.
    d0 left out: its prediction from the judge grade without itself is (2 + 2, 1 + 2) / 7 = (4/7, 3/7) for grades
    (1, 4), the top's rates without it (0 + 2) / 5 = 2/5 and (1 + 2) / 5 = 3/5 against overall (2 + 2) / 7 = 4/7
    and (1 + 2) / 7 = 3/7, so (4/7 * 7/10, 3/7 * 7/5) = (0.4, 0.6): its residual is -0.4 at grade 1, +0.4 at 4."""
    labels = {"q": {**{f"d{i}": 2 for i in range(8)}, "e0": 4, "e1": 4}}
    gold = {"q": {"d0": 4, "d1": 4, "d4": 1, "d5": 1}}
    pool = gold_pool(judgments(labels, kind="labels"), judgments(gold), "pairs")
    model = _Model(pool, Settings(relevant_from=3))
    run = Ranking("run", docs={"q": [f"d{i}" for i in range(8)] + ["e0", "e1"]})
    aware = run_aware(model, run, ["q"], 4, _positions)
    at = {d: pool.index["q", d] for d in labels["q"]}
    for doc, p4 in (("d2", 2 / 3), ("d3", 2 / 3), ("d6", 1 / 3), ("d7", 1 / 3)):
        assert np.allclose(model.model[at[doc]][[0, 3]], [0.5, 0.5])  # before: even odds
        assert np.allclose(aware.model[at[doc]], [1 - p4, 0, 0, p4, 0]), (doc, aware.model[at[doc]])
    assert np.allclose(aware.residual[at["d0"]], [-0.4, 0, 0, 0.4, 0])
    assert np.allclose(aware.model[at["d0"]], [0, 0, 0, 1, 0])  # a gold pair's model point is people's grade
    blind = gold_pool(judgments({"q": {d: 3 for d in labels["q"]}}, kind="labels"), judgments(gold), "pairs")
    alike = _Model(blind, Settings(relevant_from=3))
    assert run_aware(alike, run, ["q"], 4, _positions) is alike  # one judge grade: the judge-free arm stays as it is


def test_good_run_estimate_nearer_the_truth():
    """The recall world (the judge keeps people's grade half the time, the run ranks by people's grade plus noise),
    ~6 random gold pairs a query, 20 draws: exponential nDCG@10 of the good run is estimated without the first-order
    estimate's low bias (measured before: -0.93 se on average, 13 of 20 covered; after: -0.37, 17 of 20), and a
    random ranking of the same pool stays covered."""
    human, judge, good = world(0)
    rng = random.Random(5)
    chance = Ranking("chance", docs={q: rng.sample(docs, len(docs)) for q, docs in good.docs.items()})
    specs, labels = parse_metrics("ndcg@10"), judgments(judge, kind="labels")
    truth = {r.name: score_run(r, judgments(human), specs, SETTINGS).metrics["ndcg@10"] for r in (good, chance)}
    scores = {r.name: score_run(r, labels, specs, SETTINGS) for r in (good, chance)}
    errors, covered = {"good": [], "chance": []}, {"good": 0, "chance": 0}
    for seed in range(20):
        out = corrected([good, chance], scores, labels, judgments(random_gold(human, 240, random.Random(seed))),
                        specs, SETTINGS, design="pairs", bootstrap=1, per_query_coverage=None)
        for name in errors:
            value = out.runs[name][0].corrected
            errors[name].append((value.estimate - truth[name]) / value.se_judge)
            covered[name] += value.ci_low <= truth[name] <= value.ci_high
    assert np.mean(errors["good"]) > -0.6 and covered["good"] >= 16, (np.mean(errors["good"]), covered)
    assert covered["chance"] >= 17, covered
