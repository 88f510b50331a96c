"""`run_all.py --only ray`: `labeller label --ray` with 1, 2 and 4 workers against the fake provider at a fixed
latency (throughput, and its ratio against one worker), and the Ray path's overhead against a single process at
equal concurrency (one worker at --concurrency C against `labeller label --concurrency C`).

The cluster is real and local (tests/raycluster.py): a head with no CPU and four one-CPU worker nodes on loopback;
`--ray-workers W` runs W blocks at once. Each run is a whole `labeller label` process into a fresh store, Ray's
attach and start-up included (that is what a user waits for). On a 2-core machine four workers share two
cores with the fake server: the ratio says what this machine can show, not what a cluster of machines would.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from raycluster import RayCluster  # noqa: E402
from throughput import timed  # noqa: E402


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, dict]:
    elapsed, stdout = timed(cmd, env)
    return elapsed, json.loads(stdout.splitlines()[-1])


def bench_ray(tmp: Path, n_pairs: int, latency: float, concurrency: int, block_size: int, workers: list[int],
              repeat: int, start_fakeapi, write_inputs) -> list[dict]:
    folder = tmp / "inputs"
    folder.mkdir()
    write_inputs(folder, n_pairs)
    fake, url = start_fakeapi(latency)
    root = Path(tempfile.mkdtemp(prefix="lray-", dir="/tmp"))  # Ray's socket paths must stay under 108 bytes
    cluster = RayCluster(root, workers=max(workers))
    rows: list[dict] = []
    try:
        env = {**cluster.environment, "OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": url + "/v1"}
        runs = 0

        def label(*extra) -> tuple[float, dict]:
            nonlocal runs
            runs += 1
            return _run([sys.executable, "-m", "labeller", "label", "--judge", "openai:gpt-4.1-mini",
                         "--queries", str(folder / "queries.jsonl"), "--corpus", str(folder / "corpus.jsonl"),
                         "--pairs", str(folder / "pairs.jsonl"), "--cache", str(tmp / f"store{runs}"),
                         "--out", str(tmp / f"labels{runs}.jsonl"), "--concurrency", str(concurrency), "--json",
                         *map(str, extra)], env)

        for round_ in range(repeat):
            seconds, stats = label()
            rows.append(dict(setup="single process", workers=0, seconds=seconds, new=stats["new"], round=round_))
            for count in workers:
                seconds, stats = label("--ray", cluster.address, "--ray-workers", count, "--ray-block-size", block_size)
                rows.append(dict(setup="ray", workers=count, seconds=seconds, new=stats["new"], round=round_))
                print(f"  ray round {round_ + 1}: {count} worker(s) {seconds:.1f}s", file=sys.stderr)
    finally:
        cluster.stop()
        fake.kill()
        shutil.rmtree(root, ignore_errors=True)
    return rows


def ray_table(rows: list[dict], n_pairs: int, latency: float, concurrency: int, command: str, machine: str) -> str:
    def median(setup: str, workers: int) -> float:
        values = sorted(r["seconds"] for r in rows if r["setup"] == setup and r["workers"] == workers)
        return values[len(values) // 2]

    single = median("single process", 0)
    one = median("ray", 1)
    lines = [f"`{command}` on {machine}", "",
             f"{n_pairs:,} pairs, fake provider at {latency * 1000:.0f} ms, --concurrency {concurrency} per process "
             "or worker; whole processes into a fresh store (median seconds)", "",
             "| run | seconds | pairs/s | against 1 worker | against a single process |", "|---|---|---|---|---|",
             f"| single process | {single:.1f} | {n_pairs / single:.0f} | | 1.00 |"]
    for workers in sorted({r["workers"] for r in rows if r["setup"] == "ray"}):
        seconds = median("ray", workers)
        lines.append(f"| ray, {workers} worker{'s' if workers > 1 else ''} | {seconds:.1f} | {n_pairs / seconds:.0f} "
                     f"| {one / seconds:.2f}x | {single / seconds:.2f}x |")
    lines += ["", f"Overhead of the Ray path at equal concurrency (1 worker vs a single process): "
                  f"{one / single:.2f}x the time, {one - single:+.1f} s."]
    return "\n".join(lines)
