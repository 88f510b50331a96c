"""BM25 over chosen document fields, on bm25s, with a deterministic top k."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from labeller.errors import ConfigError
from labeller.records import Doc, Query
from labeller.retrieval.base import Hit
from labeller.retrieval.tokenize import tokenize


def as_docs(corpus: Mapping[str, Doc] | Iterable[Doc]) -> list[Doc]:
    docs = list(corpus.values()) if isinstance(corpus, Mapping) else list(corpus)
    if not docs:
        raise ConfigError("cannot build a retriever over an empty corpus; expected at least one document")
    return docs


def field_text(text: str, fields: Mapping[str, object], names: Sequence[str]) -> str:
    """The text of the named fields, joined; 'text' is the record's own text."""
    parts = [text if name == "text" else fields.get(name) for name in names]
    return " ".join(str(p) for p in parts if p is not None and p != "")


class BM25Retriever:
    """Okapi BM25 (Lucene variant) over `fields` of each document.

    `query_fields` says which query fields form the search text when a whole Query is searched
    (see make_run); only what a retriever may legitimately see belongs there — never a
    label-time-only field such as a transaction's final category.
    """

    def __init__(self, corpus: Mapping[str, Doc] | Iterable[Doc], *, name: str = "bm25",
                 fields: Sequence[str] = ("text",), query_fields: Sequence[str] = ("text",),
                 k1: float = 1.2, b: float = 0.75) -> None:
        import bm25s  # imported here: the CLI must start fast

        docs = as_docs(corpus)
        self.name, self.fields, self.query_fields = name, tuple(fields), tuple(query_fields)
        self.k1, self.b = float(k1), float(b)
        missing = [f for f in self.fields if f != "text" and all(f not in d.fields for d in docs)]
        if missing:
            raise ConfigError(f"retriever '{name}' indexes field '{missing[0]}', which no document has; "
                              f"expected a corpus column of that name", field=missing[0])
        self._ids = np.array([d.doc_id for d in docs], dtype=object)
        self._texts = [d.text for d in docs]
        self._model = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        self._model.index([tokenize(field_text(d.text, d.fields, self.fields)) for d in docs],
                          show_progress=False)

    def query_text(self, query: Query) -> str:
        return field_text(query.text, query.fields, self.query_fields)

    def search(self, query: str, k: int) -> list[Hit]:
        """The top k documents with a positive score, best first; ties go to the smaller doc_id."""
        vocab = self._model.vocab_dict
        ids = [vocab[t] for t in tokenize(query) if t in vocab]
        if not ids or k <= 0:
            return []
        scores = np.asarray(self._model.get_scores_from_ids(ids), dtype=np.float64)
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > k:
            # Keep every document tied with the k-th score, so the tie-break below sees them all.
            kth = np.partition(scores[candidates], -k)[-k]
            candidates = candidates[scores[candidates] >= kth]
        best = sorted(candidates.tolist(), key=lambda i: (-scores[i], self._ids[i]))[:k]
        return [Hit(doc_id=self._ids[i], score=float(scores[i]), text=self._texts[i]) for i in best]
