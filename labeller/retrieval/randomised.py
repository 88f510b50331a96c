"""A deliberately broken retriever: seeded random documents with decreasing scores.

It exists so a regression gate or a canary probe can be shown failing on a real run; no one
should deploy it. The same seed and query always give the same ranking.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping

from labeller.records import Doc
from labeller.retrieval.base import Hit
from labeller.retrieval.bm25 import as_docs


class RandomRetriever:
    def __init__(self, corpus: Mapping[str, Doc] | Iterable[Doc], *, name: str = "random", seed: int = 0) -> None:
        self.name, self.seed = name, seed
        self._docs = sorted(as_docs(corpus), key=lambda d: d.doc_id)

    def search(self, query: str, k: int) -> list[Hit]:
        digest = hashlib.sha256(f"{self.seed}:{query}".encode()).digest()
        picked = random.Random(digest).sample(self._docs, min(k, len(self._docs)))
        return [Hit(doc_id=d.doc_id, score=float(k - i), text=d.text) for i, d in enumerate(picked)]
