"""Delete-one jackknife of the pair design's corrected estimate: its small-sample bias, removed.

The pair design's estimate (labeller.evaluation.corrected_estimate) is, per query q,
  total_q = f_q(model) + sum over q's gold pairs l of w_l z_l,      estimate = mean over queries of total_q,
w_l = N_h / n_h - 1 for a random gold pair of judge grade h (0 for a pair drawn with certainty). The model
predicts a query's ungraded pairs from that query's own gold pairs of the same judge grade (shrunk towards all
queries'), and recall and NDCG are ratios in it: f_q is curved in a prediction that is noisy with few gold pairs
per query, and the first-order correction leaves that curvature, a bias of order 1/n (on LLMJudge about half a
standard error for recall@100 of the BM25 runs, covering 88-91%).

Deleting one random gold pair i (query q, grade h) moves three things: its query's model (the pair itself becomes
a predicted one, and the prediction of its (query, grade) group loses its grade), the residuals z of q's other
gold pairs in that group (their leave-one-out prediction loses it too), and the weight of grade h, N_h/(n_h - 1)
- 1, for every gold pair of h. The first two are query-local (`query_jackknife`: the change of total_q), the
third is linear in the other queries' z (`bias_and_variance`). The all-query calibration P(human | judge grade),
the prior of every group, is held fixed: one pair of about n moves it by 1/n, against 1/m in its own group of m.

The stratified jackknife (without replacement: the (1 - n_h/N_h) factor), with theta_(i) the estimate without i:
  bias = sum_h (1 - n_h/N_h) (n_h - 1) (mean over i in h of theta_(i) - theta),
  variance = sum_h (1 - n_h/N_h) (n_h - 1) / n_h sum over i in h of (theta_(i) - mean_h theta_(.))^2.
Quenouille's correction theta - bias removes the 1/n term of the bias (Quenouille 1956; for ratio estimators
under stratified sampling, Jones 1974; Wolter, Introduction to Variance Estimation, ch. 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labeller.evaluation.corrected_terms import terms_batch


@dataclass
class Deletions:
    """One query's random gold pairs, each deleted in turn (row d), as changes to the query's model."""

    pairs: np.ndarray  # (d,) pool indices of the deleted pairs
    gold: np.ndarray  # (g,) pool indices of the query's gold pairs (whose z make total_q)
    free: np.ndarray  # (d, pool rows of the query) bool: the rows that move by `delta` when d is deleted
    free_count: np.ndarray  # (d,) how many
    delta: np.ndarray  # (d, grades): change of the prediction of d's group
    own: np.ndarray  # (d, grades): change of the deleted pair's own row (its prediction minus its grade)
    residual: np.ndarray  # (d, g, grades): the gold pairs' residuals after deleting d (d's own row zero)
    weight: np.ndarray  # (d, g): w_l after deleting d (0 for d itself)


def deletions(model, rows: np.ndarray) -> Deletions | None:
    """`model`: labeller.evaluation.corrected._Model; `rows`: the query's pool indices."""
    pool = model.pool
    gold = rows[pool.in_gold[rows]]
    random = gold[~pool.certain[gold]] if len(pool.certain) else gold
    if not len(random):
        return None
    shrink = model.shrink
    group = model.group
    sums, counts = model.group_sums[group[random]], model.group_counts[group[random]]  # (d, grades), (d,)
    own_grade = model.human[random]
    prior = model.prior[random]
    given = model.given
    before = (sums + prior) / (counts + shrink)[:, None]
    after = (sums - own_grade + prior) / (counts - 1 + shrink)[:, None]
    movable = ~pool.in_gold[rows] & ~given[rows]
    free = (group[rows][None, :] == group[random][:, None]) & movable[None, :]
    own = np.where(given[random][:, None], model.prediction[random], after) - own_grade
    residual = np.repeat(model.residual[gold][None], len(random), axis=0)
    same = (group[gold][None, :] == group[random][:, None]) & ~given[gold][None, :]  # (d, g)
    left = (sums[:, None, :] - own_grade[:, None, :] - model.human[gold][None] + prior[:, None, :]) \
        / (counts - 2 + shrink)[:, None, None]
    residual = np.where(same[:, :, None], model.human[gold][None] - left, residual)
    itself = gold[None, :] == random[:, None]
    residual[itself] = 0.0
    weight = np.repeat(model.weight[gold][None], len(random), axis=0)
    in_stratum = pool.judge[gold][None, :] == pool.judge[random][:, None]
    weight = np.where(in_stratum & (model.weight[gold] > 0)[None, :], model.weight_less[random][:, None], weight)
    weight[itself] = 0.0
    return Deletions(random, gold, free, free.sum(axis=1), after - before, own, residual, weight)


