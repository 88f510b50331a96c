"""Diagnostic (issue 26): does power tuning's lambda, chosen from the gold, add sampling error its interval misses?

    python benchmarks/corrected_lambda_variance.py [--world dl19|llmjudge] [--judge NAME] [--pairs 300]
        [--subsets 30] [--metrics ndcg@10] [--gain exponential] [--runs strong] [--splits 10]

Per subset (the same draws as corrected_heldout.py / corrected_coverage.py, seed 0) the library's figure, with
corrected_power.tuned wrapped to record its inputs: the judge's and the judge-free estimates J and B, their
variances and covariance, the two halves' lambdas, and the halves' lambdas of SPLITS more random splits. Printed per
run and metric: lambda's spread over subsets against its estimates, the mean error and spread over subsets / the
mean se, and coverage / mean width of
- lib: the library's interval;
- delta2: se^2 + (J - B)^2 (lambda_1 - lambda_2)^2 / 4 (the delta-method term, Var(lambda) from the two halves);
- deltaK: se^2 + (J - B)^2 Var(lambda), Var(lambda) the variance of the half lambdas over SPLITS random splits
  (half-sampling: the spread of a half's statistic over random halves estimates the whole sample's variance);
- deltaC: deltaK's term plus 2 (J - B) Cov(lambda, fixed-lambda blend), both from the same half-samples (each
  half's J and B linearised: sum_j N_j (its mean of z in stratum j - the gold's)), times 1 - n/N, added if > 0
  (deltaC+-: also if negative, se at least half the library's);
- crossfit: each of the library's halves estimated (linearised) at the other half's lambda, averaged;
- fixed: lambda fixed at its mean over the subsets (an oracle: what a lambda that does not move would give);
- pooled: lambda the mean over the runs of the same subset and metric (with --runs of several runs);
- judge / free: lambda 1 and 0;
and the error's variance over subsets split into the fixed-lambda blend's, (lambda - its mean)(J - B)'s and twice
their covariance (what lambda's movement adds).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corrected_coverage as cc  # noqa: E402
from corrected_pair_jackknife import prepared  # noqa: E402  (the same two worlds, runs and truth)

import labeller.evaluation.corrected_power as cp  # noqa: E402
from labeller.evaluation.corrected_estimate import student  # noqa: E402

RECORDS: list[dict] = []
SPLITS = 10


def split(pool, seed: int) -> np.ndarray:
    """corrected_power.halves with another seed."""
    saved, cp.SPLIT_SEED = cp.SPLIT_SEED, seed
    try:
        return cp.halves(pool)
    finally:
        cp.SPLIT_SEED = saved


def shifted(z: np.ndarray, pool, keep: np.ndarray) -> float:
    """The linearised estimate on the pairs `keep` less the whole gold's: sum_j N_j (mean of z on keep - mean)."""
    out = 0.0
    for j, (size, graded) in pool.stratum_sizes().items():
        rows = pool.in_gold & pool.stratum(j)
        if graded and (rows & keep).any():
            out += size * (z[rows & keep].mean() - z[rows].mean())
    return float(out)


def half_lambdas(judge, pool, blind, free, confidence, half) -> list[tuple[float, float, float]]:
    """Per half: its lambda, and its linearised J and B less the whole gold's."""
    out = []
    for h in (0, 1):
        keep = half == h
        pj, pb = cp.half_parts(judge.z, pool, keep), cp.half_parts(blind.z, free, keep)
        out.append((cp.choose(sum(v for v, _ in pj), sum(v for v, _ in pb), cp.covariance(judge, blind, pool, keep),
                              pj, pb, confidence),
                    shifted(judge.z, pool, keep), shifted(blind.z, free, keep)))
    return out


ORIGINAL = cp.tuned


def recording(judge, pool, blind, free, confidence):
    out = ORIGINAL(judge, pool, blind, free, confidence)
    own = half_lambdas(judge, pool, blind, free, confidence, cp.halves(pool))
    lams = [x[0] for x in own]
    more = [x for s in range(1, SPLITS + 1) for x in half_lambdas(judge, pool, blind, free, confidence,
                                                                   split(pool, 1000 + s))]
    cross = cp._cut(cp.covariance(judge, blind, pool), judge.variance, blind.variance)
    RECORDS.append(dict(estimate=out.estimate, J=judge.value, B=blind.value, vJ=judge.variance, vB=blind.variance,
                        cross=cross, pj=judge.parts, pb=blind.parts, lams=lams, more=[x[0] for x in more],
                        halfs=np.array(more), own=own, fpc=1.0 - pool.in_gold.sum() / len(pool.judge), confidence=confidence))
    return out


