"""Retriever scores into 0..1, so `score_threshold` (the contract's minimum similarity) means one thing
whatever the retriever: BM25 scores are unbounded, dense scores may be negative, a run's scores are
whatever its system wrote.

Per retriever, `score_normalisation` in the config (docs/serve.md):

- "max" (the default): each raw score divided by the best raw score of the same variant's candidate
  pool, so the best document scores 1.0 and the others keep their ratio to it (BM25 1.42 and 1.07
  become 1.0 and 0.7535); a negative score becomes 0. When no score is positive (negated distances),
  min-max over the pool instead: (s - min) / (max - min), 1.0 for all when they are equal.
- "none": the retriever already scores a similarity in 0..1 (a cosine of normalised embeddings);
  its scores are kept, clipped into [0, 1], and comparable across requests.

The raw score is returned beside the normalised one (`raw_score`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Normalisation = Literal["max", "none"]


def normalise_scores(raw: Sequence[float], method: Normalisation = "max") -> list[float]:
    if method == "none":
        return [min(max(s, 0.0), 1.0) for s in raw]
    if not raw:
        return []
    top = max(raw)
    if top > 0:
        return [max(s, 0.0) / top for s in raw]
    span = top - min(raw)
    return [1.0 if span == 0 else (s - min(raw)) / span for s in raw]
