"""What the notebook API costs over the file-based library calls the CLI makes, on real data.

labeller.agree / labeller.evaluate take DataFrames and dicts and hand them in memory to the same readers as
files (labeller.io.memory; until stop 45 through a private temporary Parquet or JSON file each). This measures, in one process, the DataFrame call against the
file call on the same data, best of --repeat, and prints the ratio (API / files):
- agree: the LLMJudge label set Olz-gpt4o (4,423 pairs) against the NIST qrels, 1,000 resamples;
- evaluate: the TREC DL19 BM25 run (43 judged queries x 1,000 documents) against its qrels.
Reads ../shared beside the checkout; exits 0 with a note when absent.
Usage: python benchmarks/api_overhead.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def qrels_frame(path: Path):
    import pandas as pd

    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return pd.DataFrame([(q, d, int(g)) for q, _, d, g in rows], columns=["query_id", "doc_id", "grade"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    llmjudge, dl19 = SHARED / "llmjudge", SHARED / "trec-dl19"
    if not (llmjudge / "human_qrels.txt").is_file() or not (dl19 / "qrels-pass.txt").is_file():
        print(f"skipped: {SHARED} not found (needs llmjudge/ and trec-dl19/)")
        return
    import labeller
    from labeller.agreement import AgreeOptions, agree
    from labeller.evaluation import EvaluateOptions, evaluate
    from labeller.io.trec import read_run_scores

    labels, gold = qrels_frame(llmjudge / "llm_Olz-gpt4o.txt"), qrels_frame(llmjudge / "human_qrels.txt")
    files = best(lambda: agree(AgreeOptions(labels=llmjudge / "llm_Olz-gpt4o.txt", gold=llmjudge / "human_qrels.txt",
                                            from_scale="0-3")), args.repeat)
    frames = best(lambda: labeller.agree(labels, gold, from_scale="0-3"), args.repeat)
    print(f"agree    4,423 pairs   files {files:.3f} s   DataFrames {frames:.3f} s   ratio {frames / files:.2f}")

    run = read_run_scores(dl19 / "run.bm25base_p.gz")
    qrels = qrels_frame(dl19 / "qrels-pass.txt")
    options = EvaluateOptions(runs=[dl19 / "run.bm25base_p.gz"], labels=dl19 / "qrels-pass.txt",
                              metrics="ndcg@10,recall@1000")
    files = best(lambda: evaluate(options), args.repeat)
    frames = best(lambda: labeller.evaluate(qrels, run, "ndcg@10,recall@1000", from_scale="0-3"), args.repeat)
    print(f"evaluate {sum(map(len, run.values())):,} run lines   files {files:.3f} s   dict run + qrels frame "
          f"{frames:.3f} s   ratio {frames / files:.2f}")


if __name__ == "__main__":
    main()
