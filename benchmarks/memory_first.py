"""First labelling against pairs (memory_slope.bench_memory's `first` runs): every pair new, into a fresh store.

The judge is either the lean fake OpenAI server (tests/leanapi.py, its own process, no latency, no request kept:
tests/fakeapi.py keeps every request, gigabytes over a million pairs), asked through the openai SDK at --concurrency
64, or an in-process judge with no server (`judge`, e.g. offline:lexical: deterministic, no network, the same engine:
plan, store lookup, judge, write). Over HTTP, two shared cores label ~600 pairs a second (the SDK's ~1.5-2 ms of CPU
a pair); offline:lexical ~3,000, so ten million pairs take an hour rather than five. The peak so far is traced
against pairs done while it runs (peak_trace): pairs answered by the server, or rows written by the in-process judge.

`inputs`: a folder holding the inputs already (e.g. a kept cached-rerun size: --memory-inputs), read and never
written; the store and the output then go under root/first-<pairs>, not beside them.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from peak_trace import LinesWritten, PeakTrace, answered

FAKE_JUDGE = "openai:gpt-4.1-mini"  # asked through the lean fake server
CONCURRENCY = 64


def first_rows(root: Path, first: list[int], before: Path | None, judge: str | None, inputs: Path | None,
               measure: Callable, fake_server: Callable | None, prepared: Callable, measured: Callable,
               label_cmd: Callable, sides: Callable) -> list[dict]:
    """One row a size of `first`: {kind, pairs, <side>_s, <side>_mb, <side>_trace, <side>_trace_slope}. `judge`
    None: the fake provider (fake_server() starts it). The last four: memory_slope's helpers of the same names."""
    server, url = fake_server() if judge is None else (None, None)
    rows = []
    try:
        for pairs in first:
            folder = _inputs(inputs, pairs) if inputs else prepared(root, pairs, None, "first")
            work = root / f"first-{pairs}" if inputs else folder
            work.mkdir(parents=True, exist_ok=True)
            out, count, traces = work / "labels.jsonl", iter(range(10**6)), []

            def run(env: dict, folder=folder, work=work, out=out, traces=traces) -> tuple[float, float]:
                store = work / f"store-{next(count)}"
                cmd = label_cmd(folder, judge or FAKE_JUDGE, str(store), out) + ["--concurrency", str(CONCURRENCY)]
                if judge is None:
                    env = {**env, "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-bench-unused"}
                done = answered(url) if judge is None else LinesWritten(out)
                try:  # the peak so far against pairs done, sampled while it runs (peak_trace)
                    with PeakTrace(str(store), done) as trace:
                        seconds_peak = measure(cmd, env)
                    traces.append(trace)
                    return seconds_peak
                finally:
                    getattr(done, "close", lambda: None)()
                    shutil.rmtree(store, ignore_errors=True)

            kind = "first labelling, " + ("fake provider" if judge is None else f"{judge} in-process")
            row = measured({"kind": kind, "pairs": pairs}, "first labelling", pairs, before, run, out)
            for (side, _), trace in zip(sides(before), traces):
                row[f"{side}_trace"], row[f"{side}_trace_slope"] = trace.points, trace.slope()
            rows.append(row)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:  # not expected of the lean server; never left running
                server.kill()
                server.wait()
    return rows


def _inputs(folder: Path, pairs: int) -> Path:
    """A kept folder's inputs, if they were written whole for this many pairs (memory_slope._prepared's mark)."""
    written = folder / "written"
    if not written.exists() or written.read_text().strip() != str(pairs):
        raise SystemExit(f"{folder}: expected inputs written whole for {pairs:,} pairs (its 'written' file)")
    return folder
