"""Each metric on a ranking small enough to compute by hand, and metric-name parsing."""

from __future__ import annotations

import math

import pytest

from labeller.errors import BadInputError
from labeller.evaluation import Judgments, Ranking, Settings, parse_metrics, score_run

# Grades on labeller's 1-5 scale: gain = grade - 1. d4 is judged but never retrieved.
GRADES = {"q": {"d1": 4, "d2": 2, "d3": 1, "d4": 3}}
RANKING = Ranking(name="r", source="", docs={"q": ["d3", "d1", "d2"]})


def values(metrics: str, *, relevant_from: int = 3, gain: str = "linear", grades=GRADES, ranking=RANKING):
    scores = score_run(ranking, Judgments(grades, "test", "gold"), parse_metrics(metrics),
                       Settings(relevant_from=relevant_from, gain=gain))
    return {name: per_query["q"] for name, per_query in scores.per_query.items()}


def test_ndcg_linear_by_hand():
    # DCG@3 = 0/log2(2) + 3/log2(3) + 1/log2(4); ideal order of gains 3, 2, 1.
    dcg = 0 + 3 / math.log2(3) + 1 / 2
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    assert values("ndcg@3")["ndcg@3"] == pytest.approx(dcg / ideal, abs=1e-12)
    # @1: the top document has gain 0.
    assert values("ndcg@1")["ndcg@1"] == 0.0


def test_ndcg_exponential_by_hand():
    # Gains 2^(grade-1) - 1: d1 -> 7, d2 -> 1, d3 -> 0, d4 -> 3.
    dcg = 0 + 7 / math.log2(3) + 1 / 2
    ideal = 7 + 3 / math.log2(3) + 1 / 2
    assert values("ndcg@3", gain="exponential")["ndcg@3"] == pytest.approx(dcg / ideal, abs=1e-12)


def test_ndcg_ignores_relevant_from():
    assert values("ndcg@3", relevant_from=5) == values("ndcg@3", relevant_from=2)


def test_binary_metrics_by_hand():
    # Relevant (grade >= 3): d1 (rank 2) and d4 (not retrieved).
    got = values("recall@2,recall@1,precision@2,precision@5,mrr,mrr@1,hit_rate@1,hit_rate@2,map")
    assert got == pytest.approx({"recall@2": 1 / 2, "recall@1": 0.0, "precision@2": 1 / 2, "precision@5": 1 / 5,
                                 "mrr": 1 / 2, "mrr@1": 0.0, "hit_rate@1": 0.0, "hit_rate@2": 1.0,
                                 "map": (1 / 2) / 2}, abs=1e-12)


def test_relevant_from_moves_the_binary_threshold():
    # From grade 2, d2 (rank 3) is relevant too: AP = (1/2 + 2/3) / 3 relevant documents.
    got = values("map,recall@3", relevant_from=2)
    assert got["map"] == pytest.approx((1 / 2 + 2 / 3) / 3, abs=1e-12)
    assert got["recall@3"] == pytest.approx(2 / 3, abs=1e-12)


def test_ranking_order_is_what_is_scored():
    # d1 first instead of d3: MRR becomes 1 and NDCG@1 is gain 3 over ideal gain 3.
    ranking = Ranking(name="r", source="", docs={"q": ["d1", "d3", "d2"]})
    got = values("mrr,ndcg@1", ranking=ranking)
    assert got == pytest.approx({"mrr": 1.0, "ndcg@1": 1.0})


def test_metric_names_are_kept_as_given():
    specs = parse_metrics("ndcg@10, recall@100,MRR@10,p@5,map,ndcg@10")
    assert [s.name for s in specs] == ["ndcg@10", "recall@100", "MRR@10", "p@5", "map"]
    assert [s.ranx_name(3) for s in specs] == ["ndcg@10", "recall@100-l2", "mrr@10-l2", "precision@5-l2", "map-l2"]
    assert specs[0].ranx_name(3, "exponential") == "ndcg_burges@10"


@pytest.mark.parametrize("bad, message", [
    ("ndgc@10", "unknown metric 'ndgc@10' \\(did you mean ndcg@10\\?\\)"),
    ("recal@100", "did you mean recall@100"),
    ("recall@100-l2", "relevance levels come from --relevant-from"),
    ("ndcg@0", "not a positive integer"),
    ("ndcg@ten", "not a positive integer"),
    (" , ", "no metrics given"),
])
def test_bad_metric_names(bad, message):
    with pytest.raises(BadInputError, match=message):
        parse_metrics(bad)
