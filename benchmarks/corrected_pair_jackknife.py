"""Diagnostic (issue 26): a delete-a-group jackknife variance of the whole pair-design estimate, power tuning's
judge-free arm with the same groups, against the library's linearised one (benchmarks/README.md, "Held out").

    python benchmarks/corrected_pair_jackknife.py [--world dl19|llmjudge] [--judge NAME] [--pairs 300]
        [--subsets 30] [--groups 10] [--metrics ndcg@10,recall@100] [--gain linear|exponential] [--runs strong]

Per subset (the same draws as corrected_heldout.py / corrected_coverage.py, seed 0): the library's figure
(`corrected`: estimate, interval, se, lambda, the recall stretch), and the jackknife: the random gold pairs dealt
into GROUPS groups within each judge grade, each group left out in turn, the judge's and the judge-free models
refitted on the rest and both arms' estimates recomputed (corrected_estimate.pair_terms: the value with NDCG's
expected ideal DCG and recall's ratio); V = (1 - n/N) (G - 1)/G sum_g (theta_g - mean)^2 of the blend at the
library's lambda (V_J, V_B and their covariance from the same replicates). Printed per run and metric: the
estimate's mean error and spread over subsets / the mean se, each se, and the coverage of the library's interval
with its se replaced (its quantile; a normal; t on G - 1; the larger of the two se), and the human-only (lambda 0)
interval's widths, linearised and jackknife; the judge's and the judge-free arm alone (error / se, spread / se);
the whole pipeline's jackknife (`corrected` on each group-deleted gold, lambda chosen again); and the spread of the
two arms blended at a fixed lambda (the subsets' mean), against the tuned blend's. Library unchanged by it: issue
26's finding is that this variance is not the fix (benchmarks/README.md, "Held out", the pairjack bullet).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corrected_coverage as cc  # noqa: E402
import llmjudge_system_ranking as lsr  # noqa: E402
from scipy.stats import t as student  # noqa: E402

from labeller.evaluation.corrected import TILTED, _averaged, _Model, contribution  # noqa: E402
from labeller.evaluation.corrected_estimate import pair_terms  # noqa: E402
from labeller.evaluation.corrected_pool import gold_pool  # noqa: E402
from labeller.evaluation.corrected_power import blind_pool  # noqa: E402
from labeller.evaluation.metrics import parse_metrics  # noqa: E402
from labeller.evaluation.results import Settings  # noqa: E402
from labeller.evaluation.scoring import score_run  # noqa: E402


def world(args, tmp: Path):
    if args.world == "llmjudge":
        cc.LLMJUDGE = lsr.LLMJUDGE = args.llmjudge
        human = cc.judgments(cc.read_qrels(args.llmjudge / "human_qrels.txt"), "human", "gold")
        labels = cc.judgments(cc.read_qrels(args.llmjudge / f"llm_{args.judge}.txt"), args.judge, "qrels")
        return human, labels, cc.systems(args.judge)
    import corrected_heldout as ho
    from labeller.evaluation.qrels import load_judgments

    truth = ho.read_qrels(args.data / "qrels-pass.txt")
    human = load_judgments(args.data / "qrels-pass.txt", "0-3", role="gold")
    grades = ho.simulated(truth, args.judge, args.llmjudge, 0)
    labels = load_judgments(ho.write_qrels(tmp / "judge.txt", grades), "0-3")
    return human, labels, ho.runs(tmp, args.data / "run.bm25base_p.gz", truth, grades, 0)


def prepared(args):
    """The settings, metric specs, gold, judge labels, the runs asked for, their plain scores and true values."""
    settings, specs = Settings(relevant_from=3, gain=args.gain), parse_metrics(args.metrics)
    with tempfile.TemporaryDirectory() as tmp:
        human, labels, rankings = world(args, Path(tmp))
    if args.runs:
        rankings = [r for r in rankings if r.name in args.runs.split(",")]
    scores = {r.name: score_run(r, labels, specs, settings) for r in rankings}
    return settings, specs, human, labels, rankings, scores, cc.truth_of(rankings, human, scores, args.metrics, settings)


def groups_of(pool, n_groups: int, seed: int) -> np.ndarray:
    """-1 outside the gold; else 0..G-1, dealt in turn within each judge grade after a shuffle."""
    out = np.full(len(pool.judge), -1)
    rng, at = np.random.default_rng(seed), 0
    for j in sorted(pool.stratum_sizes()):
        rows = rng.permutation(np.flatnonzero(pool.in_gold & pool.stratum(j)))
        out[rows] = (np.arange(len(rows)) + at) % n_groups
        at += len(rows)
    return out


class Arms:
    """The judge's and the judge-free models of one pool (the replicate's), built once, both tilted and not."""

    def __init__(self, pool, settings):
        self.pool, self.free, self.settings, self.models = pool, blind_pool(pool), settings, {}

    def terms(self, spec, ranking, queries):
        tilt = spec.kind in TILTED
        out = []
        for pool in (self.pool, self.free):
            key = (id(pool), tilt)
            if key not in self.models:
                self.models[key] = _Model(pool, self.settings, tilt=tilt)
            out.append(pair_terms(contribution(ranking, queries, spec, self.models[key], self.settings), pool))
        return out


def quantile(c) -> float:
    """The interval's quantile, from its wider side (the ends are cut to [0, 1]; recall's are stretched by the
    remainder on its side)."""
    if not c.se_judge:
        return 1.96
    rem = c.remainder or 0.0
    return max(c.estimate - c.ci_low + min(rem, 0.0), c.ci_high - c.estimate - max(rem, 0.0)) / c.se_judge


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--world", default="dl19")
    p.add_argument("--judge", default="sim-Olz-gpt4o")
    p.add_argument("--pairs", type=int, default=300)
    p.add_argument("--subsets", type=int, default=30)
    p.add_argument("--groups", type=int, default=10)
    p.add_argument("--metrics", default="ndcg@10,recall@100")
    p.add_argument("--gain", default="linear")
    p.add_argument("--runs", default="")
    p.add_argument("--data", type=Path, default=Path("/work/shared/data/trec-dl19"))
    p.add_argument("--llmjudge", type=Path, default=Path("/work/shared/data/llmjudge"))
    args = p.parse_args()
    G = args.groups
    settings, specs, human, labels, rankings, scores, truth = prepared(args)
    blind_labels = cc.Judgments({q: {d: 3 for d in docs} for q, docs in labels.grades.items()}, "blind", "qrels")
    rng, rows = random.Random(0), {}
    started = time.perf_counter()
    for s in range(args.subsets):
        gold = cc.draw(human, rng, args.pairs, None)
        result, _ = cc.evaluate_all(rankings, labels, gold, args.metrics, settings, "pairs")
        alone, _ = cc.evaluate_all(rankings, blind_labels, gold, args.metrics, settings, "pairs")
        pool = gold_pool(labels, gold, "pairs")
        group = groups_of(pool, G, s)
        fpc = 1.0 - pool.in_gold.sum() / len(pool.judge)
        reps = [Arms(dataclasses.replace(pool, human=np.where(group == g, 0, pool.human)), settings) for g in range(G)]
        whole = []  # the library's figure on each replicate's gold (lambda chosen again): the whole pipeline
        for g in range(G):
            kept = cc.Judgments({q: {d: v for d, v in docs.items() if group[pool.index[q, d]] != g}
                                 for q, docs in gold.grades.items()}, "subset", "gold")
            whole.append(cc.evaluate_all(rankings, labels, kept, args.metrics, settings, "pairs")[0])
        arms_full = Arms(pool, settings)
        for r in rankings:
            for spec, m, h in zip(specs, result.runs[r.name], alone.runs[r.name]):
                c = m.corrected
                if c.estimate is None:
                    continue
                queries = _averaged(scores[r.name], spec.name)
                th = np.array([[t.value for t in a.terms(spec, r, queries)] for a in reps])  # G x (judge, blind)
                ws = np.array([next(x for x in w.runs[r.name] if x.metric == spec.name).corrected.estimate for w in whole])
                v_whole = fpc * (G - 1) / G * np.sum((ws - ws.mean()) ** 2)
                fj, fb = arms_full.terms(spec, r, queries)
                lam = c.power_lambda if c.power_lambda is not None else 1.0
                dev = th - th.mean(axis=0)
                cov = fpc * (G - 1) / G * dev.T @ dev
                v_jk = lam**2 * cov[0, 0] + (1 - lam) ** 2 * cov[1, 1] + 2 * lam * (1 - lam) * cov[0, 1]
                full = np.array([fj.value, fb.value])
                shift = (G - 1) * ((lam * th[:, 0] + (1 - lam) * th[:, 1]).mean() - (lam * full[0] + (1 - lam) * full[1]))
                rem = c.remainder or 0.0
                q_lib, hq = quantile(c), quantile(h.corrected)
                rows.setdefault((spec.name, r.name), []).append(
                    (c.estimate - truth[r.name, spec.name], c.se_judge, np.sqrt(v_jk), q_lib, rem, c.estimate,
                     truth[r.name, spec.name], lam, h.corrected.se_judge, np.sqrt(cov[1, 1]), hq,
                     h.corrected.ci_high - h.corrected.ci_low, c.ci_high - c.ci_low, shift,
                     fj.value - truth[r.name, spec.name], np.sqrt(fj.variance), np.sqrt(cov[0, 0]),
                     fb.value - truth[r.name, spec.name], np.sqrt(fb.variance), np.sqrt(v_whole)))
        print(f"subset {s + 1}/{args.subsets} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    t_g = float(student.ppf(0.975, G - 1))
    print(f"# {args.world} {args.judge} {args.pairs} pairs, {args.subsets} subsets, {G} groups, {args.gain} gain")
    for (metric, run), v in rows.items():
        v = np.array(v)
        err, lin, jk, q, rem, est, tr = (v[:, i] for i in range(7))
        lam_bar = v[:, 7].mean()

        def cover(se, quantile, est=est):
            lo = np.clip(est - quantile * se + np.minimum(rem, 0), 0, 1)
            hi = np.clip(est + quantile * se + np.maximum(rem, 0), 0, 1)
            return f"{np.mean((lo - 1e-12 <= tr) & (tr <= hi + 1e-12)):.0%}/{np.mean(hi - lo):.4f}"

        print(f"{metric:10s} {run:14s} err/se {err.mean() / lin.mean():+.2f} spread/se lin {err.std(ddof=1) / lin.mean():.2f}"
              f" (rms se {err.std(ddof=1) / np.sqrt(np.mean(lin**2)):.2f})"
              f" jk {err.std(ddof=1) / jk.mean():.2f} jk/lin {np.mean(jk / lin):.2f} lam {v[:, 7].mean():.2f} | cov/width:"
              f" lib {cover(lin, q)} jk(q) {cover(jk, q)} jk(t{G - 1}) {cover(jk, t_g)} max(q) {cover(np.maximum(lin, jk), q)}"
              f" bias-corrected jk(q) {cover(jk, q, est - v[:, 13])} (jk bias/se {v[:, 13].mean() / lin.mean():+.2f})"
              f" | human-only width lin {v[:, 11].mean():.4f} jk(q) {np.mean(2 * v[:, 10] * v[:, 9]):.4f}"
              f" jk/lin {np.mean(v[:, 9] / v[:, 8]):.2f}"
              f"\n    judge arm alone: err/se {v[:, 14].mean() / v[:, 15].mean():+.2f} spread/se lin"
              f" {v[:, 14].std(ddof=1) / v[:, 15].mean():.2f} jk {v[:, 14].std(ddof=1) / v[:, 16].mean():.2f};"
              f" judge-free arm: err/se {v[:, 17].mean() / v[:, 18].mean():+.2f} spread/se lin"
              f" {v[:, 17].std(ddof=1) / v[:, 18].mean():.2f} jk {v[:, 17].std(ddof=1) / v[:, 9].mean():.2f};"
              f" whole-pipeline jk (lambda re-chosen): spread/se {err.std(ddof=1) / v[:, 19].mean():.2f}"
              f" se/lin {np.mean(v[:, 19] / lin):.2f} cov(q) {cover(v[:, 19], q)};"
              f" the arms blended at the mean lambda: spread/se"
              f" {(lam_bar * v[:, 14] + (1 - lam_bar) * v[:, 17]).std(ddof=1) / lin.mean():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
