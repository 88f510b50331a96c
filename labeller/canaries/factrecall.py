"""Fact recall: how many of a canary's facts a text (retrieved passages or an answer) contains.

recall = recalled facts / total facts. A fact is recalled when its value or any alias appears
after case folding and whitespace collapsing ("36 MG" finds "36 mg"; "36mg" needs its own alias).
Any forbidden string found sets the score to 0: it is a hard gate, not a penalty. With no facts
and a non-empty forbidden list the check is a pure no-hallucination probe (score 1 or 0).
For cross-source canaries recall is also computed per store, and every store must pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from labeller.canaries.model import Fact


def normalise(text: str) -> str:
    """Case-folded, with every run of whitespace turned into one space."""
    return " ".join(text.casefold().split())


class FactScore(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    score: float  # recall, or 0 when a forbidden string was found
    recall: float
    found: list[str]
    missing: list[str]
    forbidden_hits: list[str]
    per_store: dict[str, float]
    threshold: float
    passed: bool


def fact_recall(texts: str | Sequence[str], facts_by_store: Mapping[str, Iterable[Fact]],
                forbidden: Iterable[str] = (), threshold: float = 1.0) -> FactScore:
    """Score texts against facts (grouped by the store they live in) and a forbidden list."""
    if isinstance(texts, str):
        texts = [texts]
    # Each text is searched on its own so a fact never matches across the join of two passages.
    haystack = [normalise(t) for t in texts]

    def present(form: str) -> bool:
        needle = normalise(form)
        return bool(needle) and any(needle in h for h in haystack)

    found: list[str] = []
    missing: list[str] = []
    per_store: dict[str, float] = {}
    for store, facts in facts_by_store.items():
        facts = list(facts)
        hits = [f for f in facts if any(present(form) for form in f.forms())]
        found += [f.value for f in hits]
        missing += [f.value for f in facts if f not in hits]
        if facts:
            per_store[store] = len(hits) / len(facts)
    total = len(found) + len(missing)
    recall = len(found) / total if total else 1.0
    forbidden_hits = [f for f in forbidden if present(f)]
    score = 0.0 if forbidden_hits else recall
    passed = not forbidden_hits and score >= threshold and all(r >= threshold for r in per_store.values())
    return FactScore(score=score, recall=recall, found=found, missing=missing, forbidden_hits=forbidden_hits,
                     per_store=per_store, threshold=threshold, passed=passed)
