"""Where the pair design's intervals miss, and what small-sample remedies buy, offline on captured subsets
(benchmarks/corrected_capture.py writes them; benchmarks/README.md, "Small-sample remedies under the pair design").

    python benchmarks/corrected_smallsample.py /tmp/smallcov/*-300.pkl

Per judge x gain: pooled coverage and mean width of the corrected and the human-only intervals, the worst
run/metric cells, and per cell the mean error and the estimate's spread in units of the mean se; the worst cells
against what binomial noise alone gives (independent cells at the nominal rate); then each variant's before -> after
on the same subsets. A variant recomputes the library's power-tuned interval (labeller.evaluation.corrected_power,
reproduced exactly by the baseline, checked) from the captured terms with another variance or quantile.
"""
from __future__ import annotations

import math
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from labeller.evaluation import corrected_power as cp  # noqa: E402
from labeller.evaluation.corrected_estimate import _satterthwaite, student  # noqa: E402

CONF = 0.95


def stratum_df(z: np.ndarray, mode: str) -> float:
    n = len(z)
    if mode != "kurt" or n < 4:
        return max(n - 1, 1)
    d = z - z.mean()
    m2 = float(np.mean(d**2))
    if m2 <= 0:
        return max(n - 1, 1)
    g2 = max(float(np.mean(d**4)) / m2**2 - 3.0, 0.0)
    return 2.0 / (2.0 / (n - 1) + g2 / n)


def parts(t: dict, keep: np.ndarray | None, mode: str) -> list[tuple[float, float]]:
    """Each stratum's variance part and df (corrected_power.half_parts, or pair_terms' for keep None)."""
    keep = np.ones(len(t["z"]), bool) if keep is None else keep
    spreads = {}
    for j, (size, graded) in t["sizes"].items():
        if graded:
            rows = (t["j"] == j) & keep
            z = t["z"][rows]
            spread = float(np.var(z, ddof=1)) if len(z) > 1 else None
            if mode == "pseudo" and spread is not None:  # one more pair at the stratum's most extreme deviation
                spread += float(np.max((z - z.mean()) ** 2)) / (len(z) - 1)
            spreads[j] = (spread, stratum_df(z, mode) if len(z) > 1 else 1)
    known = [s for s, _ in spreads.values() if s is not None] or [0.0]
    return [(size**2 * (1.0 - graded / size) * (spreads[j][0] if spreads[j][0] is not None else max(known)) / graded,
             spreads[j][1]) for j, (size, graded) in t["sizes"].items() if graded]


def covariance(a: dict, b: dict, keep: np.ndarray | None) -> float:
    keep = np.ones(len(a["z"]), bool) if keep is None else keep
    out = 0.0
    for j, (size, graded) in a["sizes"].items():
        rows = (a["j"] == j) & keep
        if rows.sum() > 1:
            x, y = a["z"][rows], b["z"][rows]
            out += size**2 * (1 - graded / size) / graded * float(np.sum((x - x.mean()) * (y - y.mean())) / (rows.sum() - 1))
    return out


def total(p):
    return max(sum(v for v, _ in p), 0.0)


def tuned(rec: dict, mode: str = "n-1") -> tuple[float, float, float]:
    """(low, high, estimate) of the power-tuned interval, cut to [0, 1], the strata's degrees of freedom by `mode`
    ("n-1" as the library, "kurt" from their kurtosis, "pseudo": n-1 with one more pair at each stratum's most
    extreme deviation) in the interval and in lambda's choice alike."""
    comp = components(rec, mode)
    if comp is None:
        return plain(rec["judge"], parts(rec["judge"], None, mode))
    return interval(comp, RULES["baseline (library)"])[:3]


def plain(t: dict, p) -> tuple[float, float, float]:
    half = student(CONF, _satterthwaite(p)) * math.sqrt(total(p))
    return max(t["value"] - half, 0.0), min(t["value"] + half, 1.0), t["value"]


def human(rec: dict, mode: str = "n-1") -> tuple[float, float, float]:
    t = rec["human"]["judge"]
    return plain(t, parts(t, None, mode))


def load(paths):
    out = []
    for path in paths:
        d = pickle.load(open(path, "rb"))
        for gain, subsets in d["cells"].items():
            for s, recs in enumerate(subsets):
                for r in recs:
                    out.append((d["judge"], d["pairs"], gain, s, r))
    return out


def verify(rows) -> None:
    """The human-only interval recomputed from its terms is the library's (the tuned one: `report` asserts it)."""
    worst = 0.0
    for *_, r in rows:
        h = human(r)
        worst = max(worst, abs(h[0] - r["human"]["low"]), abs(h[1] - r["human"]["high"]))
    assert worst < 1e-12, worst


