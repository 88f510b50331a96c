"""Peak memory of a cached rerun against the number of pairs, and its slope (run_all.py --only memory).

For each size: the benchmark's synthetic inputs (throughput.write_inputs: a query for every ten pairs, a
60-word document for every pair), every verdict written into a directory store (run_all.fill_stores), then
one `labeller label --judge offline:lexical` rerun, measured as a whole process (peak RSS from /usr/bin/time).
With `before` (a directory holding another labeller's source, e.g. `git archive <commit> | tar -x -C DIR`)
the same rerun is also run on that source, on the same inputs and store. Each size's files are removed
before the next is written (a million pairs take ~2 GB of disk with their store).

The slope is the least-squares line of peak MB against millions of pairs; "flat" would be a slope near 0.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

JUDGE = "offline:lexical"
REPO = Path(__file__).resolve().parent.parent


def bench_memory(tmp: Path, sizes: list[int], measure: Callable, fill_stores: Callable, write_inputs: Callable,
                 before: Path | None = None) -> list[dict]:
    rows = []
    for pairs in sizes:
        folder = tmp / f"memory-{pairs}"
        folder.mkdir()
        try:
            write_inputs(folder, pairs)
            started = time.perf_counter()
            fill_stores(folder, [str(folder / "store")])
            print(f"  memory: filled {pairs:,} verdicts in {time.perf_counter() - started:.0f} s", flush=True)
            # -P: the source on PYTHONPATH is the one run, not whatever the current directory holds
            cmd = [sys.executable, "-P", "-m", "labeller", "label", "--queries", str(folder / "queries.jsonl"),
                   "--corpus", str(folder / "corpus.jsonl"), "--pairs", str(folder / "pairs.jsonl"), "--judge", JUDGE,
                   "--cache", str(folder / "store"), "--out", str(folder / "labels.jsonl")]
            row = {"pairs": pairs}
            for side, source in (("labeller", None), ("before", before)):
                if side == "before" and source is None:
                    continue
                env = {**os.environ, "PYTHONPATH": str(source or REPO)}
                seconds, peak = measure(cmd, env)
                written = sum(1 for _ in open(folder / "labels.jsonl", "rb"))
                assert written == pairs, f"the cached rerun wrote {written} rows, expected {pairs}"
                row[f"{side}_s"], row[f"{side}_mb"] = seconds, peak
                print(f"  memory: {pairs:,} pairs, {side}: {seconds:.1f} s, peak {peak:.0f} MB", flush=True)
            rows.append(row)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return rows


def slope(rows: list[dict], side: str) -> float | None:
    """MB per million pairs: the least-squares slope of peak memory against pairs."""
    points = [(r["pairs"] / 1e6, r[f"{side}_mb"]) for r in rows if f"{side}_mb" in r]
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else None


def memory_table(rows: list[dict], command: str, machine: str) -> str:
    before = any("before_mb" in r for r in rows)
    out = [f"`{command}` — {machine}; load average at the end {os.getloadavg()[0]:.1f}", "",
           "| cached rerun, directory store | time | peak memory |" + (" before: time | before: peak |" if before else ""),
           "| --- | --- | --- |" + (" --- | --- |" if before else "")]
    for r in rows:
        out.append(f"| {r['pairs']:,} pairs | {r['labeller_s']:.1f} s | {r['labeller_mb']:.0f} MB |"
                   + (f" {r['before_s']:.1f} s | {r['before_mb']:.0f} MB |" if "before_mb" in r else ""))
    for side, name in (("labeller", "this labeller"), ("before", "before")):
        value = slope(rows, side)
        if value is not None:
            out.append(f"\nSlope, {name}: {value:.0f} MB per million pairs.")
    return "\n".join(out) + "\n"
