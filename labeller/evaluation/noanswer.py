"""The no-answer bucket: queries for which no judged document is relevant.

For such a query (no document graded >= --relevant-from) recall, MAP and MRR are 0 whatever the
retriever does, so averaging it in only drags every run down by the same amount and hides
real differences; for a bookkeeping product it is also a different question ("did we return
nothing useful when nothing useful exists?"). labeller therefore keeps these queries apart:
- `metrics` (what the gate and comparisons use) averages over the other queries;
- `trec_eval` gives the trec_eval-comparable mean, no-answer queries included, so a published
  figure can always be reproduced (the two are equal when the bucket is empty, as on TREC DL19);
- `per_query` still lists every evaluated query, and `no_answer.query_ids` names the bucket.
"""

from __future__ import annotations

from labeller.evaluation.qrels import Judgments


def split(query_ids: list[str], judgments: Judgments, relevant_from: int) -> tuple[list[str], list[str]]:
    """(answerable, no-answer) in the given order."""
    relevant = judgments.relevant_queries(relevant_from)
    return [q for q in query_ids if q in relevant], [q for q in query_ids if q not in relevant]
