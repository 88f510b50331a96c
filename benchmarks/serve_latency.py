"""Latency of `POST /retrieval-test/bm25` over the bundled sample, through a real uvicorn server.

Starts the API on a free loopback port in a background thread, sends each sample query (top_k 10,
one ground-truth text) repeatedly at several concurrencies, and prints p50/p95 per concurrency with
the sample size. Also times the bare retriever call (no HTTP) for comparison.

    python benchmarks/serve_latency.py [--requests 400] [--concurrency 1 4 8]
"""

from __future__ import annotations

import argparse
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import uvicorn

from labeller.acceptance import latency_stats, timed_search
from labeller.io import read_corpus, read_queries
from labeller.retrieval import make_retriever
from labeller.serve import create_app
from labeller.serve.config import RetrieverSpec, ServeConfig

SAMPLE = Path(__file__).resolve().parent.parent / "pipelines" / "sample"


def start(app) -> tuple[uvicorn.Server, threading.Thread, int]:
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only when the listening
    # socket says TCP; with proto 0 every response waits ~40 ms on Nagle + delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return server, thread, sock.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    args = parser.parse_args()

    corpus = read_corpus(SAMPLE / "corpus.jsonl")
    queries = list(read_queries(SAMPLE / "queries.jsonl").values())
    retriever = make_retriever("bm25", corpus)
    bodies = [{"query": q.text, "ground_truth_texts": [q.fields.get("description", q.text)], "top_k": 10,
               "project_key": "benchmark"}
              for q in queries]
    texts = [(f"r{i}", bodies[i % len(bodies)]["query"]) for i in range(args.requests)]
    _, bare = timed_search(retriever, texts, 10)
    print(f"corpus {len(corpus)} docs, {len(queries)} distinct queries")
    print(f"bare bm25 search: p50 {bare.p50_ms:.2f} ms, p95 {bare.p95_ms:.2f} ms (n={bare.n}, concurrency 1)")

    config = ServeConfig(retrievers={"bm25": RetrieverSpec(builtin="bm25", corpus=str(SAMPLE / "corpus.jsonl"))})
    server, thread, port = start(create_app(config, {"bm25": retriever}))
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            for body in bodies[:10]:  # warm-up
                client.post("/retrieval-test/bm25", json=body).raise_for_status()

            def one(i: int) -> float:
                start_t = time.perf_counter()
                client.post("/retrieval-test/bm25", json=bodies[i % len(bodies)]).raise_for_status()
                return time.perf_counter() - start_t

            for concurrency in args.concurrency:
                with ThreadPoolExecutor(max_workers=concurrency) as pool:
                    began = time.perf_counter()
                    samples = list(pool.map(one, range(args.requests)))
                    wall = time.perf_counter() - began
                stats = latency_stats(samples, concurrency)
                print(f"POST /retrieval-test/bm25: p50 {stats.p50_ms:.2f} ms, p95 {stats.p95_ms:.2f} ms "
                      f"(n={stats.n}, concurrency {stats.concurrency}), {stats.n / wall:.0f} requests/s")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


if __name__ == "__main__":
    main()
