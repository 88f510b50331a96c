"""Throughput of `labeller label` against a bare asyncio loop over the same SDK, same server, same run.

Starts tests/fakeapi.py as its own process (200 ms latency, no faults), writes N synthetic pairs,
then times whole processes from start to exit:

  bare      benchmarks/bare_loop.py: the openai SDK, N workers in flight, nothing else
  labeller  labeller label --judge openai:gpt-4.1-mini --concurrency C with a fresh cache
  cached    the same labeller command again: every pair from the cache, zero requests

Runs alternate (bare, labeller, cached) `--repeat` times; the median of each is reported.

    python benchmarks/throughput.py --pairs 2000 --concurrency 32 --latency 0.2 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORDS = ("invoice office paper toner fuel diesel travel hotel train ticket software licence cloud hosting "
         "coffee catering cleaning rent electricity water phone broadband insurance legal fees consulting "
         "marketing advertising postage courier stationery furniture laptop monitor repairs parking").split()


def write_inputs(folder: Path, n_pairs: int, docs_per_query: int = 10, seed: int = 0) -> None:
    rng = random.Random(seed)
    n_queries = max(1, n_pairs // docs_per_query)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    # generators, written as they come: ten million pairs' rows held at once took ~15 GB
    queries = ({"query_id": f"q{i}", "text": text(8)} for i in range(n_queries))
    corpus = ({"doc_id": f"d{i}", "text": text(60)} for i in range(n_pairs))
    pairs = ({"query_id": f"q{i % n_queries}", "doc_id": f"d{i}"} for i in range(n_pairs))
    for name, rows in (("queries", queries), ("corpus", corpus), ("pairs", pairs)):
        with open(folder / f"{name}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)


def write_prompts(folder: Path, rubric: str) -> None:
    """The prompts labeller will send, rendered once, for the bare loop to send as they are."""
    from labeller.io.inputs import read_corpus, read_pairs, read_queries
    from labeller.rubric import load_rubric

    rub = load_rubric(rubric)
    queries = read_queries(folder / "queries.jsonl")
    corpus = read_corpus(folder / "corpus.jsonl")
    with open(folder / "prompts.jsonl", "w", encoding="utf-8") as f:
        for pair in read_pairs(folder / "pairs.jsonl"):
            prompt = rub.render(queries[pair.query_id], corpus[pair.doc_id])
            f.write(json.dumps({"system": prompt.system, "user": prompt.user}) + "\n")


def start_fakeapi(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "fakeapi.py"), "--latency", str(latency)],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"fakeapi did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1].strip()


def requests_so_far(url: str) -> int:
    with urllib.request.urlopen(url + "/stats") as reply:
        return json.load(reply)["total"]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rubric", default="general")
    args = parser.parse_args()

    server, url = start_fakeapi(args.latency)
    env = {**os.environ, "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-bench-unused"}
    times: dict[str, list[float]] = {"bare": [], "labeller": [], "cached": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_inputs(folder, args.pairs)
            write_prompts(folder, args.rubric)
            for round_ in range(args.repeat):
                elapsed, out = timed([sys.executable, str(REPO / "benchmarks" / "bare_loop.py"),
                                      str(folder / "prompts.jsonl"), "--concurrency", str(args.concurrency)], env)
                assert json.loads(out)["done"] == args.pairs, out
                times["bare"].append(elapsed)

                cache, labels = folder / f"cache{round_}", folder / f"labels{round_}.jsonl"
                label = [sys.executable, "-m", "labeller", "label", "--queries", str(folder / "queries.jsonl"),
                         "--corpus", str(folder / "corpus.jsonl"), "--pairs", str(folder / "pairs.jsonl"),
                         "--judge", "openai:gpt-4.1-mini", "--rubric", args.rubric, "--cache", str(cache),
                         "--out", str(labels), "--concurrency", str(args.concurrency)]
                before = requests_so_far(url)
                times["labeller"].append(timed(label, env)[0])
                sent = requests_so_far(url) - before
                rows = sum(1 for _ in open(labels, encoding="utf-8"))
                assert rows == args.pairs and sent == args.pairs, (rows, sent)

                before = requests_so_far(url)
                times["cached"].append(timed(label, env)[0])
                assert requests_so_far(url) == before, "a cached rerun sent requests"
                print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items()), flush=True)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()

    rate = {name: args.pairs / statistics.median(values) for name, values in times.items()}
    print(f"\n{args.pairs} pairs, concurrency {args.concurrency}, latency {args.latency * 1000:.0f} ms, "
          f"median of {args.repeat} whole-process runs")
    for name, value in rate.items():
        print(f"  {name:9s} {value:8.1f} pairs/s   ({statistics.median(times[name]):.2f} s)")
    print(f"  ratio labeller/bare = {rate['labeller'] / rate['bare']:.3f} (target >= 0.85)")


if __name__ == "__main__":
    main()