cp.tuned = recording


def at(rec: dict, lam: float) -> tuple[float, float, float]:
    """The blend's estimate, se and quantile at lambda."""
    variance, df = cp.blend(lam, rec["vJ"], rec["vB"], rec["cross"], rec["pj"], rec["pb"])
    return lam * rec["J"] + (1 - lam) * rec["B"], math.sqrt(variance), student(rec["confidence"], df)


def crossfit(rec: dict) -> tuple[float, float, float]:
    """Each half's (linearised) estimate at the other half's lambda, averaged; its variance the mean of the whole
    gold's V at the two lambdas (each half's term has twice the whole gold's variance, and the halves are
    independent), its quantile at their mean."""
    (la, ja, ba), (lb, jb, bb) = rec["own"]
    value = 0.5 * (lb * (rec["J"] + ja) + (1 - lb) * (rec["B"] + ba)) + 0.5 * (la * (rec["J"] + jb) + (1 - la) * (rec["B"] + bb))
    variance = 0.5 * (at(rec, la)[1] ** 2 + at(rec, lb)[1] ** 2)
    return value, math.sqrt(variance), at(rec, (la + lb) / 2)[2]


def main() -> int:
    global SPLITS
    p = argparse.ArgumentParser()
    p.add_argument("--world", default="dl19")
    p.add_argument("--judge", default="sim-Olz-gpt4o")
    p.add_argument("--pairs", type=int, default=300)
    p.add_argument("--subsets", type=int, default=30)
    p.add_argument("--metrics", default="ndcg@10")
    p.add_argument("--gain", default="exponential")
    p.add_argument("--runs", default="strong")
    p.add_argument("--splits", type=int, default=10)
    p.add_argument("--data", type=Path, default=Path("/work/shared/data/trec-dl19"))
    p.add_argument("--llmjudge", type=Path, default=Path("/work/shared/data/llmjudge"))
    args = p.parse_args()
    SPLITS = args.splits
    settings, specs, human, labels, rankings, _, truth = prepared(args)
    rng, rows, started = random.Random(0), {}, time.perf_counter()
    for s in range(args.subsets):
        gold = cc.draw(human, rng, args.pairs, None)
        RECORDS.clear()
        result, _ = cc.evaluate_all(rankings, labels, gold, args.metrics, settings, "pairs")
        found = {}
        for r in rankings:
            for spec, m in zip(specs, result.runs[r.name]):
                c = m.corrected
                rec = next((x for x in RECORDS if x["estimate"] == c.estimate), None)
                if c.estimate is None or rec is None or c.power_lambda is None:
                    continue
                found[r.name, spec.name] = (c, rec)
        for spec in specs:  # lambda pooled over the runs of this subset and metric
            mine = [rec for (_, metric), (_, rec) in found.items() if metric == spec.name]
            pooled = float(np.mean([sum(rec["lams"]) / 2 for rec in mine])) if mine else None
            for (run, metric), (c, rec) in found.items():
                if metric == spec.name:
                    rec["pooled"] = pooled
                    rows.setdefault((metric, run), []).append((c, rec, truth[run, metric]))
        print(f"subset {s + 1}/{args.subsets} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    print(f"# {args.world} {args.judge} {args.pairs} pairs, {args.subsets} subsets, {args.gain} gain, "
          f"{SPLITS} splits")
    for (metric, run), v in rows.items():
        report(metric, run, v)
    return 0


