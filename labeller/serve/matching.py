"""Match retrieved passages to ground truths honestly, and score one query variant.

A ground truth is a text (`ground_truth_texts`) or a document id (`ground_truth_doc_ids`, matched by
the passage's doc_id, exactly). A text is compared with a passage after both are split into tokens:
case folded, punctuation dropped except inside a token ("X9-KITE-42", "2024-03-01", "1,250.00"),
whitespace ignored. A token holding a digit is an *identifier* (an amount, a date, a number, a code),
compared exactly (thousands separators dropped: "1,250.00" = "1250.00"); the other tokens are *words*.
A passage matches a ground-truth text:

- *exactly* when the ground truth's token sequence appears whole, in order, inside the passage's;
- *fuzzily* when (1) every identifier of the ground truth is in the passage (as a multiset; and when
  the passage is shorter than the ground truth, the two multisets are equal), and (2) the similarity
  of their words is at least `match_threshold`: rapidfuzz's normalised Indel similarity,
  `partial_ratio` when the passage is at least as long as the ground truth, `ratio` when shorter (a
  fragment must resemble the whole ground truth). A ground truth without words matches on (1) alone.

So two transactions that differ only in their amount or date never match, however alike the rest.

Then each ground truth is credited to at most one passage and each passage to at most one ground
truth: the assignment with the most pairs (ties: the highest total similarity), computed by scipy's
`linear_sum_assignment`. Metrics, for the passages of one variant:
precision = passages assigned a ground truth / passages returned (0 when none);
recall = ground truths assigned a passage / ground truths; F1 = their harmonic mean (0 when both
are 0); hit_rate = true when any ground truth was matched.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz
from scipy.optimize import linear_sum_assignment

from labeller.canaries.factrecall import tokens

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


class Match(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ground_truth: int  # index into the ground truths: the texts first, then the doc ids
    kind: Literal["exact", "fuzzy", "doc_id"]
    similarity: float


class VariantMetrics(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    f1_score: float
    hit_rate: bool
    k: int  # passages asked for (top_k)
    precision: float
    recall: float
    retrieved: int  # passages the retriever returned (may be fewer than k)
    matched_ground_truths: list[int]


class _Tokens:
    """A text split into its token sequence, its identifiers (a multiset) and its words."""

    def __init__(self, text: str) -> None:
        self.sequence = [_THOUSANDS.sub("", t) for t in tokens(text)]
        self.identifiers = Counter(t for t in self.sequence if any(c.isdigit() for c in t))
        self.words = " ".join(t for t in self.sequence if not any(c.isdigit() for c in t))
        self.joined = " ".join(self.sequence)


def similarity(passage: str, truth: str) -> float:
    """Similarity in 0..1 of two normalised word strings (see module docstring)."""
    if not passage or not truth:
        return 0.0
    score = fuzz.partial_ratio(passage, truth) if len(passage) >= len(truth) else fuzz.ratio(passage, truth)
    return score / 100.0


def text_match(passage: str, truth: str, threshold: float) -> Match | None:
    """How the passage matches one ground-truth text, or None (ground_truth is left 0 for the caller)."""
    p, t = _Tokens(passage), _Tokens(truth)
    if not t.sequence:
        return None
    if f" {t.joined} " in f" {p.joined} ":
        return Match(ground_truth=0, kind="exact", similarity=1.0)
    if t.identifiers - p.identifiers or (len(p.joined) < len(t.joined) and p.identifiers != t.identifiers):
        return None
    sim = similarity(p.words, t.words) if t.words else 1.0
    return Match(ground_truth=0, kind="fuzzy", similarity=round(sim, 4)) if sim >= threshold else None


def candidate_matches(passage: str, doc_id: str, texts: Sequence[str], doc_ids: Sequence[str],
                      threshold: float) -> list[Match]:
    """Every ground truth this passage could be credited with, before the one-to-one assignment."""
    out = []
    for i, truth in enumerate(texts):
        found = text_match(passage, truth, threshold)
        if found is not None:
            out.append(found.model_copy(update={"ground_truth": i}))
    out += [Match(ground_truth=len(texts) + j, kind="doc_id", similarity=1.0)
            for j, gid in enumerate(doc_ids) if gid == doc_id]
    return out


def assign(candidates: Sequence[Sequence[Match]], n_truths: int) -> list[Match | None]:
    """One ground truth per passage at most, and vice versa: the most pairs, then the most similarity."""
    assigned: list[Match | None] = [None] * len(candidates)
    if not candidates or not n_truths:
        return assigned
    # Each edge weighs more than any number of similarities added up, so a larger assignment always wins.
    big = min(len(candidates), n_truths) + 1.0
    weight = np.zeros((len(candidates), n_truths))
    for row, matches in enumerate(candidates):
        for m in matches:
            weight[row, m.ground_truth] = big + m.similarity
    for row, col in zip(*linear_sum_assignment(weight, maximize=True)):
        if weight[row, col] > 0:
            assigned[row] = next(m for m in candidates[row] if m.ground_truth == col)
    return assigned


def variant_metrics(assigned: Sequence[Match | None], n_truths: int, k: int) -> VariantMetrics:
    """Metrics from the assigned match of each returned passage (in rank order)."""
    retrieved = len(assigned)
    found = sorted(m.ground_truth for m in assigned if m is not None)
    precision = len(found) / retrieved if retrieved else 0.0
    recall = len(found) / n_truths if n_truths else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return VariantMetrics(f1_score=f1, hit_rate=bool(found), k=k, precision=precision, recall=recall,
                          retrieved=retrieved, matched_ground_truths=found)
