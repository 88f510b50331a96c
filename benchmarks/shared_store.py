"""Several `labeller label` processes sharing one verdict store, and cached reruns from PostgreSQL.

1. Shared labelling: 1, 2 and 4 processes started at once label the SAME pairs into ONE store
   (a fresh PostgreSQL database each time, and for reference a fresh directory), against
   tests/fakeapi.py with 200 ms latency. Reports the requests the server saw (must equal the
   pairs: nobody paid twice) and pairs/s from the first start to the last exit, against one process.
2. Cached rerun: N pairs whose verdicts are all stored (written straight into a directory store with
   the keys the engine computes, then `labeller cache copy` into PostgreSQL), then `labeller label`
   as a whole process on each backend; the server must see zero requests. Median of --repeat runs.

PostgreSQL: $LABELLER_BENCH_POSTGRES (a server URL whose user may create databases), else a
throwaway server started from the machine's postgresql package with fsync on (tests/pgserver.py).

    python benchmarks/shared_store.py --pairs 2000 --latency 0.2 --concurrency 32 --cached-pairs 100000
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import pgserver  # noqa: E402
from throughput import requests_so_far, start_fakeapi, timed, write_inputs  # noqa: E402

JUDGE = "openai:gpt-4.1-mini"


def new_database(server_url: str) -> str:
    import psycopg

    name = f"labeller_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def label_command(folder: Path, store: str, out: Path, concurrency: int) -> list[str]:
    return [sys.executable, "-m", "labeller", "label", "--queries", str(folder / "queries.jsonl"),
            "--corpus", str(folder / "corpus.jsonl"), "--pairs", str(folder / "pairs.jsonl"), "--judge", JUDGE,
            "--rubric", "general", "--cache", store, "--out", str(out), "--concurrency", str(concurrency)]


def shared_run(folder: Path, store: str, processes: int, concurrency: int, env: dict, url: str) -> tuple[float, int]:
    """Start `processes` labellers at once on the same pairs and store; (wall seconds, requests sent)."""
    before = requests_so_far(url)
    started = time.perf_counter()
    procs = [subprocess.Popen(label_command(folder, store, folder / f"labels-{i}.jsonl", concurrency), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for i in range(processes)]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"a labeller failed ({proc.returncode}): {err[-2000:]}")
    return time.perf_counter() - started, requests_so_far(url) - before


def fill_store(folder: Path, directory: Path, base_url: str) -> int:
    """Every pair's verdict, under the key the engine computes, written straight into a directory store."""
    from labeller.cache_key import cache_key
    from labeller.io.inputs import read_corpus, read_pairs, read_queries
    from labeller.judges.base import SCHEMA_VERSION
    from labeller.judges.registry import make_judge
    from labeller.records import Verdict
    from labeller.rubric import load_rubric
    from labeller.store import CachedVerdict, now_iso, open_store

    judge = make_judge(JUDGE, base_url=base_url, api_key="sk-bench-unused")
    rubric, settings = load_rubric("general"), judge.decoding_settings()
    queries, corpus = read_queries(folder / "queries.jsonl"), read_corpus(folder / "corpus.jsonl")
    records = []
    for pair in read_pairs(folder / "pairs.jsonl"):
        prompt = rubric.render(queries[pair.query_id], corpus[pair.doc_id])
        key = cache_key(provider=judge.provider, model=judge.model, base_url=judge.base_url, settings=settings,
                        prompt=prompt)
        records.append(CachedVerdict(
            cache_key=key, query_id=pair.query_id, doc_id=pair.doc_id,
            verdict=Verdict(grade=3, justification="the passage partly answers the query"), judge=judge.name,
            provider=judge.provider, model=judge.model, settings=settings, schema_version=SCHEMA_VERSION,
            rubric=rubric.name, rubric_version=rubric.version, input_tokens=400, output_tokens=30,
            cost_usd=0.0002, latency_s=0.2, created_at=now_iso()))
    with open_store(directory) as store:
        for i in range(0, len(records), 5000):
            store.put_many(records[i:i + 5000])
    return len(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight per process")
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--cached-pairs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of every configuration (median reported)")
    parser.add_argument("--skip-shared", action="store_true")
    args = parser.parse_args()

    own_server = None
    server_url = os.environ.get("LABELLER_BENCH_POSTGRES")
    if not server_url:
        own_server = Path(tempfile.gettempdir()) / f"labeller-bench-pg-{uuid.uuid4().hex[:8]}"
        server_url = pgserver.start(own_server, durable=True)
    fake, url = start_fakeapi(args.latency)
    env = {**os.environ, "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-bench-unused"}
    env.pop("LABELLER_CACHE", None)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            if not args.skip_shared:
                write_inputs(folder, args.pairs)
                counts = [int(p) for p in args.processes.split(",")]
                walls: dict[tuple[str, int], list[float]] = {}
                for round_ in range(args.repeat):  # interleaved, so machine load drifts evenly over all runs
                    for n in counts:
                        for backend in ("postgresql", "directory"):
                            store = (new_database(server_url) if backend == "postgresql"
                                     else str(folder / f"dir-{round_}-{n}"))
                            wall, sent = shared_run(folder, store, n, args.concurrency, env, url)
                            assert sent == args.pairs, f"{sent} requests for {args.pairs} pairs: a pair was paid twice"
                            walls.setdefault((backend, n), []).append(wall)
                            print(f"  round {round_ + 1}: {backend}, {n} processes: {wall:.2f} s, {sent} requests",
                                  flush=True)
                print(f"\nshared labelling: {args.pairs} pairs, {args.latency * 1000:.0f} ms latency, "
                      f"{args.concurrency} in flight per process, median of {args.repeat}")
                print("| store | processes | requests sent | wall time | pairs/s | vs one process |")
                print("| --- | --- | --- | --- | --- | --- |")
                for backend in ("postgresql", "directory"):
                    one = args.pairs / statistics.median(walls[(backend, counts[0])])
                    for n in counts:
                        med = statistics.median(walls[(backend, n)])
                        rate = args.pairs / med
                        print(f"| {backend} | {n} | {args.pairs} | {med:.2f} s | {rate:.1f} | {rate / one:.2f} |")

            cached = folder / "cached"
            cached.mkdir()
            write_inputs(cached, args.cached_pairs)
            started = time.perf_counter()
            filled = fill_store(cached, cached / "dir-store", url + "/v1")
            fill_s = time.perf_counter() - started
            pg_store = new_database(server_url)
            copy_s, _ = timed([sys.executable, "-m", "labeller", "cache", "copy", str(cached / "dir-store"), pg_store],
                              env)
            print(f"\ncached rerun: {filled} stored verdicts (filled in {fill_s:.1f} s; "
                  f"`labeller cache copy` directory -> PostgreSQL {copy_s:.1f} s, {filled / copy_s:,.0f} verdicts/s)")
            times: dict[str, list[float]] = {"directory": [], "postgresql": []}
            for _ in range(args.repeat):
                for backend, store in (("directory", str(cached / "dir-store")), ("postgresql", pg_store)):
                    before = requests_so_far(url)
                    times[backend].append(timed(label_command(cached, store, cached / "labels.jsonl", 32), env)[0])
                    assert requests_so_far(url) == before, f"a cached rerun from {backend} sent requests"
            print("| store | whole `labeller label` process | pairs/s |")
            print("| --- | --- | --- |")
            for backend, values in times.items():
                med = statistics.median(values)
                print(f"| {backend} | {med:.2f} s (runs: {', '.join(f'{v:.2f}' for v in values)}) | "
                      f"{filled / med:,.0f} |")
            print(f"ratio PostgreSQL / directory (time) = "
                  f"{statistics.median(times['postgresql']) / statistics.median(times['directory']):.2f}")
    finally:
        fake.terminate()
        fake.wait(10)
        if own_server is not None:
            pgserver.stop(own_server)


if __name__ == "__main__":
    main()
