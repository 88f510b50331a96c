"""The frozen sample: the pairs people grade, in order, written once so they can be graded again later.

A sample file is JSONL, one `SampleRow` per pair. It is also a valid pairs file (`query_id`,
`doc_id`), so `labeller label --pairs` and the validate_prompt pipeline read it as they are. Its
`sample_id` is a hash of the plan and the ordered pairs: a gold file written for one sample cannot be
mixed up with another, and a sample file edited by hand no longer matches its own id.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from labeller.annotate.plans import CERTAIN_STRATUM, WHOLE_QUERY, draw, parse_plan
from labeller.annotate.sources import Candidate
from labeller.errors import BadInputError
from labeller.io.memory import as_source
from labeller.io.tables import read_rows
from labeller.io.validation import validation_error
from labeller.io.writing import write_rows
from labeller.records import Record


class SampleRow(Record):
    query_id: str
    doc_id: str
    position: int = Field(ge=1)  # the order people grade in
    sample_id: str
    plan: Literal["stratified", "uniform", "uncertain", "narrow", "top", "queries"]
    # how the pair was drawn (never shown while grading): "judge grade 3", "top 10" (with certainty, plan top:K), or
    # "whole query" (plan queries:N)
    stratum: str | None = None
    uncertainty: float | None = None
    rubric: str | None = None
    rubric_version: str | None = None
    created_at: str


class Sample(Record):
    path: str
    sample_id: str
    plan: str
    rows: list[SampleRow]
    left_out_examples: int = 0  # candidate pairs left out because they are worked examples of the rubric
    warnings: list[str] = []  # said before anyone grades (thin_gold_warning)

    @property
    def rubric_version(self) -> str | None:
        return self.rows[0].rubric_version

    def row(self, query_id: str, doc_id: str) -> SampleRow | None:
        return next((r for r in self.rows if (r.query_id, r.doc_id) == (query_id, doc_id)), None)


def sample_id_of(plan: str, pairs: list[tuple[str, str]]) -> str:
    text = plan + "\n" + "\n".join(f"{q}\t{d}" for q, d in pairs)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def freeze(candidates: list[Candidate], out: str | Path, *, size: int, plan: str = "stratified", seed: int = 0,
           rubric: str | None = None, rubric_version: str | None = None,
           top: set[tuple[str, str]] | None = None) -> Sample:
    """Draw a sample and write it to `out` (refusing to replace an existing file: it may hold a frozen sample);
    `top`: the pairs plan top:K draws with certainty."""
    out = Path(out)
    if out.suffix.lower() != ".jsonl":
        raise BadInputError("a sample is written as JSONL; expected a path ending in .jsonl", path=str(out))
    if out.exists():
        raise BadInputError("file exists; a frozen sample is never overwritten: choose another --out",
                            path=str(out))
    if not candidates:
        raise BadInputError("no candidate pairs to sample from")
    chosen = draw(candidates, size, plan, seed, top)
    plan, depth = parse_plan(plan)
    certain = top if plan == "top" and top else set()
    sid = sample_id_of(plan, [(c.query_id, c.doc_id) for c in chosen])
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rows = [SampleRow(query_id=c.query_id, doc_id=c.doc_id, position=i, sample_id=sid, plan=plan,
                      stratum=WHOLE_QUERY if plan == "queries" else f"{CERTAIN_STRATUM}{depth}"
                      if (c.query_id, c.doc_id) in certain
                      else None if c.judge_grade is None else f"judge grade {c.judge_grade}",
                      uncertainty=c.uncertainty, rubric=rubric or c.rubric,
                      rubric_version=rubric_version or c.rubric_version, created_at=now)
            for i, c in enumerate(chosen, start=1)]
    write_rows(out, (r.model_dump() for r in rows))
    return Sample(path=str(out), sample_id=sid, plan=plan, rows=rows)


def read_sample(path: str | Path) -> Sample:
    """Read and check a frozen sample: one sample id, positions 1..n, each pair once, id matching content."""
    path = as_source(path)
    lines = []
    for line, row in read_rows(path):
        try:
            lines.append((line, SampleRow.model_validate(row)))
        except ValidationError as exc:
            raise validation_error(exc, path=str(path), line=line,
                                   expected="a frozen sample row (written by `labeller annotate sample`)") from None
    first_line, first = lines[0]
    for line, row in lines:
        if row.sample_id != first.sample_id or row.plan != first.plan:
            raise BadInputError(f"row belongs to sample {row.sample_id} ({row.plan}), line {first_line} to "
                                f"{first.sample_id} ({first.plan}); expected one frozen sample per file",
                                path=str(path), line=line, field="sample_id")
    rows = sorted((r for _, r in lines), key=lambda r: r.position)
    seen: dict[tuple[str, str], int] = {}
    for expected, (line, row) in enumerate(sorted(lines, key=lambda x: x[1].position), start=1):
        if row.position != expected:
            raise BadInputError(f"position {row.position} breaks the sequence 1..{len(rows)}; expected "
                                f"{expected}", path=str(path), line=line, field="position")
        if (row.query_id, row.doc_id) in seen:
            raise BadInputError(f"pair ({row.query_id}, {row.doc_id}) appears twice (first on line "
                                f"{seen[row.query_id, row.doc_id]}); expected each pair once", path=str(path),
                                line=line, field="doc_id")
        seen[row.query_id, row.doc_id] = line
    if sample_id_of(first.plan, [(r.query_id, r.doc_id) for r in rows]) != first.sample_id:
        raise BadInputError(f"the pairs no longer match sample id {first.sample_id}: the file was edited after "
                            "it was frozen; freeze a new sample with `labeller annotate sample`", path=str(path))
    return Sample(path=str(path), sample_id=first.sample_id, plan=first.plan, rows=rows)


def thin_gold_warning(sample: Sample, pool_queries: int, pool_pairs: int) -> str | None:
    """Plan narrow draws gold for the corrected intervals of `evaluate --gold` under the pair design. With fewer
    random pairs a query than labeller.evaluation.corrected_recall.FEW_PER_QUERY, recall's and NDCG's intervals
    there fell short on a held-out set; evaluate warns after the grading, this before anyone is paid to grade."""
    from labeller.evaluation.corrected_recall import FEW_PER_QUERY

    per_query = len(sample.rows) / max(pool_queries, 1)
    if sample.plan != "narrow" or per_query >= FEW_PER_QUERY or len(sample.rows) >= pool_pairs:
        # another plan, enough pairs a query, or the whole pool (which decides every figure exactly): no warning
        return None
    return (f"{len(sample.rows)} pairs over the pool's {pool_queries} queries ({per_query:.1f} a query): "
            "`evaluate --gold` would correct recall and NDCG from few pairs a query, and on a held-out set (TREC "
            "DL19, 7 a query) their intervals covered 70-90% for runs that retrieve most relevant pairs; give --size "
            f"{min(FEW_PER_QUERY * pool_queries, pool_pairs)} or more, or grade whole queries (--plan queries:N)")
