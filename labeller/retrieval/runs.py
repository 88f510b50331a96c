"""Turn a retriever's answers to a set of queries into a run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from labeller.records import Query, RunEntry
from labeller.retrieval.base import Retriever


def make_run(retriever: Retriever, queries: Mapping[str, Query] | Iterable[Query], k: int) -> list[RunEntry]:
    """The top k of `retriever` for every query, ranked 1..k, queries in id order.

    A retriever that knows which query fields it may see (BM25Retriever.query_text) is given those;
    any other is given the query's text.
    """
    items = list(queries.values()) if isinstance(queries, Mapping) else list(queries)
    text_of = getattr(retriever, "query_text", None)
    run: list[RunEntry] = []
    for query in sorted(items, key=lambda q: q.query_id):
        text = text_of(query) if callable(text_of) else query.text
        for rank, hit in enumerate(retriever.search(text, k), start=1):
            run.append(RunEntry(query_id=query.query_id, doc_id=hit.doc_id, score=hit.score, rank=rank))
    return run
