"""labeller evaluate against published trec_eval figures and pytrec_eval on TREC DL19 passage.

Reads ../shared/data/trec-dl19 beside the checkout (skips cleanly when absent), runs the CLI as a
user would, and prints ours vs published vs pytrec_eval (trec_eval's own code), mean and per query.
Exit status 1 if any mean is more than 1e-4 from the published figure or from pytrec_eval.

    python benchmarks/dl19_parity.py
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

DL19 = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "trec-dl19"
QRELS, RUN = DL19 / "qrels-pass.txt", DL19 / "run.bm25base_p.gz"
# Anserini's regression page for this run (trec_eval; AP and recall with -l 2 = our grade 3).
PUBLISHED = {"ndcg@10": 0.5058, "recall@1000": 0.7501, "recall@100": 0.4910, "map": 0.3013}
# our name -> (trec_eval measure, result key, binary?)
TREC = {"ndcg@10": ("ndcg_cut.10", "ndcg_cut_10", False), "recall@1000": ("recall.1000", "recall_1000", True),
        "recall@100": ("recall.100", "recall_100", True), "map": ("map", "map", True),
        "mrr": ("recip_rank", "recip_rank", True), "precision@10": ("P.10", "P_10", True),
        "ndcg@100": ("ndcg_cut.100", "ndcg_cut_100", False), "hit_rate@10": ("success.10", "success_10", True)}
TOLERANCE = 1e-4


def read_trec():
    qrels: dict[str, dict[str, int]] = {}
    for line in QRELS.read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    run: dict[str, dict[str, float]] = {}
    for line in gzip.decompress(RUN.read_bytes()).decode().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    return qrels, run


def pytrec_values(qrels, run) -> dict[str, dict[str, float]]:
    import pytrec_eval

    graded = pytrec_eval.RelevanceEvaluator(qrels, {m for m, _, b in TREC.values() if not b}).evaluate(run)
    binary = pytrec_eval.RelevanceEvaluator(qrels, {m for m, _, b in TREC.values() if b},
                                            relevance_level=2).evaluate(run)
    return {name: {q: (binary if b else graded)[q][key] for q in graded} for name, (_, key, b) in TREC.items()}


def main() -> int:
    if not QRELS.is_file() or not RUN.is_file():
        print(f"skipped: {DL19} not found (../shared is only beside the developers' checkout)")
        return 0
    command = ["labeller", "evaluate", "--run", str(RUN), "--labels", str(QRELS), "--from-scale", "0-3",
               "--metrics", ",".join(TREC), "--relevant-from", "3", "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode:
        print(done.stderr)
        return 1
    ours = json.loads(done.stdout)
    reference = pytrec_values(*read_trec())
    worst = 0.0
    print(f"$ {' '.join(command)}\n({elapsed:.2f} s wall, ranx kernels {ours['ranx_kernels']}, "
          f"{ours['queries']['evaluated']} queries evaluated, "
          f"no-answer bucket {len(ours['no_answer']['query_ids'])})\n")
    print("| metric | labeller | published (trec_eval) | pytrec_eval | max per-query diff vs pytrec_eval |")
    print("| --- | --- | --- | --- | --- |")
    for name in TREC:
        mean = sum(reference[name].values()) / len(reference[name])
        per_query = max(abs(ours["per_query"][name][q] - v) for q, v in reference[name].items())
        published = PUBLISHED.get(name)
        worst = max(worst, abs(ours["metrics"][name] - mean), per_query,
                    abs(ours["metrics"][name] - published) if published is not None else 0.0)
        shown = f"{published:.4f}" if published is not None else "–"
        print(f"| {name} | {ours['metrics'][name]:.6f} | {shown} | {mean:.6f} | {per_query:.1e} |")
    ok = worst <= TOLERANCE
    print(f"\nlargest difference {worst:.2e} (published figures are rounded to 4 decimals): "
          f"{'OK' if ok else 'FAILED'} at {TOLERANCE}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
