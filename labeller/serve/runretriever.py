"""A retriever backed by a stored run: it answers the queries the run holds, looked up by their text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labeller.canaries.factrecall import normalise
from labeller.errors import BadInputError
from labeller.records import Doc, Query, RunEntry
from labeller.retrieval.base import Hit


class UnknownQueryError(BadInputError):
    """The posted query text is not one of the run's queries."""


class RunRetriever:
    def __init__(self, name: str, entries: Sequence[RunEntry], queries: Mapping[str, Query],
                 corpus: Mapping[str, Doc]) -> None:
        self.name = name
        self._ids = {normalise(q.text): qid for qid, q in queries.items()}
        self._corpus = corpus
        self._ranked: dict[str, list[RunEntry]] = {}
        for e in entries:
            self._ranked.setdefault(e.query_id, []).append(e)
        for ranked in self._ranked.values():
            ranked.sort(key=lambda e: (e.rank if e.rank is not None else 0, -e.score, e.doc_id))

    def search(self, query: str, k: int) -> list[Hit]:
        qid = self._ids.get(normalise(query))
        if qid is None:
            raise UnknownQueryError(f"retriever '{self.name}' replays a stored run and does not know this query; "
                                    "expected the text of one of its queries", field="query")
        return [Hit(doc_id=e.doc_id, score=e.score, text=self._corpus[e.doc_id].text if e.doc_id in self._corpus else "")
                for e in self._ranked.get(qid, [])[:k]]
