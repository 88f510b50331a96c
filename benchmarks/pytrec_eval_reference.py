"""The reference `labeller evaluate` is measured against: pytrec_eval parsing the same files into
the dicts it takes, evaluating the same measures and printing the means, as a user would script it.

    python benchmarks/pytrec_eval_reference.py RUN QRELS
"""

from __future__ import annotations

import sys
from statistics import fmean

import pytrec_eval

MEASURES = {"ndcg_cut.10": "ndcg_cut_10", "recall.100": "recall_100", "recip_rank": "recip_rank"}


def main(run_path: str, qrels_path: str) -> None:
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_path) as lines:
        for line in lines:
            qid, _, doc, grade = line.split()
            qrels.setdefault(qid, {})[doc] = int(grade)
    run: dict[str, dict[str, float]] = {}
    with open(run_path) as lines:
        for line in lines:
            qid, _, doc, _, score, _ = line.split()
            run.setdefault(qid, {})[doc] = float(score)
    # labeller's default --relevant-from 3 is TREC grade 2; NDCG is graded either way.
    graded = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    binary = pytrec_eval.RelevanceEvaluator(qrels, {"recall.100", "recip_rank"}, relevance_level=2).evaluate(run)
    for measure, key in MEASURES.items():
        values = graded if measure.startswith("ndcg") else binary
        print(f"{measure}\t{fmean(v[key] for v in values.values()):.4f}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
