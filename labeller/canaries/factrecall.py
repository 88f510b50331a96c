"""Fact recall: how many of a canary's facts a text (retrieved passages or an answer) contains.

recall = recalled facts / total facts. A fact is recalled when its value or any alias appears in
the text **as whole tokens** (`tokens` below): "7351" is not found in "17351" nor in "ref 73514",
and "X9-KITE-42" is not found in "X9-KITE-421". Any forbidden string found (by the same rule) sets
the score to 0: it is a hard gate, not a penalty. With no facts and a non-empty forbidden list the
check is a pure no-hallucination probe (score 1 or 0). For cross-source canaries recall is also
computed per store, and every store must pass.

Tokens: the text is case folded and split into runs of letters and digits; the punctuation
`. , : / ' -` is kept when it stands *between* two letters or digits, so a code with punctuation is
one token ("X9-KITE-42", "NF-A12x25", "2026-01-05", "1,250.00", "05/01/2026"); every other
character (whitespace, other punctuation, punctuation at a token's edge: "X9-KITE-42." or
"(LO1923)") separates tokens. A form of several tokens matches where its tokens appear in order,
next to each other: "36 MG" finds "36 mg" (whitespace and case do not count), but "36mg" is one
token and needs its own alias, and so does "X9 KITE 42". The same rule serves planting (a fact
must not already occur in the corpus) and scoring.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from labeller.canaries.model import Fact

TOKEN = re.compile(r"[^\W_]+(?:[.,:/'-][^\W_]+)*")  # internal punctuation kept: codes, dates, amounts


def normalise(text: str) -> str:
    """Case-folded, with every run of whitespace turned into one space."""
    return " ".join(text.casefold().split())


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.casefold())


def token_text(text: str) -> str:
    """The text's tokens between single spaces, with a space at each end: a form of whole tokens is
    inside it exactly when token_text(form).strip() padded with spaces is a substring (tokens hold no space)."""
    return " " + " ".join(tokens(text)) + " "


def contains(haystack: str, form: str) -> bool:
    """True when `form` appears as whole tokens in `haystack` (a token_text)."""
    needle = token_text(form)
    return needle != "  " and needle in haystack


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
    haystack = [token_text(t) for t in texts]

    def present(form: str) -> bool:
        return any(contains(h, form) for h in haystack)

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
