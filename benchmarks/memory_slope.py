"""Peak memory against the number of pairs, and its slope (run_all.py --only memory).

For each size: the benchmark's synthetic inputs (throughput.write_inputs: a query for every ten pairs, a
60-word document for every pair), every verdict written into a directory store (run_all.fill_stores), then
one `labeller label --judge offline:lexical` rerun, measured as a whole process (peak RSS from /usr/bin/time).
With `before` (a directory holding another labeller's source, e.g. `git archive <commit> | tar -x -C DIR`)
the same rerun is also run on that source, on the same inputs and store: the reference run, and the ratio
is labeller's peak over its peak. Each size's files are removed before the next is written (a million pairs
take ~1.4 GB of disk with their store) unless `keep` names a directory to keep them in and reuse them from
(ten million verdicts take ~14 GB; filling five million took 57 min in one process on the loaded shared machine:
--memory-fill-workers N builds them in N processes). Inputs written whole are kept and reused when a run was
interrupted while it filled the store, and the fill resumes: the verdicts stored already are left alone.

First labelling (`first`, memory_first.py): every pair sent to the lean fake OpenAI server (tests/leanapi.py) at
--concurrency 64, or judged in-process (--memory-judge offline:lexical), into a fresh directory store, each side on
the same inputs, with the peak so far traced against pairs done; every label row written is counted. PostgreSQL (`postgres`): the
cached rerun against a database filled with the same verdicts.

The slope is the least-squares line of peak MB against millions of pairs; "flat" is a slope near 0.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from memory_first import first_rows
from peak_trace import WARM_PAIRS, least_squares

JUDGE = "offline:lexical"
REPO = Path(__file__).resolve().parent.parent


def _label_cmd(folder: Path, judge: str, store: str, out: Path) -> list[str]:
    # -P: the source on PYTHONPATH is the one run, not whatever the current directory holds
    return [sys.executable, "-P", "-m", "labeller", "label", "--queries", str(folder / "queries.jsonl"),
            "--corpus", str(folder / "corpus.jsonl"), "--pairs", str(folder / "pairs.jsonl"), "--judge", judge,
            "--cache", store, "--out", str(out)]


def _prepared(root: Path, pairs: int, write_inputs: Callable, fill: Callable | None, name: str = "memory") -> Path:
    """The inputs (and, given `fill`, the filled store) of this size: reused when a run before finished them."""
    folder = root / f"{name}-{pairs}"
    written, filled = folder / "written", folder / "filled"
    if filled.exists() or (fill is None and written.exists()):
        return folder
    if not written.exists():  # inputs written whole are kept for a run interrupted while it filled the store
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        write_inputs(folder, pairs)
        written.write_text(str(pairs))
    if fill is not None:
        started = time.perf_counter()
        fill(folder)
        print(f"  memory: filled {pairs:,} verdicts in {time.perf_counter() - started:.0f} s", flush=True)
        filled.write_text(str(pairs))
    return folder


def _sides(before: Path | None) -> list[tuple[str, Path]]:
    return [("labeller", REPO)] + ([("before", before)] if before is not None else [])


def _measured(row: dict, kind: str, pairs: int, before: Path | None, run: Callable[[dict], tuple[float, float]],
              out: Path) -> dict:
    for side, source in _sides(before):
        seconds, peak = run({**os.environ, "PYTHONPATH": str(source)})
        written = _rows_in(out)
        assert written == pairs, f"{kind} wrote {written} rows, expected {pairs}"
        row[f"{side}_s"], row[f"{side}_mb"] = seconds, peak
        print(f"  memory: {kind}, {pairs:,} pairs, {side}: {seconds:.1f} s, peak {peak:.0f} MB", flush=True)
    return row


def _rows_in(out: Path) -> int:
    if out.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(out).metadata.num_rows
    return sum(1 for _ in open(out, "rb")) - (out.suffix == ".csv")  # a CSV's header line


def bench_memory(tmp: Path, sizes: list[int], measure: Callable, fill_stores: Callable, write_inputs: Callable,
                 before: Path | None = None, keep: Path | None = None, first: list[int] = (),
                 fake_server: Callable | None = None, postgres: tuple[list[int], Callable] | None = None,
                 formats: tuple[str, ...] = (".jsonl",), fill_workers: int = 1, first_judge: str | None = None,
                 first_inputs: Path | None = None) -> list[dict]:
    """Rows of {kind, pairs, <side>_s, <side>_mb}: cached reruns (directory store) at `sizes`, one a `formats`
    output (.jsonl, .csv, .parquet), first labelling at `first`, cached reruns on PostgreSQL at postgres[0]
    (postgres[1]: a fresh database's URL). A directory store is filled by `fill_workers` processes
    (store_fill.fill_stores). First labelling (memory_first): against the fake provider, or `first_judge` in-process;
    on inputs written for it, or those already in `first_inputs`."""
    root = keep or tmp
    rows = []
    for pairs in sizes:
        folder = _prepared(root, pairs, write_inputs, lambda f: fill_stores(f, [str(f / "store")], fill_workers))
        try:
            for suffix in formats:
                out = folder / f"labels{suffix}"
                cmd = _label_cmd(folder, JUDGE, str(folder / "store"), out)
                kind = "cached rerun, directory store" + ("" if suffix == ".jsonl" else f", {suffix} out")
                rows.append(_measured({"kind": kind, "pairs": pairs}, kind, pairs, before,
                                      lambda env, cmd=cmd: measure(cmd, env), out))
        finally:
            if keep is None:
                shutil.rmtree(folder, ignore_errors=True)
    for pairs in (postgres[0] if postgres else []):
        folder = _prepared(root, pairs, write_inputs, None, "postgres")
        url = postgres[1]()
        fill_stores(folder, [url])
        out = folder / "labels.jsonl"
        cmd = _label_cmd(folder, JUDGE, url, out)
        rows.append(_measured({"kind": "cached rerun, PostgreSQL", "pairs": pairs}, "cached rerun, PostgreSQL",
                              pairs, before, lambda env: measure(cmd, env), out))
    if first:
        rows += first_rows(root, list(first), before, first_judge, first_inputs, measure, fake_server,
                           lambda root, pairs, fill, name: _prepared(root, pairs, write_inputs, fill, name),
                           _measured, _label_cmd, _sides)
    return rows


def slope(rows: list[dict], side: str) -> float | None:
    """MB per million pairs: the least-squares slope of peak memory against pairs."""
    return least_squares([(r["pairs"] / 1e6, r[f"{side}_mb"]) for r in rows if f"{side}_mb" in r])


def memory_table(rows: list[dict], command: str, machine: str) -> str:
    before = any("before_mb" in r for r in rows)
    out = [f"`{command}` — {machine}; load average at the end {os.getloadavg()[0]:.1f}", "",
           "| run | pairs | time | peak memory |" + (" before: time | before: peak | memory ratio |" if before else ""),
           "| --- | --- | --- | --- |" + (" --- | --- | --- |" if before else "")]
    for r in rows:
        out.append(f"| {r['kind']} | {r['pairs']:,} | {r['labeller_s']:.1f} s | {r['labeller_mb']:.0f} MB |"
                   + (f" {r['before_s']:.1f} s | {r['before_mb']:.0f} MB | {r['labeller_mb'] / r['before_mb']:.2f} |"
                      if "before_mb" in r else ""))
    for kind in dict.fromkeys(r["kind"] for r in rows):
        of_kind = [r for r in rows if r["kind"] == kind]
        for side, name in (("labeller", "this labeller"), ("before", "before")):
            value = slope(of_kind, side)
            if value is not None:
                out.append(f"\nSlope, {kind}, {name}: {value:.1f} MB per million pairs.")
    for r in rows:  # first labelling: the peak so far against pairs done within one run (peak_trace)
        for side, name in (("labeller", "this labeller"), ("before", "before")):
            if r.get(f"{side}_trace_slope") is not None:
                warm = [point for point in r[f"{side}_trace"] if point[0] >= WARM_PAIRS]
                out.append(f"\nWithin the {r['pairs']:,}-pair first labelling, {name}: peak so far {warm[0][1]:.0f} MB "
                           f"at {warm[0][0]:,} pairs done, {warm[-1][1]:.0f} MB at {warm[-1][0]:,}: "
                           f"{r[f'{side}_trace_slope']:.1f} MB per million pairs.")
    return "\n".join(out) + "\n"
