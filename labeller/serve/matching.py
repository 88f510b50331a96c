"""Match retrieved passages to ground-truth texts, and score one query variant.

Both texts are first normalised (case folded, whitespace collapsed). Then a passage matches a
ground-truth text:

- *exactly* when the two are equal or the whole ground truth appears inside the passage;
- *fuzzily* when their similarity reaches `score_threshold` (0..1). Similarity is rapidfuzz's
  normalised Indel similarity: `partial_ratio` when the passage is at least as long as the ground
  truth (the ground truth is approximately found inside a longer chunk), and the whole-text `ratio`
  when the passage is shorter (a fragment must resemble the whole ground truth, so a two-word
  passage does not match a paragraph just because it appears in it).

Metrics, for the top k passages of one variant:
precision = passages matching at least one ground truth / passages returned (0 when none);
recall = ground truths matched by at least one passage / ground truths;
F1 = their harmonic mean (0 when both are 0); hit_rate = 1 when any ground truth was matched, else 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz

from labeller.canaries.factrecall import normalise


class Match(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ground_truth: int  # index into ground_truth_texts
    kind: str  # "exact" or "fuzzy"
    similarity: float


class VariantMetrics(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    precision: float
    recall: float
    f1: float
    hit_rate: float
    k: int  # passages asked for (top_k)
    retrieved: int  # passages the retriever returned (may be fewer than k)
    matched_ground_truths: list[int]


def similarity(passage: str, truth: str) -> float:
    """Similarity in 0..1 of two normalised texts (see module docstring)."""
    if not passage or not truth:
        return 0.0
    score = fuzz.partial_ratio(passage, truth) if len(passage) >= len(truth) else fuzz.ratio(passage, truth)
    return score / 100.0


def match_passage(passage: str, truths: Sequence[str], threshold: float) -> list[Match]:
    """Every ground truth this passage matches, exact matches first considered."""
    p = normalise(passage)
    out = []
    for i, truth in enumerate(truths):
        t = normalise(truth)
        if t and (p == t or t in p):
            out.append(Match(ground_truth=i, kind="exact", similarity=1.0))
            continue
        sim = similarity(p, t)
        if sim >= threshold:
            out.append(Match(ground_truth=i, kind="fuzzy", similarity=round(sim, 4)))
    return out


def variant_metrics(matches: Sequence[Sequence[Match]], n_truths: int, k: int) -> VariantMetrics:
    """Metrics from the matches of each returned passage (one list per passage, in rank order)."""
    retrieved = len(matches)
    relevant = sum(1 for m in matches if m)
    found = sorted({m.ground_truth for ms in matches for m in ms})
    precision = relevant / retrieved if retrieved else 0.0
    recall = len(found) / n_truths if n_truths else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return VariantMetrics(precision=precision, recall=recall, f1=f1, hit_rate=1.0 if found else 0.0,
                          k=k, retrieved=retrieved, matched_ground_truths=found)
