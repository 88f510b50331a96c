"""Required-evidence coverage: did the top K hold everything needed to answer, not just something relevant?

coverage(q) = required evidence items retrieved in the top K / required evidence items of q.
An evidence file has one row per (query_id, evidence_id, doc_id); an item counts as retrieved when
any of its doc_ids is in the top K (so duplicates of the same evidence can stand in for each other).
Without an evidence_id column each document is its own item. Relevant-but-incomplete context scores
well on relevance metrics and badly here, which is why the two are reported apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from labeller.acceptance.outcomes import refuse_unknown
from labeller.errors import BadInputError
from labeller.io.inputs import check_known
from labeller.io.memory import as_source
from labeller.io.tables import read_rows, require

Evidence = dict[str, dict[str, set[str]]]  # query_id -> evidence_id -> doc ids that carry it


class QueryCoverage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    query_id: str
    required: int
    retrieved: int
    coverage: float
    missing: list[str]


class CoverageReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    k: int
    n_queries: int
    mean_coverage: float
    fully_covered: int  # queries with every required item in the top K
    queries: list[QueryCoverage]


def read_evidence(path: str | Path, queries: Mapping[str, object] | None = None) -> Evidence:
    """Rows need query_id and doc_id; evidence_id (optional) groups documents that carry the same item.
    Each query_id must be one of `queries` when they are given."""
    path = as_source(path)
    evidence: Evidence = {}
    for line, row in read_rows(path):
        refuse_unknown(row, ("query_id", "doc_id", "evidence_id"), path, line, "evidence")
        qid, did = require(row, "query_id", path, line), require(row, "doc_id", path, line)
        check_known(qid, did, queries, None, path, line)
        item = require(row, "evidence_id", path, line) if row.get("evidence_id") not in (None, "") else did
        evidence.setdefault(qid, {}).setdefault(item, set()).add(did)
    return evidence


def evidence_coverage(evidence: Mapping[str, Mapping[str, set[str]]], ranked: Mapping[str, Sequence[str]],
                      k: int) -> CoverageReport:
    """Coverage for every query with required evidence; a query missing from `ranked` retrieved nothing."""
    if k < 1:
        raise BadInputError(f"k must be at least 1, got {k}")
    rows = []
    for qid in sorted(evidence):
        items = evidence[qid]
        top = set(list(ranked.get(qid, ()))[:k])
        missing = sorted(item for item, docs in items.items() if not docs & top)
        got = len(items) - len(missing)
        rows.append(QueryCoverage(query_id=qid, required=len(items), retrieved=got,
                                  coverage=got / len(items), missing=missing))
    mean = sum(r.coverage for r in rows) / len(rows) if rows else 0.0
    return CoverageReport(k=k, n_queries=len(rows), mean_coverage=mean,
                          fully_covered=sum(r.retrieved == r.required for r in rows), queries=rows)
