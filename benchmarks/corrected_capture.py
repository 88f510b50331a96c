"""Capture the pair design's variance terms on LLMJudge, so small-sample remedies can be compared offline on the
very same subsets (benchmarks/README.md, "Small-sample remedies under the pair design"; corrected_smallsample.py
reads what this writes).

For each gain and subset (the draws of corrected_coverage.py, seed 0), every run and metric: the truth, the
library's interval, and the terms it was built from: the judge's and the judge-free estimator's per-pair effects
z_i on the random gold, each pair's judge grade, the strata sizes and the halves' split, for the corrected figure
and for the benchmark's human-only one (the same estimator with a judge that gives every pair one grade).

    python benchmarks/corrected_capture.py JUDGE PAIRS SUBSETS OUT.pkl [DATA]
"""
from __future__ import annotations

import pickle
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import corrected_coverage as cc  # noqa: E402
import llmjudge_system_ranking as L  # noqa: E402

from labeller.evaluation import corrected_estimate as ce  # noqa: E402
from labeller.evaluation import corrected_power as cp  # noqa: E402
from labeller.evaluation.metrics import parse_metrics  # noqa: E402
from labeller.evaluation.results import Settings  # noqa: E402
from labeller.evaluation.scoring import score_run  # noqa: E402

EVENTS: list = []
_pair_terms, _tuned = ce.pair_terms, cp.tuned


def compact(terms, pool) -> dict:
    gold = np.flatnonzero(pool.in_gold & ~pool.certain) if len(pool.certain) else np.flatnonzero(pool.in_gold)
    return {"value": terms.value, "z": terms.z[gold].copy(), "j": pool.judge[gold].copy(),
            "sizes": pool.stratum_sizes(), "parts": list(terms.parts), "sq": ce._spread(terms.per_query),
            "half": cp.halves(pool)[gold].copy(), "gold": gold}


def pair_terms(c, pool, anticipated=None):
    out = _pair_terms(c, pool, anticipated)
    EVENTS.append(("terms", compact(out, pool)))
    return out


def tuned(judge, pool, blind, free, confidence):
    out = _tuned(judge, pool, blind, free, confidence)
    EVENTS.append(("tuned", out))
    return out


ce.pair_terms, cp.tuned = pair_terms, tuned


def records(result, rankings) -> list:
    """Match the events of one corrected() call to its run x metric values (same order: runs, then metrics)."""
    events, out, k = list(EVENTS), [], 0
    EVENTS.clear()
    for r in rankings:
        for m in result.runs[r.name]:
            c = m.corrected
            if c.estimate is None:
                continue
            rec = {"run": r.name, "metric": m.metric, "low": c.ci_low, "high": c.ci_high, "estimate": c.estimate,
                   "se": c.se_judge, "lambda": c.power_lambda, "judge": events[k][1]}
            k += 1
            if k < len(events) and events[k][0] == "terms" and k + 1 < len(events) and events[k + 1][0] == "tuned":
                rec["blind"] = events[k][1]
                assert abs(events[k + 1][1].estimate - c.estimate) < 1e-12
                k += 2
            out.append(rec)
    assert k == len(events), (k, len(events))
    return out


def main() -> int:
    judge, pairs, subsets, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if len(sys.argv) > 5:
        L.LLMJUDGE = cc.LLMJUDGE = Path(sys.argv[5])
    human = cc.judgments(cc.read_qrels(cc.LLMJUDGE / "human_qrels.txt"), "human", "gold")
    labels = cc.judgments(cc.read_qrels(cc.LLMJUDGE / f"llm_{judge}.txt"), f"llm_{judge}", "qrels")
    blind = cc.Judgments({q: {d: 3 for d in docs} for q, docs in labels.grades.items()}, "blind", "qrels")
    rankings = cc.systems(judge)
    metrics = "ndcg@10,recall@100,precision@10"
    out = {"judge": judge, "pairs": pairs, "cells": {}}
    for gain, names in (("linear", metrics), ("exponential", cc.EXPONENTIAL)):
        settings = Settings(relevant_from=3, gain=gain)
        specs = parse_metrics(names)
        scores = {r.name: score_run(r, labels, specs, settings) for r in rankings}
        truth = cc.truth_of(rankings, human, scores, names, settings)
        rng = random.Random(0)
        rows = []
        for _ in range(subsets):
            gold = cc.draw(human, rng, pairs, None)
            EVENTS.clear()
            result, _ = cc.evaluate_all(rankings, labels, gold, names, settings, "pairs")
            mine = records(result, rankings)
            alone, _ = cc.evaluate_all(rankings, blind, gold, names, settings, "pairs")
            theirs = records(alone, rankings)
            for a, b in zip(mine, theirs):
                a["human"] = b
                a["truth"] = truth[a["run"], a["metric"]]
            rows.append(mine)
        out["cells"][gain] = rows
    with open(path, "wb") as f:
        pickle.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
