"""The predictions of ungraded pairs in labeller.evaluation.corrected learn from the gold: which gold
(`learning_gold`), the per-query tilt of the calibration (`query_tilt`, recall's: corrected.TILTED) and, beside a
certain stratum, NDCG's tilt from all of a query's gold (`top_tilt`)."""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_pool import GoldPool
from labeller.records import GRADE_MIN


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


def top_tilt(pool: GoldPool, base: np.ndarray, human: np.ndarray, strength: float) -> tuple[np.ndarray, np.ndarray]:
    """NDCG's tilt beside a certain stratum (plan top:K): `query_tilt` from all of a query's gold, each gold pair
    against the calibration of its own stratum: a certain pair against P(human | judge grade) of the certain pairs, a
    random one against `base` (the random gold's). A query whose top pairs are less often relevant than the judge's
    grades say across queries has its rest predicted less often relevant too.

    Why: the ideal DCG is concave in a query's counts of each grade, and beside a certain stratum the first-order
    correction is a tangent at the model point, which lies above a concave function: the further the model point's
    counts are from the query's true ones, the higher the ideal DCG comes out and the lower NDCG. With the rest
    predicted from the calibration of all queries (shrunk per (query, judge grade), a few random pairs each), queries
    with few relevant pairs got several predicted among their rest: on TREC DL19 with a rank-independent simulated
    judge the model point's ideal DCG@10 ran 12% above the truth, 6% after the first-order correction, and nDCG@10
    1.4-2.7 se low (benchmarks/README.md). A query's ~40 certain pairs say how rich it is better than its ~20 random
    ones alone: on LLMJudge at ~490 random pairs the tilt from the random gold only left nDCG@10 up to 1.3 se high (a
    noisier per-query model point, and NDCG convex in it), from all the gold up to 0.8 (untilted 0.4); on DL19 both
    covered 100% per run (benchmarks/README.md, "Held out")."""
    certain = pool.calibration(pool.in_gold & pool.certain)
    own = np.where(pool.certain[:, None], certain[pool.judge - GRADE_MIN], base)
    return query_tilt(pool, own, human, pool.in_gold, strength)
