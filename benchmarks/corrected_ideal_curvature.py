"""Diagnostic (issue 26, branch idcgcurve): where the pair design's nDCG@10 bias comes from, and whether the expected
ideal DCG's own second-order (curvature) term explains it (benchmarks/README.md, "Held out: TREC DL19").

    python benchmarks/corrected_ideal_curvature.py [--pairs 300] [--subsets 50] [--gain exponential]
        [--judge sim-Olz-gpt4o]
    python benchmarks/corrected_ideal_curvature.py --planted [--share 30] [--subsets 40]

The same draws as corrected_heldout.py (seed 0, DL19, its six runs), the judge's arm only (`corrected._Model`, no
power tuning). Per query, with I_0 = E_model[IDCG] (corrected_ideal.expected_ideal), lin = sum_i w_i bottom_i (the
first-order correction) and I the true IDCG@10:
- err1 = I_0 + lin - I, the ideal DCG's error after the first-order correction (summed over the queries);
- the oracle term 1/2 sum_h bend_h sum_{j != k} r_jh r_kh, r_jh = 1[true grade_j >= h] - P_model(grade_j >= h) over
  the ungraded pairs, with bend_h the forward second difference (E[CD(N_h + 2)] - 2 E[CD(N_h + 1)] + E[CD(N_h)],
  times the gain step) and, to show the clipping at a count of 0, the central one (E[CD(N_h + 1)] - 2 E[CD(N_h)] +
  E[CD(N_h - 1)]);
- its estimates from the gold: the leave-one-out U-statistic (sum w r)^2 - sum (w^2 - w) r^2 less the model's
  sum q(1 - q) (as the issue's brief proposed), the same over distinct pairs only ((sum w r)^2 - sum w^2 r^2), and
  the shrunk one the branch implemented and measured (gold residuals against the all-query prediction times K / (c + K),
  K = SHRINK and c the gold pairs of the pair's query and judge grade, plus the prediction's own variance, sum over
  those groups of c / (c + K)^2 q (1 - q) U (U - 1); corrected_ideal.curvature at commit 599e0e6, not kept).
With --planted instead: the same ideal DCG figures on a simulated world (no runs): 43 queries of 200 pairs whose
share of relevant pairs (grade 3 or 4 of 1-4) is 3, 8, 15 or 30% (overdispersed against the all-query calibration),
a judge right with chance 0.6 and else uniform, the gold 1/--share of each judge grade (at least 2), --subsets draws.
Per run, the judge arm's error (estimate - truth, over its mean se) split into: errD (the DCG after its first-order
correction, over I_0), errI (-D_0 / I_0^2 err1), so2 (the library's second-order term) less rem_true (the true
ratio's remainder beyond first order at the model point; so2_or: its second-order part with the true dD and dI).
The library is unchanged by it (benchmarks/README.md, "Held out: TREC DL19", the idcgcurve bullet).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corrected_coverage as cc  # noqa: E402
from corrected_pair_jackknife import prepared  # noqa: E402

from labeller.evaluation.corrected import SHRINK, _Model, _positions, contribution  # noqa: E402
from labeller.evaluation.corrected_estimate import pair_terms  # noqa: E402
from labeller.evaluation.corrected_ideal import _count_distribution, second_order  # noqa: E402
from labeller.evaluation.corrected_pool import gold_pool  # noqa: E402


def at_least(x: np.ndarray) -> np.ndarray:
    """P(grade >= h) (or a residual's sum there), h = GRADE_MIN+1.., per row."""
    return np.cumsum(x[:, ::-1], axis=1)[:, ::-1][:, 1:]


def bends(dist: np.ndarray, fixed: np.ndarray, gains: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Forward and central second differences of E[CD(min(G_h + offset + R_h, cut))] per level, times the gain step."""
    rows, width = dist.shape
    cut = min(k, rows + 1)
    cum = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(cut + 2) + 2.0))))
    steps = np.diff(gains, prepend=0.0)[1:]
    above = np.clip(at_least(dist), 0.0, 1.0)
    gold = np.rint(above[fixed].sum(axis=0)).astype(np.int64) if fixed.any() else np.zeros(width - 1, np.int64)
    spread = _count_distribution(above[~fixed].T, cut)
    phi = {o: (cum[np.maximum(np.minimum(gold[:, None] + o + np.arange(cut + 1), cut), 0)] * spread).sum(axis=-1)
           for o in (-1, 0, 1, 2)}
    return steps * (phi[2] - 2 * phi[1] + phi[0]), steps * (phi[1] - 2 * phi[0] + phi[-1])


def idcg(grades: np.ndarray, gains: np.ndarray, k: int) -> float:
    best = np.sort(gains[grades])[::-1][:k]
    return float(best @ (1.0 / np.log2(np.arange(len(best)) + 2.0)))


def query_terms(pool, model, q: str, truth_index: np.ndarray) -> dict:
    """One query's ideal DCG figures (module docstring)."""
    rows, fixed = pool.by_query[q], pool.in_gold[pool.by_query[q]]
    dist, gains = model.model[rows], model.gains
    ideal, per_row, _ = model.ideal(q, rows, 10)
    local = np.flatnonzero(fixed)
    gl, w = rows[local], model.weight[rows[local]]
    lin = float(w @ np.einsum("ij,ij->i", per_row[local], model.residual[gl])) if len(gl) else 0.0
    forward, central = bends(dist, fixed, gains, 10)
    above = np.clip(at_least(dist), 0.0, 1.0)
    levels = np.arange(1, dist.shape[1])
    r_true = (truth_index[rows][~fixed][:, None] >= levels).astype(float) - above[~fixed]
    oracle = r_true.sum(axis=0) ** 2 - (r_true**2).sum(axis=0)  # sum over ungraded j != k of r_j r_k
    r_loo = at_least(model.residual[gl])
    sigma2 = (above[~fixed] * (1 - above[~fixed])).sum(axis=0)
    brief = (w @ r_loo) ** 2 - ((w**2 - w)[:, None] * r_loo**2).sum(axis=0) - sigma2
    distinct = (w @ r_loo) ** 2 - ((w**2)[:, None] * r_loo**2).sum(axis=0)
    # shrunk: against the all-query prediction, times K / (c + K); plus the prediction's own variance
    groups = pool.judge[rows]
    prior = model.calibration[groups - 1]
    c = np.array([np.sum(fixed & (groups == g)) for g in groups])
    onehot = np.eye(dist.shape[1])[np.clip(pool.human[rows], 1, None) - 1]
    r_shr = at_least((onehot - prior) * (SHRINK / (c + SHRINK))[:, None])[local]
    noise = np.zeros(len(levels))
    for g in np.unique(groups):
        ungraded, graded = ~fixed & (groups == g), int(np.sum(fixed & (groups == g)))
        if graded and ungraded.sum() > 1:
            q_g = above[ungraded][0]
            noise += graded / (graded + SHRINK) ** 2 * q_g * (1 - q_g) * ungraded.sum() * (ungraded.sum() - 1)
    shr = (w @ r_shr) ** 2 - ((w**2)[:, None] * r_shr**2).sum(axis=0) + noise
    return dict(I0=ideal, It=idcg(truth_index[rows], gains, 10), err1=ideal + lin - idcg(truth_index[rows], gains, 10),
                oracle=0.5 * forward @ oracle, oracle_central=0.5 * central @ oracle, brief=0.5 * forward @ brief,
                distinct=0.5 * forward @ distinct, shrunk=0.5 * forward @ shr, per_row=per_row, local=local,
                levels=np.array([oracle, brief, distinct, shr]))


def run_parts(ranking, pool, model, queries, per_q, truth_index) -> dict:
    """The judge arm's error split (module docstring), each a mean over the run's queries."""
    out = {n: 0.0 for n in ("errD", "errI", "so2", "rem_true", "so2_or", "oracle", "shrunk")}
    gains = model.gains
    for q in queries:
        t = per_q.get(q)
        if t is None or t["I0"] <= 1e-12:
            continue
        rows = pool.by_query[q]
        pos, _ = _positions(ranking, pool, q, 10)
        disc = 1.0 / np.log2(np.arange(len(pos)) + 2.0)
        dcg = float(np.where(pos >= 0, model.model[np.maximum(pos, 0)] @ gains, 0.0) @ disc) if len(pos) else 0.0
        d_true = float(np.where(pos >= 0, gains[truth_index[np.maximum(pos, 0)]], 0.0) @ disc) if len(pos) else 0.0
        I0, It = t["I0"], t["It"]
        gl = rows[t["local"]]
        where = {int(i): n for n, i in enumerate(pos) if i >= 0}
        top = np.array([disc[where[int(i)]] * float(model.residual[i] @ gains) if int(i) in where else 0.0 for i in gl])
        bottom = np.einsum("ij,ij->i", t["per_row"][t["local"]], model.residual[gl]) if len(gl) else np.zeros(0)
        w = model.weight[gl]
        scale = -dcg / I0**2
        out["errD"] += (dcg + float(w @ top) - d_true) / I0
        out["errI"] += scale * t["err1"]
        out["so2"] += second_order(dcg, I0, top, bottom, w)[0]
        out["rem_true"] += (d_true / It if It > 0 else 0.0) - dcg / I0 - (d_true - dcg) / I0 + dcg * (It - I0) / I0**2
        out["so2_or"] += dcg * (It - I0) ** 2 / I0**3 - (d_true - dcg) * (It - I0) / I0**2
        out["oracle"] += scale * t["oracle"]
        out["shrunk"] += scale * t["shrunk"]
    return {n: v / len(queries) for n, v in out.items()}


def planted(share: int, draws: int, gain: str, queries: int = 43, size: int = 200,
            shares=(0.03, 0.08, 0.15, 0.3)) -> None:
    """The ideal DCG figures on the simulated world of the module docstring."""
    from labeller.evaluation.qrels import Judgments
    from labeller.evaluation.results import Settings

    rng = random.Random(0)
    human, judge = {}, {}
    for q in range(queries):
        docs = [f"d{q}-{i}" for i in range(size)]
        human[f"q{q}"] = {d: rng.choice([3, 4]) if rng.random() < shares[q % len(shares)] else rng.choice([1, 2])
                          for d in docs}
        judge[f"q{q}"] = {d: g if rng.random() < 0.6 else rng.randint(1, 4) for d, g in human[f"q{q}"].items()}
    labels, settings = Judgments(judge, "judge", "qrels"), Settings(relevant_from=3, gain=gain)
    truth_index = gold_pool(labels, Judgments(human, "human", "gold"), "pairs").human - 1
    strata: dict[int, list] = {}
    for q, docs in judge.items():
        for d, g in docs.items():
            strata.setdefault(g, []).append((q, d))
    names, sums = ("err1", "oracle", "shrunk"), []
    for _ in range(draws):
        gold: dict[str, dict[str, int]] = {}
        for members in strata.values():
            for q, d in rng.sample(members, max(2, len(members) // share)):
                gold.setdefault(q, {})[d] = human[q][d]
        pool = gold_pool(labels, Judgments(gold, "subset", "gold"), "pairs")
        model = _Model(pool, settings)
        per_q = [query_terms(pool, model, q, truth_index) for q in pool.by_query]
        sums.append([sum(t[n] for t in per_q) for n in names])
    sums = np.array(sums)
    print(f"# planted world, 1/{share} of each judge grade graded, {draws} draws, {gain} gain: ideal DCG summed over"
          " the queries, mean (se of the mean); err1 + term is the error with the term")
    for n, col in zip(names, sums.T):
        print(f"  {n:8s} {col.mean():+9.2f} ({col.std(ddof=1) / np.sqrt(len(col)):.2f})")
    for n in names[1:]:
        col = sums[:, 0] + sums[:, names.index(n)]
        print(f"  err1 + {n:8s} {col.mean():+9.2f} ({col.std(ddof=1) / np.sqrt(len(col)):.2f})")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=300)
    p.add_argument("--subsets", type=int, default=50)
    p.add_argument("--gain", default="exponential")
    p.add_argument("--judge", default="sim-Olz-gpt4o")
    p.add_argument("--data", type=Path, default=Path("/work/shared/data/trec-dl19"))
    p.add_argument("--llmjudge", type=Path, default=Path("/work/shared/data/llmjudge"))
    p.add_argument("--planted", action="store_true")
    p.add_argument("--share", type=int, default=30)
    a = p.parse_args()
    if a.planted:
        planted(a.share, a.subsets, a.gain)
        return 0
    args = SimpleNamespace(world="dl19", judge=a.judge, gain=a.gain, metrics="ndcg@10", runs="", data=a.data,
                           llmjudge=a.llmjudge)
    settings, specs, human, labels, rankings, scores, truth = prepared(args)
    spec, truth_index = specs[0], gold_pool(labels, human, "pairs").human - 1
    rng, sums, levels, per_run = random.Random(0), [], [], {r.name: [] for r in rankings}
    names = ("err1", "oracle", "oracle_central", "brief", "distinct", "shrunk")
    for s in range(a.subsets):
        pool = gold_pool(labels, cc.draw(human, rng, a.pairs, None), "pairs")
        model = _Model(pool, settings)
        per_q = {q: query_terms(pool, model, q, truth_index) for q in pool.by_query}
        sums.append([sum(t[n] for t in per_q.values()) for n in names])
        levels.append(np.mean([t["levels"] for t in per_q.values()], axis=0))
        for r in rankings:
            queries = sorted(set(scores[r.name].per_query[spec.name]) - set(scores[r.name].no_answer.query_ids))
            terms = pair_terms(contribution(r, queries, spec, model, settings), pool)
            per_run[r.name].append((terms.value - truth[r.name, spec.name], np.sqrt(terms.variance),
                                    run_parts(r, pool, model, queries, per_q, truth_index)))
        print(f"subset {s + 1}/{a.subsets}", file=sys.stderr)
    sums, levels = np.array(sums), np.array(levels)
    print(f"# {a.judge}, nDCG@10 {a.gain} gain, {a.pairs} random pairs, {a.subsets} subsets (seed 0), judge arm")
    print("ideal DCG summed over the queries, mean over subsets (se of the mean); the terms' sign: err1 ~ -term")
    for n, col in zip(names, sums.T):
        print(f"  {n:15s} {col.mean():+10.2f} ({col.std(ddof=1) / np.sqrt(len(col)):.2f})")
    print("sum over ungraded j != k of r_jh r_kh, mean over queries, per level (oracle; LOO U-stat less sum q(1-q);"
          " LOO distinct; shrunk + noise):")
    for h in range(levels.shape[2] - 1):
        print(f"  level {h + 1}: " + " / ".join(f"{levels[:, i, h].mean():.1f}" for i in range(4)))
    print("per run: judge arm err/se (spread/se) = errD + errI + so2 - rem_true (each over the mean se); so2_or; the"
          " NDCG shift the oracle and the shrunk term would remove (-D/I^2 term)")
    for name, v in per_run.items():
        err, se = np.array([x[0] for x in v]), np.mean([x[1] for x in v])
        parts = {n: np.mean([x[2][n] for x in v]) / se for n in v[0][2]}
        print(f"  {name:14s} {err.mean() / se:+.2f} ({err.std(ddof=1) / se:.2f}) = "
              + " ".join(f"{n} {parts[n]:+.2f}" for n in ("errD", "errI", "so2", "rem_true"))
              + f" | so2_or {parts['so2_or']:+.2f} | oracle {parts['oracle']:+.2f} shrunk {parts['shrunk']:+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
