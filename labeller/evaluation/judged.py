"""judged@k: how much of a run's top k has a judgment, and which pairs are the holes.

Without --fill-holes an unjudged document counts as not relevant, so a run that returns
documents nobody graded looks worse than it may be; judged@k says how much that can matter.
judged@k of a query is (judged documents in its top k) / min(k, documents returned), the
definition ir_measures' Judged@k uses; the run's value is the mean over evaluated queries.
"""

from __future__ import annotations

from labeller.evaluation.qrels import Judgments
from labeller.evaluation.runs import Ranking
from labeller.records import Pair


def judged_at(ranking: Ranking, judgments: Judgments, k: int, query_ids: list[str]) -> tuple[float | None, int]:
    """(mean judged@k over the queries the run answers, number of unjudged pairs in their top k)."""
    shares, holes = [], 0
    for qid in query_ids:
        top = ranking.top(qid, k)
        if not top:
            continue
        judged = judgments.grades.get(qid, {})
        hit = sum(d in judged for d in top)
        shares.append(hit / len(top))
        holes += len(top) - hit
    return (sum(shares) / len(shares) if shares else None), holes


def holes(ranking: Ranking, judgments: Judgments, depth: int, query_ids: list[str]) -> list[Pair]:
    """The unjudged pairs in the top `depth` of each given query, in ranking order."""
    out = []
    for qid in query_ids:
        judged = judgments.grades.get(qid, {})
        out += [Pair(query_id=qid, doc_id=d) for d in ranking.top(qid, depth) if d not in judged]
    return out
