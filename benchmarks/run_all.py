"""One entry point for issue 14's measurements: labeller against the tool a user would pick instead,
whole processes, measured alternately in the same run (median of --repeat), with each process's
peak RSS (os.wait4's rusage of that very child).

  evaluate (warm)   `labeller evaluate` (ndcg@10, recall@100, mrr) vs pytrec_eval parsing the same
                    files and evaluating (benchmarks/pytrec_eval_reference.py)
  evaluate (cold)   the same with a fresh empty NUMBA_CACHE_DIR for every labeller run
  cached rerun      `labeller label --judge offline:lexical` with every verdict already stored (written
                    straight into the store: fill_stores), on the directory store and on PostgreSQL, vs
                    a bare script reading the three inputs and writing a row per pair
  memory            peak memory of the cached rerun against pairs (--memory-pairs, default 1M, 5M, 10M), of
                    first labelling against the lean fake server, tests/leanapi.py (--memory-first; or in-process:
                    --memory-judge offline:lexical) and of the cached rerun on
                    PostgreSQL (--memory-postgres), and their slopes, beside another labeller's source
                    (--memory-before DIR, the reference run): benchmarks/memory_slope.py
  label @64/@128    `labeller label` vs the bare asyncio SDK loop (benchmarks/bare_loop.py), fake
                    OpenAI server (tests/fakeapi.py) at each --latencies value, into a fresh directory
                    store and a fresh PostgreSQL database; the bare loop on the SDK's default httpx
                    transport, or with --bare-transport aiohttp on the aiohttp one labeller uses
  ray               `labeller label --ray` with 1, 2 and 4 workers of a local Ray cluster against the fake
                    provider (scaling against one worker), and its overhead against a single process at equal
                    concurrency: benchmarks/ray_scaling.py (--ray-pairs, --ray-latency, --ray-concurrency)

PostgreSQL: $LABELLER_BENCH_POSTGRES, else a throwaway server from the machine's package (tests/pgserver.py,
fsync on); the PostgreSQL rows are skipped when neither exists, or with --no-postgres.

    python benchmarks/run_all.py --quick                  # small sizes, a few minutes
    python benchmarks/run_all.py                          # 10,000 x 1,000 evaluation, 200k cached pairs
    python benchmarks/run_all.py --cached-pairs 1000000 --write-readme
    python benchmarks/run_all.py --only memory --memory-pairs 250000,500000,1000000
    python benchmarks/run_all.py --only memory --memory-pairs 300000,1000000 --memory-formats .jsonl,.csv,.parquet
    python benchmarks/run_all.py --only ray --repeat 1
    python benchmarks/run_all.py --only memory --memory-pairs 1000000,5000000,10000000 --memory-keep DIR \
        --memory-before DIR --memory-first 100000,300000 --memory-postgres 1000000
    python benchmarks/run_all.py --only memory --memory-pairs "" --memory-first 10000000 --memory-judge offline:lexical \
        --memory-inputs DIR/memory-10000000 --memory-keep DIR/first10m-out

Synthetic data go to a temp dir and are removed afterwards. Ratios: time is labeller / reference
(lower is better); labelling is labeller's throughput / the bare loop's (higher is better).
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from memory_slope import bench_memory, memory_table  # noqa: E402
from store_fill import JUDGE_CACHED, fill_stores  # noqa: E402
from synthetic_eval import write_eval_data  # noqa: E402
from throughput import requests_so_far, start_fakeapi, write_inputs, write_prompts  # noqa: E402

sys.path.insert(0, str(REPO / "tests"))
from leanapi import start as start_leanapi  # noqa: E402

MARK_BEGIN, MARK_END = "<!-- run_all:begin -->", "<!-- run_all:end -->"


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one whole process. The peak comes from /usr/bin/time, a
    small process of its own: Linux carries a parent's RSS high-water mark across fork and exec, so
    this (large) script's own getrusage would put a floor under every child's figure."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        started = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *cmd], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(map(str, cmd[:4]))} ... failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return elapsed, int(rss.read().split()[-1]) / 1024  # KiB


def alternate(name: str, ours, theirs, repeat: int) -> dict:
    """Run ours and theirs alternately `repeat` times; ours/theirs are callables giving (s, MB)."""
    times = {"labeller": [], "reference": []}
    peaks = {"labeller": [], "reference": []}
    for round_ in range(repeat):
        for side, run in (("labeller", ours), ("reference", theirs)) if round_ % 2 == 0 else \
                (("reference", theirs), ("labeller", ours)):
            seconds, peak = run()
            times[side].append(seconds)
            peaks[side].append(peak)
        print(f"  {name} round {round_ + 1}: labeller {times['labeller'][-1]:.2f}s "
              f"reference {times['reference'][-1]:.2f}s", flush=True)
    return {"work": name, **{f"{side}_s": statistics.median(v) for side, v in times.items()},
            **{f"{side}_mb": max(v) for side, v in peaks.items()}}


def bench_evaluate(tmp: Path, queries: int, depth: int, repeat: int) -> list[dict]:
    run, qrels = write_eval_data(tmp, queries, depth)
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = str(tmp / "numba-warm")
    ours = [sys.executable, "-m", "labeller", "evaluate", "--run", str(run), "--labels", str(qrels),
            "--metrics", "ndcg@10,recall@100,mrr"]
    theirs = [sys.executable, str(HERE / "pytrec_eval_reference.py"), str(run), str(qrels)]
    measure(ours, env)  # warm-up: the page cache, .pyc files and (if ever used) numba's cache
    measure(theirs, env)
    label = f"evaluate {queries:,} x {depth:,}"
    rows = [alternate(f"{label} (warm)", lambda: measure(ours, env), lambda: measure(theirs, env), repeat)]

    def cold():
        fresh = dict(env, NUMBA_CACHE_DIR=str(tmp / f"numba-cold-{time.monotonic_ns()}"))
        return measure(ours, fresh)

    rows.append(alternate(f"{label} (cold)", cold, lambda: measure(theirs, env), repeat))
    return rows


def bench_cached(tmp: Path, pairs: int, repeat: int, postgres: str | None) -> list[dict]:
    """The cached rerun on the directory store and (given a server URL) on PostgreSQL, each against the
    bare read-and-write script, alternately."""
    folder = tmp / "cached"
    folder.mkdir()
    write_inputs(folder, pairs)
    inputs = [str(folder / f"{n}.jsonl") for n in ("queries", "corpus", "pairs")]
    stores = {"directory": str(folder / "store")}
    if postgres:
        stores["PostgreSQL"] = new_database(postgres)
    started = time.perf_counter()
    fill_stores(folder, list(stores.values()))
    print(f"  filled {len(stores)} store(s) with {pairs:,} verdicts in {time.perf_counter() - started:.0f} s", flush=True)
    env = dict(os.environ)
    bare = [sys.executable, str(HERE / "bare_read_write.py"), *inputs, str(folder / "bare.jsonl")]
    rows = []
    for backend, spec in stores.items():
        label = [sys.executable, "-m", "labeller", "label", "--queries", inputs[0], "--corpus", inputs[1],
                 "--pairs", inputs[2], "--judge", JUDGE_CACHED, "--cache", spec, "--out", str(folder / "labels.jsonl")]

        def ours(label=label):
            result = measure(label, env)
            rows_written = sum(1 for _ in open(folder / "labels.jsonl", encoding="utf-8"))
            assert rows_written == pairs, f"cached rerun wrote {rows_written} rows, expected {pairs}"
            return result

        ours()  # warm-up: the page cache and .pyc files
        rows.append(alternate(f"cached rerun, {pairs:,} pairs, {backend} store", ours, lambda: measure(bare, env),
                              repeat))
    return rows


def new_database(server_url: str) -> str:
    """A fresh database on the server (one per benchmark run), as a URL."""
    import psycopg

    name = f"labeller_bench_{time.monotonic_ns()}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + "/" + name


def bench_labelling(tmp: Path, pairs: int, concurrencies: list[int], latencies: list[float], repeat: int,
                    postgres: str | None = None, bare_transport: str = "httpx") -> list[dict]:
    """Fresh labelling (every pair sent) into a fresh store each run: a directory, and a new PostgreSQL
    database when a server URL is given. The bare loop uses the SDK's default transport (httpx), or the
    aiohttp one labeller's judges use with bare_transport="aiohttp"."""
    folder = tmp / "label"
    folder.mkdir()
    write_inputs(folder, pairs)
    write_prompts(folder, "general")
    rows = []
    for latency in latencies:
        server, url = start_fakeapi(latency)
        env = {**os.environ, "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-bench-unused"}
        try:
            for concurrency, backend in [(c, b) for c in concurrencies for b in ("directory", "PostgreSQL")
                                         if b == "directory" or postgres]:
                count = iter(range(10**6))

                def ours(concurrency=concurrency, backend=backend):
                    n = next(count)
                    store = new_database(postgres) if backend == "PostgreSQL" else str(folder / f"cache-{concurrency}-{n}")
                    cmd = [sys.executable, "-m", "labeller", "label", "--queries", str(folder / "queries.jsonl"),
                           "--corpus", str(folder / "corpus.jsonl"), "--pairs", str(folder / "pairs.jsonl"),
                           "--judge", "openai:gpt-4.1-mini", "--cache", store,
                           "--out", str(folder / "labels.jsonl"), "--concurrency", str(concurrency)]
                    before = requests_so_far(url)
                    result = measure(cmd, env)
                    assert requests_so_far(url) - before == pairs, "labeller did not send every pair once"
                    return result

                bare = [sys.executable, str(HERE / "bare_loop.py"), str(folder / "prompts.jsonl"),
                        "--concurrency", str(concurrency), "--transport", bare_transport]
                against = "" if bare_transport == "httpx" else f", bare loop on {bare_transport}"
                row = alternate(f"label {pairs:,} pairs @{concurrency}, {latency * 1000:.0f} ms, {backend} store{against}",
                                ours, lambda bare=bare: measure(bare, env), repeat)
                row["throughput"] = True
                rows.append(row)
        finally:
            server.terminate()
            server.wait(10)
    return rows