def report(metric: str, run: str, v: list) -> None:
    truth = np.array([t for _, _, t in v])
    lam_bar = float(np.mean([c.power_lambda for c, _, _ in v]))

    def cover(name, ests, ses, quants, rems):
        ests, ses, quants, rems = map(np.array, (ests, ses, quants, rems))
        lo = np.clip(ests - quants * ses + np.minimum(rems, 0), 0, 1)
        hi = np.clip(ests + quants * ses + np.maximum(rems, 0), 0, 1)
        err = ests - truth
        return (f"  {name:7s} cov {np.mean((lo - 1e-12 <= truth) & (truth <= hi + 1e-12)):4.0%} width "
                f"{np.mean(hi - lo):.4f} err/se {err.mean() / ses.mean():+.2f} spread/se {err.std(ddof=1) / ses.mean():.2f}")

    rems = [c.remainder or 0.0 for c, _, _ in v]
    lib_q = [at(rec, c.power_lambda)[2] for c, rec, _ in v]
    lines = [cover("lib", [c.estimate for c, _, _ in v], [c.se_judge for c, _, _ in v], lib_q, rems)]
    for name, var_lam in (("delta2", lambda rec: (rec["lams"][0] - rec["lams"][1]) ** 2 / 4),
                          ("deltaK", lambda rec: float(np.var(rec["more"], ddof=1)))):
        ses = [math.sqrt(c.se_judge**2 + (rec["J"] - rec["B"]) ** 2 * var_lam(rec)) for c, rec, _ in v]
        lines.append(cover(name, [c.estimate for c, _, _ in v], ses, lib_q, rems))
    added, lin = [], []
    for c, rec, _ in v:  # half-sampling: the lambda term with its covariance with the fixed-lambda blend
        lam_h, j_h, b_h = rec["halfs"].T
        fixed = c.power_lambda * j_h + (1 - c.power_lambda) * b_h
        dl, df_ = lam_h - lam_h.mean(), fixed - fixed.mean()
        gap = rec["J"] - rec["B"]
        added.append(rec["fpc"] * (np.mean(dl**2) * gap**2 + 2 * gap * np.mean(dl * df_)))
        lin.append(math.sqrt(rec["fpc"] * np.mean(df_**2)) / c.se_judge)
    ses = [math.sqrt(max(c.se_judge**2 + a, c.se_judge**2)) for (c, _, _), a in zip(v, added)]
    lines.append(cover("deltaC", [c.estimate for c, _, _ in v], ses, lib_q, rems))
    ses = [math.sqrt(max(c.se_judge**2 + a, 0.25 * c.se_judge**2)) for (c, _, _), a in zip(v, added)]
    lines.append(cover("deltaC+-", [c.estimate for c, _, _ in v], ses, lib_q, rems))
    lines.append(f"  (half-sample se of the fixed-lambda blend / library se {np.mean(lin):.2f}; added / se^2 mean "
                 f"{np.mean([a / c.se_judge**2 for (c, _, _), a in zip(v, added)]):+.2f})")
    e_lib = np.array([c.estimate for c, _, _ in v]) - truth
    e_fix = np.array([at(rec, lam_bar)[0] for _, rec, _ in v]) - truth
    d = e_lib - e_fix
    se_bar = np.mean([c.se_judge for c, _, _ in v])
    lines.append(f"  Var(err)/se^2 {np.var(e_lib, ddof=1) / se_bar**2:.2f} = fixed {np.var(e_fix, ddof=1) / se_bar**2:.2f}"
                 f" + lambda part {np.var(d, ddof=1) / se_bar**2:.2f} + 2 cov {2 * np.cov(e_fix, d)[0, 1] / se_bar**2:+.2f}")
    est, se, q = zip(*(crossfit(rec) for _, rec, _ in v))
    lines.append(cover("crossfit", est, se, q, rems))
    for name, lam_of in (("fixed", lambda rec: lam_bar), ("pooled", lambda rec: rec["pooled"]),
                         ("judge", lambda rec: 1.0), ("free", lambda rec: 0.0)):
        est, se, q = zip(*(at(rec, lam_of(rec)) for _, rec, _ in v))
        lines.append(cover(name, est, se, q, rems))
    sd_lam = np.std([c.power_lambda for c, _, _ in v], ddof=1)
    est_var = np.mean([(rec["lams"][0] - rec["lams"][1]) ** 2 / 4 for _, rec, _ in v])
    k_var = np.mean([np.var(rec["more"], ddof=1) for _, rec, _ in v])
    jb = np.mean([abs(rec["J"] - rec["B"]) / c.se_judge for c, rec, _ in v])
    corr = np.corrcoef([c.power_lambda for c, _, _ in v], [rec["J"] - rec["B"] for _, rec, _ in v])[0, 1]
    print(f"{metric} {run}: lambda mean {lam_bar:.2f} sd over subsets {sd_lam:.3f}; sqrt mean Var(lambda) halves "
          f"{math.sqrt(est_var):.3f}, {SPLITS} splits {math.sqrt(k_var):.3f}; mean |J - B| / se {jb:.2f}; "
          f"corr(lambda, J - B) {corr:+.2f}")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
