"""Experiment (not in the library): a delete-a-group jackknife variance of recall@100 under the pair design, the
judge-calibrated estimator alone (lambda 1), against the linearised one, on LLMJudge (benchmarks/README.md).

    python benchmarks/corrected_jackknife.py JUDGE PAIRS SUBSETS GROUPS [DATA]
    python benchmarks/corrected_jackknife.py willia-umbrela1 1200 50 10 ../shared/data/llmjudge

Per subset (the same draws as corrected_coverage.py, seed 0): the gold pairs are dealt into GROUPS groups within
each judge grade; each group left out in turn, the model refitted and the estimate recomputed (weights N_j / the
pairs left); variance (1 - n/N) (G - 1)/G sum (theta_g - mean)^2. Printed per run: the estimate's spread over the
subsets / the mean se, each way, and the coverage of a normal 95% interval with each se (and their larger).
"""
import dataclasses
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import corrected_coverage as cc  # noqa: E402
import llmjudge_system_ranking as L  # noqa: E402

L.LLMJUDGE = cc.LLMJUDGE = Path(sys.argv[5] if len(sys.argv) > 5 else '../shared/data/llmjudge')
from labeller.evaluation.corrected import _averaged, _Model, contribution  # noqa: E402
from labeller.evaluation.corrected_estimate import pair_terms  # noqa: E402
from labeller.evaluation.corrected_pool import gold_pool  # noqa: E402
from labeller.evaluation.metrics import parse_metrics  # noqa: E402
from labeller.evaluation.results import Settings  # noqa: E402
from labeller.evaluation.scoring import score_run  # noqa: E402

judge, pairs, subsets, G = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
human = cc.judgments(cc.read_qrels(cc.LLMJUDGE/'human_qrels.txt'), 'human', 'gold')
labels = cc.judgments(cc.read_qrels(cc.LLMJUDGE/f'llm_{judge}.txt'), judge, 'qrels')
rk = cc.systems(judge); st = Settings(relevant_from=3)
spec = parse_metrics('recall@100')[0]
scores = {r.name: score_run(r, labels, [spec], st) for r in rk}
truth = cc.truth_of(rk, human, scores, 'recall@100', st)
rng = random.Random(0)
rows = {r.name: [] for r in rk}
for s in range(subsets):
    gold = cc.draw(human, rng, pairs, None)
    pool = gold_pool(labels, gold, 'pairs')
    model = _Model(pool, st, tilt=True)
    gidx = np.flatnonzero(pool.in_gold)
    # groups dealt round-robin within each judge stratum after a shuffle
    grp = np.zeros(len(pool.judge), int) - 1
    r2 = np.random.default_rng(s)
    for j in np.unique(pool.judge):
        members = gidx[pool.judge[gidx] == j]
        members = r2.permutation(members)
        grp[members] = (np.arange(len(members)) + r2.integers(G)) % G
    models = []
    for g in range(G):
        h = pool.human.copy(); h[grp == g] = 0
        pg = dataclasses.replace(pool, human=h)
        models.append((pg, _Model(pg, st, tilt=True)))
    f = len(gidx) / len(pool.judge)
    for r in rk:
        q = _averaged(scores[r.name], spec.name)
        t = pair_terms(contribution(r, q, spec, model, st), pool)
        th = np.array([pair_terms(contribution(r, q, spec, m, st), pg).value for pg, m in models])
        vjk = (1 - f) * (G - 1) / G * np.sum((th - th.mean()) ** 2)
        rows[r.name].append((t.value - truth[r.name, spec.name], np.sqrt(t.variance), np.sqrt(vjk)))
for name, v in rows.items():
    v = np.array(v)
    z = 1.96
    print(f"{name:12s} spread/se_lin {v[:,0].std(ddof=1)/v[:,1].mean():.2f} spread/se_jk {v[:,0].std(ddof=1)/v[:,2].mean():.2f}"
          f" cov_lin {np.mean(np.abs(v[:,0]) <= z*v[:,1]):.0%} cov_jk {np.mean(np.abs(v[:,0]) <= z*v[:,2]):.0%} cov_max {np.mean(np.abs(v[:,0]) <= z*np.maximum(v[:,1],v[:,2])):.0%} bias/se {v[:,0].mean()/v[:,1].mean():+.2f}")