def with_postgres(args, bench, need: bool = True):
    """bench(server URL or None): $LABELLER_BENCH_POSTGRES, else a throwaway server (tests/pgserver.py, fsync
    on) when the machine has PostgreSQL, else None (--no-postgres, or nothing `need`s one: None)."""
    if args.no_postgres or not need:
        return bench(None)
    if os.environ.get("LABELLER_BENCH_POSTGRES"):
        return bench(os.environ["LABELLER_BENCH_POSTGRES"])
    sys.path.insert(0, str(REPO / "tests"))
    import pgserver

    if pgserver.find_bin() is None:
        print("  PostgreSQL is not installed: the PostgreSQL rows are skipped", flush=True)
        return bench(None)
    root = Path(tempfile.gettempdir()) / f"labeller-bench-pg-{time.monotonic_ns()}"
    url = pgserver.start(root, durable=True)
    try:
        return bench(url)
    finally:
        pgserver.stop(root)


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor()) if Path("/proc/cpuinfo").exists() else platform.processor()
    versions = ", ".join(f"{p} {metadata.version(p)}" for p in
                         ("numpy", "pyarrow", "pytrec-eval-terrier", "ranx", "openai") if _installed(p))
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return (f"{os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}, Python "
            f"{platform.python_version()}; {versions}; labeller at {commit or 'unknown'}")


