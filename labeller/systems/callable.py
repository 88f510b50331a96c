"""A Python retriever called in process: a labeller retriever name or "package.module:function".

    kind = "callable"
    [system]
    retriever = "bm25"                 # or "our_search:build" (see labeller.retrieval.imported)
    corpus = "corpus.jsonl"            # what it is built over
    args = { k1 = 1.2 }

Its `search(query, k)` returns Hits; a search that also takes `identity` (user and groups) gets it.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from labeller.retrieval.base import Retriever
from labeller.systems.base import ResultItem, SearchRequest, SearchResponse


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    retriever: str
    corpus: str | None = None
    args: dict[str, Any] = {}


class CallableSystem:
    live = True

    def __init__(self, retriever: Retriever, name: str | None = None):
        self.retriever, self.name = retriever, name or retriever.name
        try:
            self._takes_identity = "identity" in inspect.signature(retriever.search).parameters
        except (TypeError, ValueError):
            self._takes_identity = False

    def search(self, request: SearchRequest) -> SearchResponse:
        try:
            extra = {"identity": request.identity} if self._takes_identity else {}
            hits = self.retriever.search(request.query, request.k, **extra)
        except Exception as exc:  # the system's own failure is this case's integration failure
            return SearchResponse(error=f"{type(exc).__name__}: {exc}")
        return SearchResponse(results=[ResultItem(doc_id=h.doc_id, score=h.score) for h in hits][:request.k])

    def describe(self) -> dict[str, Any]:
        return {"kind": "callable", "retriever": self.retriever.name}

    def close(self) -> None:
        pass


def open_system(settings: Settings, base: Path, name: str) -> CallableSystem:
    from labeller.io.inputs import read_corpus
    from labeller.retrieval import make_retriever

    corpus = read_corpus(base / settings.corpus) if settings.corpus else {}
    return CallableSystem(make_retriever(settings.retriever, list(corpus.values()), **settings.args), name)
