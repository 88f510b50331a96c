"""Batch round trip against the test fake: `labeller label --batch` against the synchronous path
for the same pairs, each against its own fresh fake server (so both see the same prompt cache).

  batch   labeller label --batch (OpenAI files + batches), results ready --batch-delay s after creation
  sync    labeller label (chat completions), --concurrency C at --latency s per request
  rerun   the --batch command again: every pair from the store, zero requests of any kind

Reports pairs, batches, polls, wall time and the cost of both, and the cost ratio (expect 0.5:
the batch column of the price table). Then the estimated prefix size of each shipped rubric.

    python benchmarks/batch_roundtrip.py --pairs 2000 --batch-max-requests 500 --batch-delay 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import REPO, write_inputs  # noqa: E402


def start_fake(latency: float, batch_delay: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "fakeapi.py"), "--latency", str(latency),
                             "--batch-delay", str(batch_delay)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"fakeapi did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1].strip()


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/stats") as reply:
        return json.load(reply)


def label(folder: Path, url: str, name: str, extra: list[str]) -> tuple[float, str, list[dict]]:
    env = {**os.environ, "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-bench-unused"}
    out = folder / f"{name}.jsonl"
    cmd = [sys.executable, "-m", "labeller", "label", "--queries", str(folder / "queries.jsonl"),
           "--corpus", str(folder / "corpus.jsonl"), "--pairs", str(folder / "pairs.jsonl"),
           "--judge", "openai:gpt-4.1-mini", "--cache", str(folder / f"cache-{name}"), "--out", str(out), *extra]
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, done.stderr, [json.loads(line) for line in out.read_text().splitlines()]


def prefix_sizes() -> list[tuple[str, int]]:
    from labeller.prices import CHARS_PER_TOKEN
    from labeller.rubric import available_rubrics, load_rubric

    return [(name, len(load_rubric(name).system_prompt()) // CHARS_PER_TOKEN) for name in available_rubrics()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--batch-max-requests", type=int, default=500)
    parser.add_argument("--batch-delay", type=float, default=2.0)
    parser.add_argument("--poll-interval", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_inputs(folder, args.pairs)
        fake, url = start_fake(args.latency, args.batch_delay)
        try:
            batch_s, err, batch_rows = label(folder, url, "batch", [
                "--batch", "--poll-interval", str(args.poll_interval),
                "--batch-max-requests", str(args.batch_max_requests)])
            counts = stats(url)
            summary = re.search(r"batches: (\d+) submitted \((\d+) requests\), (\d+) resumed, (\d+) completed, "
                                r"(\d+) polls", err)
            assert summary, err
            before = stats(url)["total"]
            rerun_s, _, rerun_rows = label(folder, url, "batch", ["--batch"])
            rerun_sent = stats(url)["total"] - before
        finally:
            stop(fake)
        fake, url = start_fake(args.latency, args.batch_delay)
        try:
            sync_s, _, sync_rows = label(folder, url, "sync", ["--concurrency", str(args.concurrency)])
            sync_counts = stats(url)
        finally:
            stop(fake)

    assert len(batch_rows) == len(sync_rows) == len(rerun_rows) == args.pairs
    assert counts["counts"].get("/v1/chat/completions", 0) == 0 and counts["batched"] == args.pairs
    assert rerun_sent == 0 and all(r["from_cache"] for r in rerun_rows)
    assert {(r["doc_id"], r["grade"]) for r in batch_rows} == {(r["doc_id"], r["grade"]) for r in sync_rows}
    batch_cost = sum(r["cost_usd"] for r in batch_rows)
    sync_cost = sum(r["cost_usd"] for r in sync_rows)
    submitted, _, _, completed, polls = (int(g) for g in summary.groups())
    print(f"{args.pairs} pairs, openai:gpt-4.1-mini, fake with results {args.batch_delay:g} s after a batch is "
          f"created, poll every {args.poll_interval:g} s; sync at {args.latency * 1000:.0f} ms latency, "
          f"concurrency {args.concurrency}")
    print(f"  batch   {batch_s:6.2f} s  {submitted} batches of <= {args.batch_max_requests} ({completed} completed), "
          f"{polls} polls, {counts['total']} HTTP calls, 0 synchronous requests, cost ${batch_cost:.4f}")
    print(f"  sync    {sync_s:6.2f} s  {sync_counts['counts'].get('/v1/chat/completions', 0)} requests, "
          f"cost ${sync_cost:.4f}")
    print(f"  rerun   {rerun_s:6.2f} s  {rerun_sent} requests (every pair from the store)")
    print(f"  cost ratio batch/sync = {batch_cost / sync_cost:.3f} (expected 0.500); same grades for every pair")
    print("shared prefix (system: preamble, rubric, examples) of each shipped rubric, estimated at 4 chars a token:")
    for name, tokens in prefix_sizes():
        print(f"  {name:14s} ~{tokens:,} tokens: " + ("cached by OpenAI (>= 1,024)" if tokens >= 1024
                                                      else "below OpenAI's 1,024-token caching minimum"))


if __name__ == "__main__":
    main()
