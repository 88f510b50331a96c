"""Latency of a live retriever: p50, p95 and p99, always with the sample size and concurrency they came from.

Percentiles use linear interpolation between the closest ranks (Hyndman & Fan type 7, numpy's
default): for sorted samples x[0..n-1] the q-th percentile sits at position (n-1)*q/100.
A p95 from 20 calls is a different claim from a p95 from 20,000, so `n` travels with every figure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel, ConfigDict, Field

from labeller.errors import BadInputError
from labeller.retrieval.base import Hit, Retriever


class LatencyStats(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    n: int = Field(description="number of timed calls")
    concurrency: int = Field(description="calls in flight at once while timing")
    p50_ms: float
    p95_ms: float
    p99_ms: float | None = None
    mean_ms: float
    max_ms: float
    warmup: int = Field(default=0, description="untimed calls made first")


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of samples, by linear interpolation between closest ranks."""
    if not samples:
        raise BadInputError("no latency samples; expected at least one timed call")
    if not 0 <= q <= 100:
        raise BadInputError(f"percentile {q} is outside 0..100")
    ordered = sorted(samples)
    pos = (len(ordered) - 1) * q / 100
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def latency_stats(samples_s: Sequence[float], concurrency: int = 1, warmup: int = 0) -> LatencyStats:
    """Summarise per-call durations given in seconds."""
    ms = [s * 1000.0 for s in samples_s]
    return LatencyStats(n=len(ms), concurrency=concurrency, p50_ms=percentile(ms, 50), p95_ms=percentile(ms, 95),
                        p99_ms=percentile(ms, 99), mean_ms=sum(ms) / len(ms), max_ms=max(ms), warmup=warmup)


def timed_search(retriever: Retriever, queries: Sequence[tuple[str, str]], k: int,
                 concurrency: int = 1) -> tuple[dict[str, list[Hit]], LatencyStats]:
    """Run `retriever.search(text, k)` for each (query_id, text), timing every call."""
    if concurrency < 1:
        raise BadInputError(f"concurrency must be at least 1, got {concurrency}")

    def one(item: tuple[str, str]) -> tuple[str, list[Hit], float]:
        qid, text = item
        start = time.perf_counter()
        hits = retriever.search(text, k)
        return qid, list(hits), time.perf_counter() - start

    if concurrency == 1:
        timed = [one(item) for item in queries]
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            timed = list(pool.map(one, queries))
    results = {qid: hits for qid, hits, _ in timed}
    return results, latency_stats([d for _, _, d in timed], concurrency)