def _installed(name: str) -> bool:
    try:
        metadata.version(name)
        return True
    except metadata.PackageNotFoundError:
        return False


def table(rows: list[dict], command: str) -> str:
    out = [f"`{command}` — {machine()}; load average at the end {os.getloadavg()[0]:.1f}", "",
           "| work | labeller | reference | ratio | labeller peak | reference peak | memory ratio |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r.get("throughput"):
            ratio = f"{r['reference_s'] / r['labeller_s']:.2f} of the bare loop's throughput"
        else:
            ratio = f"{r['labeller_s'] / r['reference_s']:.2f}x the time"
        out.append(f"| {r['work']} | {r['labeller_s']:.2f} s | {r['reference_s']:.2f} s | {ratio} | "
                   f"{r['labeller_mb']:.0f} MB | {r['reference_mb']:.0f} MB | "
                   f"{r['labeller_mb'] / r['reference_mb']:.2f} |")
    return "\n".join(out) + "\n"


def write_readme(text: str) -> None:
    readme = HERE / "README.md"
    current = readme.read_text(encoding="utf-8")
    block = f"{MARK_BEGIN}\n{text}{MARK_END}"
    if MARK_BEGIN in current:
        head, rest = current.split(MARK_BEGIN, 1)
        current = head + block + rest.split(MARK_END, 1)[1]
    else:
        current += f"\n## All of issue 14's ratios in one run (`run_all.py`)\n\n{block}\n"
    readme.write_text(current, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes: 500 x 1,000, 20k pairs, 300 labelled")
    parser.add_argument("--eval-queries", type=int, default=10_000)
    parser.add_argument("--eval-depth", type=int, default=1_000)
    parser.add_argument("--cached-pairs", type=int, default=200_000)
    parser.add_argument("--label-pairs", type=int, default=5_000,
                        help="pairs per fresh labelling run: enough that start-up (about 1 s for either side) is a small part")
    parser.add_argument("--concurrency", default="64,128")
    parser.add_argument("--latencies", default="0.2,0.1", help="fake server latency in seconds, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bare-transport", choices=("httpx", "aiohttp"), default="httpx",
                        help="the bare loop's HTTP transport: the SDK's default, or the aiohttp one labeller uses")
    parser.add_argument("--only", default="evaluate,cached,label", help="which parts to run")
    parser.add_argument("--memory-pairs", default="1000000,5000000,10000000",
                        help="--only memory: cached reruns of these many pairs, comma-separated")
    parser.add_argument("--memory-before", type=Path, help="--only memory: also run this labeller source tree")
    parser.add_argument("--ray-pairs", type=int, default=3000, help="--only ray: pairs per run")
    parser.add_argument("--ray-latency", type=float, default=0.2, help="--only ray: fake server latency, seconds")
    parser.add_argument("--ray-concurrency", type=int, default=16, help="--only ray: requests in flight per worker")
    parser.add_argument("--memory-keep", type=Path,
                        help="--only memory: keep each size's inputs and filled store here, and reuse them")
    parser.add_argument("--memory-fill-workers", type=int, default=1,
                        help="--only memory: processes filling a size's directory store (store_fill.fill_stores)")
    parser.add_argument("--memory-first", default="",
                        help="--only memory: first labelling runs (fake provider) of these many pairs, comma-separated")
    parser.add_argument("--memory-judge",
                        help="--only memory: the first labelling runs' judge, in-process (e.g. offline:lexical: no "
                             "server, ~5x the pairs a second of the fake provider over HTTP); default the fake provider")
    parser.add_argument("--memory-inputs", type=Path,
                        help="--only memory: the first labelling runs read their inputs from this folder (a kept size, "
                             "e.g. DIR/memory-10000000), never written; store and output go to --memory-keep's DIR")
    parser.add_argument("--memory-postgres", default="",
                        help="--only memory: cached reruns on PostgreSQL of these many pairs, comma-separated")
    parser.add_argument("--memory-formats", default=".jsonl",
                        help="--only memory: the cached reruns' outputs, comma-separated (.jsonl, .csv, .parquet)")
    parser.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL rows")
    parser.add_argument("--write-readme", action="store_true", help="put the table into benchmarks/README.md")
    args = parser.parse_args()
    if args.quick:
        args.eval_queries, args.cached_pairs, args.label_pairs = 500, 20_000, 300
    parts = set(args.only.split(","))
    rows: list[dict] = []
    command = "python benchmarks/run_all.py " + " ".join(a for a in sys.argv[1:] if a != "--write-readme")
    if "memory" in parts:  # a table of its own: one run a size, the reference is --memory-before's source

        def sizes(text: str) -> list[int]:
            return [int(n) for n in text.split(",") if n.strip()]

        def on_postgres(url: str | None) -> tuple[list[int], object] | None:
            return (sizes(args.memory_postgres), lambda: new_database(url)) if url else None

        with tempfile.TemporaryDirectory(prefix="labeller-bench-") as tmp:
            memory = with_postgres(args, lambda url: bench_memory(
                Path(tmp), sizes(args.memory_pairs), measure, fill_stores, write_inputs, args.memory_before,
                args.memory_keep, sizes(args.memory_first), start_leanapi, on_postgres(url),
                tuple(args.memory_formats.split(",")), args.memory_fill_workers, args.memory_judge,
                args.memory_inputs),
                need=bool(args.memory_postgres))
        print("\n" + memory_table(memory, command.strip(), machine()))
        print(json.dumps(memory))
        parts.discard("memory")
        if not parts:
            return
    if "ray" in parts:  # a table of its own: whole `labeller label --ray` processes on a local cluster
        from ray_scaling import bench_ray, ray_table

        with tempfile.TemporaryDirectory(prefix="labeller-bench-") as tmp:
            ray_rows = bench_ray(Path(tmp), args.ray_pairs, args.ray_latency, args.ray_concurrency,
                                 max(1, args.ray_pairs // 12), [1, 2, 4], args.repeat, start_fakeapi, write_inputs)
        print("\n" + ray_table(ray_rows, args.ray_pairs, args.ray_latency, args.ray_concurrency, command.strip(),
                               machine()))
        print(json.dumps(ray_rows))
        parts.discard("ray")
        if not parts:
            return
    with tempfile.TemporaryDirectory(prefix="labeller-bench-") as tmp:
        if "evaluate" in parts:
            rows += bench_evaluate(Path(tmp), args.eval_queries, args.eval_depth, args.repeat)
        if "cached" in parts:
            rows += with_postgres(args, lambda url: bench_cached(Path(tmp), args.cached_pairs, args.repeat, url))
        if "label" in parts:
            rows += with_postgres(args, lambda url: bench_labelling(
                Path(tmp), args.label_pairs, [int(c) for c in args.concurrency.split(",")],
                [float(x) for x in args.latencies.split(",")], args.repeat, url, args.bare_transport))
    text = table(rows, command.strip())
    print("\n" + text)
    print(json.dumps(rows))
    if args.write_readme:
        write_readme(text)


if __name__ == "__main__":
    main()