def components(r: dict, mode: str = "n-1"):
    """What every lambda rule needs, computed once: the halves' lambdas and the whole gold's parts."""
    a, b = r["judge"], r.get("blind")
    if b is None:
        return None
    lams = []
    for h in (0, 1):
        keep = a["half"] == h
        pj, pb = parts(a, keep, mode), parts(b, keep, mode)
        lams.append(cp.choose(total(pj), total(pb), covariance(a, b, keep), pj, pb, CONF))
    pa, pb = parts(a, None, mode), parts(b, None, mode)
    va, vb = total(pa), total(pb)
    return lams, pa, pb, va, vb, cp._cut(covariance(a, b, None), va, vb), a["value"], b["value"]


RULES = {  # lambda from the halves' (l0, l1), the variances, the covariance and the two estimates
    "baseline (library)": lambda l, va, vb, c, ta, tb: sum(l) / 2,
    "lambda + its se (towards 1)": lambda l, va, vb, c, ta, tb: min(sum(l) / 2 + abs(l[0] - l[1]) / 2, 1.0),
    "lambda 1 unless they agree (1 se)": lambda l, va, vb, c, ta, tb:
        1.0 if abs(ta - tb) > math.sqrt(max(va + vb - 2 * c, 0.0)) else sum(l) / 2,
    "lambda 1 (judge alone)": lambda l, va, vb, c, ta, tb: 1.0,
}


def interval(comp, rule, extra: bool = False):
    lams, pa, pb, va, vb, cross, ta, tb = comp
    lam = rule(lams, va, vb, cross, ta, tb)
    variance, df = cp.blend(lam, va, vb, cross, pa, pb)
    if extra:  # lambda's own error: the halves' disagreement / 2 as its se, times E(theta_J - theta_B)^2
        variance += (lams[0] - lams[1]) ** 2 / 4 * max(va + vb - 2 * cross, 0.0)
    est = lam * ta + (1 - lam) * tb
    half = student(CONF, df) * math.sqrt(variance)
    return max(est - half, 0.0), min(est + half, 1.0), est, lam


def noise_min(n_cells: int, subsets: int, p: float, draws: int = 20000) -> tuple[float, float, float]:
    rng = np.random.default_rng(0)
    mins = rng.binomial(subsets, p, size=(draws, n_cells)).min(axis=1) / subsets
    return tuple(np.quantile(mins, [0.05, 0.5, 0.95]))


def summary(hit, width, human_width, groups) -> str:
    out = []
    for name, idx in groups.items():
        cells = sorted(hit[i].mean() for i in idx.values())
        rows = np.concatenate(list(idx.values()))
        ok = human_width[rows] > 0
        out.append(f"{name}: {hit[rows].mean():.1%} / {width[rows].mean():.4f}, worst {cells[0]:.1%}, "
                   f"x{np.mean(width[rows][ok] / human_width[rows][ok]):.3f} human-only")
    return "\n    ".join(out)