def _totals(spec, features: np.ndarray, counts: np.ndarray, residual: np.ndarray, weight: np.ndarray,
            top: np.ndarray, where: np.ndarray, feature_weights: np.ndarray, model, settings) -> np.ndarray:
    """total_q for each row of `features` (d, k) / `counts` (d, grades), the gold residuals (d, g, grades)."""
    value, feature_grad, count_grad = terms_batch(spec, features, np.maximum(counts, 0.0), model.gains,
                                                  settings.relevant_from)
    z = np.einsum("dgc,dc->dg", residual, count_grad)
    if features.shape[1]:
        z = z + np.where(top[None, :], feature_grad[:, where] * (residual @ feature_weights), 0.0)
    return value + np.sum(weight * z, axis=1)


def query_jackknife(spec, model, cut: Deletions, pos: np.ndarray, rows: np.ndarray, settings) -> dict[int, float]:
    """Pool pair -> the change of its query's total_q when it is deleted from the gold (the query-local part)."""
    weights = model.feature(spec)
    at = np.where(pos >= 0, pos, 0)
    feature = np.where(pos >= 0, model.model[at] @ weights, 0.0) if len(pos) else np.zeros(0)
    counts = model.model[rows].sum(axis=0)
    place = {int(i): t for t, i in enumerate(pos) if i >= 0}
    top = np.array([int(i) in place for i in cut.gold], dtype=bool)
    where = np.array([place.get(int(i), 0) for i in cut.gold], dtype=np.int64)
    base = _totals(spec, feature[None], counts[None], model.residual[cut.gold][None],
                   model.weight[cut.gold][None], top, where, weights, model, settings)[0]
    # the deleted rows: d's group moves by delta (free rows), d itself by own
    in_group = np.isin(pos, rows)  # positions that are pool pairs of this query
    moved = np.zeros((len(cut.pairs), len(pos)), dtype=bool)
    if len(pos):
        local = {int(r): n for n, r in enumerate(rows)}
        columns = np.array([local.get(int(i), -1) for i in pos])
        inside = in_group & (columns >= 0)
        moved[:, inside] = cut.free[:, columns[inside]]
    features = feature[None, :] + moved * (cut.delta @ weights)[:, None] \
        + (pos[None, :] == cut.pairs[:, None]) * (cut.own @ weights)[:, None]
    counts_after = counts[None, :] + cut.free_count[:, None] * cut.delta + cut.own
    after = _totals(spec, features, counts_after, cut.residual, cut.weight, top, where, weights, model, settings)
    return {int(i): float(a - base) for i, a in zip(cut.pairs, after)}


def stratum_weights(pool) -> tuple[np.ndarray, np.ndarray]:
    """Per pool pair, w = N_h / n_h - 1 of its random stratum (0 outside one, or ungraded), and the same after one
    of its stratum's gold pairs is deleted, N_h / (n_h - 1) - 1 (0 when none would be left)."""
    weight, less = np.zeros(len(pool.judge)), np.zeros(len(pool.judge))
    for h, (size, graded) in pool.stratum_sizes().items():
        members = pool.stratum(h)
        if graded:
            weight[members] = size / graded - 1.0
        if graded > 1:
            less[members] = size / (graded - 1) - 1.0
    return weight, less


def bias_and_variance(jack: dict[int, float], influence: dict[int, float], pool, n_queries: int) -> tuple[float, float]:
    """The stratified jackknife's bias and variance of the estimate (module docstring); `jack` from
    `query_jackknife` (a difference of runs: the difference of theirs), `influence` the z of every gold pair."""
    weight, weight_less = stratum_weights(pool)
    random = pool.in_gold & ~pool.certain if len(pool.certain) else pool.in_gold.copy()
    z = np.zeros(len(pool.judge))
    for i, value in influence.items():
        z[i] = value
    bias = variance = 0.0
    query = np.array(pool.query)
    for h, (size, graded) in pool.stratum_sizes().items():
        if graded < 2:
            continue  # (n_h - 1) = 0: no term
        members = np.flatnonzero(random & (pool.judge == h))
        total = float(z[members].sum())
        by_query: dict[str, float] = {}
        for i in members:
            by_query[query[i]] = by_query.get(query[i], 0.0) + z[i]
        shift = np.array([jack.get(int(i), 0.0) + (weight_less[i] - weight[i]) * (total - by_query[query[i]])
                          for i in members]) / n_queries  # theta_(i) - theta
        keep = 1.0 - graded / size
        bias += keep * (graded - 1) * float(shift.mean())
        variance += keep * (graded - 1) / graded * float(np.sum((shift - shift.mean()) ** 2))
    return bias, variance
