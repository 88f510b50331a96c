"""Ask a system every case of a suite under the suite's workload: warm-up calls first (untimed), then
every case once and, when the workload asks for more calls, the cases again in turn, `concurrency`
calls in flight. Each case keeps its first timed response; every timed call gives a latency sample."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from labeller.acceptance.latency import LatencyStats, latency_stats
from labeller.acceptance.suite import Case, Suite
from labeller.systems.base import SearchRequest, SearchResponse, SystemUnderTest


@dataclass(frozen=True)
class CaseCall:
    case: Case
    response: SearchResponse
    seconds: float


def request_of(case: Case, k: int) -> SearchRequest:
    return SearchRequest(query_id=case.id, query=case.query, identity=case.identity, k=k)


def _timed(system: SystemUnderTest, request: SearchRequest) -> tuple[SearchResponse, float]:
    start = time.perf_counter()
    response = system.search(request)
    return response, time.perf_counter() - start


def ask_all(system: SystemUnderTest, suite: Suite) -> tuple[list[CaseCall], LatencyStats | None]:
    """Every case's response, and latency (None for a system that cannot be timed: a stored run)."""
    k, workload, cases = suite.suite.k, suite.conditions.workload, list(suite.cases)
    if not system.live:
        return [CaseCall(c, system.search(request_of(c, k)), 0.0) for c in cases], None
    for i in range(workload.warmup):
        system.search(request_of(cases[i % len(cases)], k))
    calls = max(workload.calls or len(cases), len(cases))
    order = [cases[i % len(cases)] for i in range(calls)]
    with ThreadPoolExecutor(max_workers=workload.concurrency) as pool:
        timed = list(pool.map(lambda c: _timed(system, request_of(c, k)), order))
    first = [CaseCall(c, response, seconds) for c, (response, seconds) in zip(cases, timed)]
    return first, latency_stats([s for _, s in timed], workload.concurrency, workload.warmup)
