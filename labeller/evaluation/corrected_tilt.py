"""The predictions of ungraded pairs in labeller.evaluation.corrected learn from the gold: which gold
(`learning_gold`) and the per-query tilt of the calibration (`query_tilt`, recall's: corrected.TILTED)."""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_pool import GoldPool


def learning_gold(pool: GoldPool) -> np.ndarray:
    """The gold pairs the predictions learn from: all of it, or beside a certain stratum (plan top:K) the random
    gold only. The predictions stand for the random strata, and the certain pairs are not a sample of them: the
    runs' top pairs are far more often relevant than the rest with the same judge grade (on TREC DL19 the rest
    predicted from all the gold ran high and recall@100 covered 4-6% per run: benchmarks/README.md)."""
    return pool.in_gold & ~pool.certain if len(pool.certain) else pool.in_gold


def query_tilt(pool: GoldPool, base: np.ndarray, human: np.ndarray, gold: np.ndarray,
               strength: float) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's calibrated distribution P(human | judge grade), tilted per human grade g by its query's gold:
    (seen_g + s p_g) / (expected_g + s p_g), seen_g the query's gold pairs people gave g, expected_g the sum of their
    calibrated P(g), p_g the share of g over all the gold and s `strength` pseudo-pairs (a query without gold keeps
    the calibration), then normalised. Returns it, and for each gold pair the same without the pair itself (its
    leave-one-out prediction must not use its own grade)."""
    names = {q: n for n, q in enumerate(sorted(pool.by_query))}
    at = np.array([names[q] for q in pool.query])
    seen, expected = np.zeros((len(names), base.shape[1])), np.zeros((len(names), base.shape[1]))
    np.add.at(seen, at[gold], human[gold])
    np.add.at(expected, at[gold], base[gold])
    pseudo = strength * human[gold].mean(axis=0) if gold.any() else np.zeros(base.shape[1])

    def tilt(seen_rows, expected_rows):
        bottom = expected_rows + pseudo
        factor = np.where(bottom > 0, (seen_rows + pseudo) / np.where(bottom > 0, bottom, 1.0), 1.0)
        out = base * factor
        total = out.sum(axis=1, keepdims=True)
        return np.where(total > 0, out / np.where(total > 0, total, 1.0), base)

    own = np.where(gold[:, None], 1.0, 0.0)
    return tilt(seen[at], expected[at]), tilt(seen[at] - own * human, expected[at] - own * base)
