"""NDCG's run-aware model point under the pair design without a certain stratum: each pair's prediction moved by
whether it is in the run's top k, a covariate beside its judge grade.

The first-order correction of NDCG = DCG / IDCG leaves the ratio's remainder at the model point, which is small
only when that point is near the truth for the pairs that carry DCG and the ideal DCG. Predicted from the judge grade
(and query) alone, a good run's top pairs are under-predicted: its ranking agrees with people's grades beyond the
judge's grade (on TREC DL19 the `strong` run's exponential nDCG@10 ran about 1 se low, benchmarks/README.md).

Here the prediction of `corrected._Model` (P(human | judge grade, query)) is multiplied, per people's grade g, by
how much more often the gold pairs of its judge grade have grade g inside the run's top k (or outside it) than
overall, pooled over queries, each rate shrunk towards the judge grade's calibration by SHRINK pseudo-pairs, then
normalised: a shift of the multinomial log odds (for two grades, of the log odds of relevance, as tried for
recall in commit 65e6721). A gold pair's residual is against the same without its own grade (leave one out). The
model differs per run; a difference of two runs subtracts each gold pair's effect under each run's own model
(corrected_estimate.Contribution.minus), both functions of that pair's draw, so its variance stays the pairs'.
"""

from __future__ import annotations

import numpy as np

from labeller.evaluation.corrected_ideal import expected_ideal
from labeller.evaluation.corrected_pool import GRADES
from labeller.records import GRADE_MIN

SHRINK = 4.0  # pseudo-pairs of the judge grade's calibration in each (judge grade, in the top k) cell
RUN_AWARE = True  # a switch for measuring against the prediction from the judge grade alone


def _shifted(prior: np.ndarray, cal: np.ndarray, cell_sum: np.ndarray, cell_n: np.ndarray, grade_sum: np.ndarray,
             grade_n: np.ndarray) -> np.ndarray:
    """`prior` (pairs x grades) times the ratio of its cell's shrunk grade rates to its judge grade's, normalised."""
    in_cell = (cell_sum + SHRINK * cal) / (cell_n + SHRINK)[:, None]
    overall = (grade_sum + SHRINK * cal) / (grade_n + SHRINK)[:, None]
    factor = np.where(overall > 0, in_cell / np.where(overall > 0, overall, 1.0), 1.0)
    out = prior * factor
    total = out.sum(axis=1, keepdims=True)
    return np.where(total > 0, out / np.where(total > 0, total, 1.0), prior)


class RunAware:
    """What corrected._expected_ndcg reads of a model (model point, residuals, gains, weights, the expected ideal
    DCG), at the run-aware prediction for one run: `top` marks the pool pairs in its top k (0/1)."""

    def __init__(self, model, top: np.ndarray):
        self.pool, self.gains, self.weight = model.pool, model.gains, model.weight
        pool, gold = model.pool, model.pool.in_gold
        grade = pool.judge - GRADE_MIN
        cell = grade * 2 + top.astype(np.int64)
        width = len(GRADES)
        sums = np.zeros((width * 2, width))
        np.add.at(sums, cell[gold], model.human[gold])
        counts = np.bincount(cell[gold], minlength=width * 2).astype(np.float64)
        grade_sums, grade_counts = sums[2 * grade] + sums[2 * grade + 1], counts[2 * grade] + counts[2 * grade + 1]
        cal = model.calibration[grade]
        own, own_n = np.where(gold[:, None], model.human, 0.0), gold.astype(np.float64)
        # model.expected is every pair's prediction without its own grade (a gold pair's leave-one-out)
        predicted = _shifted(model.expected, cal, sums[cell], counts[cell], grade_sums, grade_counts)
        left_out = _shifted(model.expected, cal, sums[cell] - own, counts[cell] - own_n, grade_sums - own,
                            grade_counts - own_n)
        self.model = np.where(gold[:, None], model.human, predicted)
        self.residual = np.where(gold[:, None], model.human - left_out, 0.0)
        self._ideal: dict[tuple[str, int], tuple] = {}

    def ideal(self, query: str, rows: np.ndarray, k: int) -> tuple:
        """The expected ideal DCG of a query at this run's model point (labeller.evaluation.corrected_ideal)."""
        if (query, k) not in self._ideal:
            self._ideal[query, k] = expected_ideal(self.model[rows], self.pool.in_gold[rows], self.gains, k)
        return self._ideal[query, k]


def run_aware(model, ranking, queries: list[str], k: int, positions):
    """The run-aware model of `ranking` (its top k of `queries`, `positions` as corrected._positions); `model` itself
    where every pair has one judge grade (the judge-free arm, corrected_power.blind_pool, stays human-only)."""
    if not RUN_AWARE or len(model.pool.judge) == 0 or (model.pool.judge == model.pool.judge[0]).all():
        return model
    top = np.zeros(len(model.pool.judge))
    for q in queries:
        pos = positions(ranking, model.pool, q, k)[0]
        top[pos[pos >= 0]] = 1.0
    return RunAware(model, top)