def report(rows) -> None:
    truth = np.array([r["truth"] for *_, r in rows])
    groups: dict = {}
    for i, (judge, pairs, gain, _, r) in enumerate(rows):
        groups.setdefault(f"{judge} {gain} {pairs}", {}).setdefault((r["metric"], r["run"]), []).append(i)
    groups = {g: {k: np.array(v) for k, v in c.items()} for g, c in groups.items()}
    low, high = np.array([r["low"] for *_, r in rows]), np.array([r["high"] for *_, r in rows])
    est, se = np.array([r["estimate"] for *_, r in rows]), np.array([r["se"] for *_, r in rows])
    lam = np.array([1.0 if r["lambda"] is None else r["lambda"] for *_, r in rows])
    hit = (low - 1e-12 <= truth) & (truth <= high + 1e-12)
    hlow, hhigh = np.array([r["human"]["low"] for *_, r in rows]), np.array([r["human"]["high"] for *_, r in rows])
    hhit, hwidth = (hlow - 1e-12 <= truth) & (truth <= hhigh + 1e-12), hhigh - hlow
    judge_alone = np.array([plain(r["judge"], parts(r["judge"], None, "n-1"))[:2] for *_, r in rows])
    jhit = (judge_alone[:, 0] - 1e-12 <= truth) & (truth <= judge_alone[:, 1] + 1e-12)
    for g, cells in groups.items():
        n = len(next(iter(cells.values())))
        print(f"\n## {g} pairs ({n} subsets, {len(cells)} cells): coverage, mean error/se, spread/se, misses with "
              "the estimate above/below the truth")
        covs = []
        for k, i in sorted(cells.items(), key=lambda kv: hit[kv[1]].mean()):
            err, s = est[i] - truth[i], se[i].mean()
            covs.append(hit[i].mean())
            print(f"    {k[0]:13s} {k[1]:12s} {hit[i].mean():5.1%}  {err.mean() / s:+.2f}  {err.std(ddof=1) / s:.2f}  "
                  f"{int(np.sum(~hit[i] & (err > 0)))}/{int(np.sum(~hit[i] & (err <= 0)))}")
        covs = np.array(covs)
        m = covs.mean()
        lo, med, hi = noise_min(len(cells), n, 0.95)
        lo2, med2, hi2 = noise_min(len(cells), n, m)
        print(f"  cells: mean {m:.1%}, sd {covs.std(ddof=1):.3f} (binomial alone {math.sqrt(m * (1 - m) / n):.3f}), "
              f"worst {covs.min():.1%}; binomial noise alone, worst of {len(cells)} independent cells (5-95%, median): "
              f"at 95% {lo:.1%}-{hi:.1%} ({med:.1%}), at the mean {m:.1%} {lo2:.1%}-{hi2:.1%} ({med2:.1%})")
    print("\n## where the misses are (all groups): coverage of tuned / human only / judge alone")
    for name, mask in (("lambda < 0.25", lam < 0.25), ("0.25-0.5", (lam >= 0.25) & (lam < 0.5)),
                       ("0.5-0.75", (lam >= 0.5) & (lam < 0.75)), ("lambda >= 0.75", lam >= 0.75)):
        print(f"    {name:15s} {mask.mean():5.1%} of figures: {hit[mask].mean():.1%} / {hhit[mask].mean():.1%} / "
              f"{jhit[mask].mean():.1%}")
    quart = np.zeros(len(rows), int)
    for cells in groups.values():
        for i in cells.values():
            rel = se[i] / np.median(se[i])
            quart[i] = np.digitize(rel, np.quantile(rel, [0.25, 0.5, 0.75]))
    print("    by the se's quartile within its cell (smallest first): "
          + ", ".join(f"{hit[quart == b].mean():.1%}" for b in range(4)))
    print("\n## lambda rules and variances: pooled coverage / mean width, worst cell, width over the human-only "
          "(library's); then the baseline widened uniformly to the same mean width")
    comps = [components(r) for *_, r in rows]
    base = None
    variants = [(name, rule, False) for name, rule in RULES.items()] + [
        ("lambda's own error added", RULES["baseline (library)"], True)]
    for name, rule, extra in variants:
        out = np.array([interval(c, rule, extra) if c else (r["low"], r["high"], r["estimate"], 1.0)
                        for c, (*_, r) in zip(comps, rows)])
        if base is None:
            base = out
            assert np.allclose(out[:, :2], np.column_stack([low, high]), atol=1e-12)
        vhit, width = (out[:, 0] - 1e-12 <= truth) & (truth <= out[:, 1] + 1e-12), out[:, 1] - out[:, 0]
        factor = width.mean() / (base[:, 1] - base[:, 0]).mean()
        half = np.maximum(base[:, 2] - base[:, 0], base[:, 1] - base[:, 2])
        ulo, uhi = np.maximum(base[:, 2] - factor * half, 0.0), np.minimum(base[:, 2] + factor * half, 1.0)
        uhit = (ulo - 1e-12 <= truth) & (truth <= uhi + 1e-12)
        print(f"- {name}:\n    {summary(vhit, width, hwidth, groups)}\n  uniform x{factor:.3f}:\n    "
              f"{summary(uhit, uhi - ulo, hwidth, groups)}")
    pseudo = np.array([tuned(r, "pseudo") for *_, r in rows])
    vhit = (pseudo[:, 0] - 1e-12 <= truth) & (truth <= pseudo[:, 1] + 1e-12)
    print(f"- one pseudo-pair per stratum at its most extreme deviation, tuned:\n    "
          f"{summary(vhit, pseudo[:, 1] - pseudo[:, 0], hwidth, groups)}\n  the baseline widened as much, per group:")
    for name, cells in groups.items():
        i = np.concatenate(list(cells.values()))
        factor = (pseudo[i, 1] - pseudo[i, 0]).mean() / (base[i, 1] - base[i, 0]).mean()
        half = np.maximum(base[i, 2] - base[i, 0], base[i, 1] - base[i, 2])
        ulo, uhi = np.maximum(base[i, 2] - factor * half, 0.0), np.minimum(base[i, 2] + factor * half, 1.0)
        uhit = np.zeros(len(rows), bool)
        uhit[i] = (ulo - 1e-12 <= truth[i]) & (truth[i] <= uhi + 1e-12)
        print(f"    {name} x{factor:.3f}: {uhit[i].mean():.1%}, worst {min(uhit[c].mean() for c in cells.values()):.1%}")
    kurt = [tuned(r, "kurt") for *_, r in rows]
    khuman = [human(r, "kurt") for *_, r in rows]
    k = np.array(kurt)
    kh = np.array(khuman)
    vhit = (k[:, 0] - 1e-12 <= truth) & (truth <= k[:, 1] + 1e-12)
    print(f"- strata's df from their kurtosis (df_j = 2 / (2/(n_j-1) + g2_j/n_j)), tuned:\n    "
          f"{summary(vhit, k[:, 1] - k[:, 0], hwidth, groups)}\n  its human-only: "
          f"{summary((kh[:, 0] - 1e-12 <= truth) & (truth <= kh[:, 1] + 1e-12), kh[:, 1] - kh[:, 0], hwidth, groups)}")


def main() -> int:
    rows = load(sys.argv[1:])
    verify(rows)
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
