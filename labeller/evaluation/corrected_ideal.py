"""NDCG's ideal DCG under the pair design: its expectation over the query's ungraded pairs, not the plug-in.

The ideal DCG@k is concave in the query's grade counts: with N_h the pairs of grade h or better and CD(n) the
discounts summed over the first min(n, k) positions, IDCG = sum_h (gain_h - gain_{h-1}) CD(N_h). At the expected
counts (the plug-in, labeller.evaluation.corrected_terms.ideal_dcg) it is above its expectation (Jensen), and its
gradient there moves with the query's own gold, which also sets the residuals it weighs: on LLMJudge the
linearised ideal DCG of a BM25 run's query came out 0.12 low on average (1,200 pairs, 200 subsets; t = -7),
and nDCG@10 +0.3 se high (benchmarks/README.md, "nDCG@10 under the pair design").

Here every ungraded pair's grade is drawn on its own from its predicted distribution and the gold pairs keep
people's grades: N_h = G_h + R_h, G_h the gold count, R_h a sum of independent Bernoulli(q_jh) (a Poisson-binomial,
its distribution computed exactly up to k). The value is E[IDCG]; a gold pair's gradient (per grade g) is
E[IDCG | that pair has grade g] with the others as they are, which does not use the pair's own grade: the first
order effect of its residual r is gradient . r.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binom


def _count_distribution(q: np.ndarray, cut: int) -> np.ndarray:
    """P(R = n) for n = 0..cut-1 and P(R >= cut) in the last column, per row of q (levels x pairs): R the sum of
    independent Bernoulli(q[:, j]). Pairs with the same probabilities (one judge grade's ungraded pairs of a query
    share their prediction) enter as one binomial."""
    out = np.zeros((q.shape[0], cut + 1))
    out[:, 0] = 1.0
    if not q.shape[1]:
        return out
    columns, repeats = np.unique(q.T, axis=0, return_counts=True)
    for column, m in zip(columns, repeats):
        pmf = binom.pmf(np.arange(cut)[None, :], int(m), column[:, None])
        head = np.array([np.convolve(out[h, :cut], pmf[h])[:cut] for h in range(q.shape[0])])
        out = np.concatenate((head, np.clip(1.0 - head.sum(axis=1, keepdims=True), 0.0, 1.0)), axis=1)
    return out


def expected_ideal(dist: np.ndarray, fixed: np.ndarray, gains: np.ndarray, k: int) -> tuple[float, np.ndarray,
                                                                                          np.ndarray]:
    """(E[IDCG@k], per row the vector E[IDCG@k | the row's pair has grade g] over the grades GRADE_MIN.., and the same
    for one pair more with grade g) for a query's pool pairs: `dist` their grade distributions (rows x grades),
    `fixed` the rows whose grade is known (people's grade, a point mass); k = 0: uncut."""
    rows, width = dist.shape
    cut = min(k, rows + 1) if k else rows + 1
    disc = 1.0 / np.log2(np.arange(cut + 2, dtype=np.float64) + 2.0)
    cum = np.concatenate(([0.0], np.cumsum(disc)))
    steps = np.diff(gains, prepend=0.0)[1:]  # gain_h - gain_{h-1} for h = GRADE_MIN+1.. (gain of the lowest is 0)
    above = np.cumsum(dist[:, ::-1], axis=1)[:, ::-1][:, 1:]  # P(grade >= h), h = GRADE_MIN+1..
    above = np.clip(above, 0.0, 1.0)
    gold = np.rint(above[fixed].sum(axis=0)).astype(np.int64) if fixed.any() else np.zeros(width - 1, np.int64)
    spread = _count_distribution(above[~fixed].T, cut)  # levels x (cut + 1)
    n = np.arange(cut + 1)

    def level(offset: np.ndarray) -> np.ndarray:
        """E[CD(min(G_h + offset_h + R_h, cut))] per level h, for offsets (..., levels)."""
        total = np.minimum(gold[..., None] + offset[..., None] + n, cut)
        return (cum[np.maximum(total, 0)] * spread).sum(axis=-1)

    value = float(steps @ level(np.zeros(width - 1, np.int64)))
    grades = np.arange(width)
    reaches = (grades[:, None] >= np.arange(1, width)[None, :]).astype(np.int64)  # grade g counts at level h
    extra = level(reaches) @ steps  # one pair more with grade g
    own = np.rint(above[fixed]).astype(np.int64)  # each gold pair's own count at each level
    per_row = np.zeros((rows, width))
    if fixed.any():
        per_row[fixed] = level(reaches[None, :, :] - own[:, None, :]) @ steps
    per_row[~fixed] = extra
    return value, per_row, extra



def second_order(dcg: float, ideal: float, top: np.ndarray, bottom: np.ndarray,
                 weights: np.ndarray) -> tuple[float, np.ndarray]:
    """The ratio's second-order term of one query's NDCG = DCG / IDCG, left out by the first-order correction:
    DCG_0 E[dI^2] / I_0^3 - E[dD dI] / I_0^2, dD and dI the true DCG and ideal DCG minus their values at the model
    point. Each gold pair i gives top_i (its effect on DCG) and bottom_i (on IDCG) and carries weight w_i = N_j / n_j
    - 1; dD is estimated by sum w_i top_i and dI by sum w_i bottom_i, and a product of the two by the product less
    the pairs' own terms sum (w_i^2 - w_i) top_i bottom_i (without them the product would add each pair's sampling
    variance: a U-statistic, unbiased for the product under independent sampling of the pairs).
    Also returned: each pair's first-order effect on the term (its derivative in the pair's w_i top_i and w_i
    bottom_i), for the variance: with it the pair's effect on the estimate is the ratio's gradient at the corrected
    point rather than at the model point."""
    if ideal <= 1e-12 or not len(weights):
        return 0.0, np.zeros(len(weights))
    d_dcg, d_ideal = float(weights @ top), float(weights @ bottom)
    own = weights**2 - weights
    cross = d_dcg * d_ideal - float(np.sum(own * top * bottom))
    square = d_ideal * d_ideal - float(np.sum(own * bottom * bottom))
    effect = -d_ideal / ideal**2 * top + (2.0 * dcg * d_ideal / ideal**3 - d_dcg / ideal**2) * bottom
    return dcg * square / ideal**3 - cross / ideal**2, effect
