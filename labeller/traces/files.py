"""A traces export as the files the rest of labeller reads: a run (query_id = trace id), the queries (each
trace's retriever input) and the pairs to label. Everything is read and checked before anything is written."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from labeller.io.writing import write_rows
from labeller.traces import read_traces


class TraceFiles(BaseModel):
    model_config = ConfigDict(extra="forbid")
    traces: int
    documents: int  # run entries written (the top `depth` of each trace)
    without_query: list[str]  # traces whose retriever span has no input text: not in the queries file
    written: list[str]


def write_trace_files(source: str | Path, *, run: Path, queries: Path | None = None, pairs: Path | None = None,
                      format: str = "auto", depth: int | None = None) -> TraceFiles:
    found = read_traces(source, format)
    entries = [e for e in found.entries() if depth is None or (e.rank or 0) <= depth]
    written = [str(write_rows(run, [e.model_dump() for e in entries]))]
    without = [t.trace_id for t in found.traces if not t.query]
    if queries is not None:
        written.append(str(write_rows(queries, [{"query_id": t.trace_id, "text": t.query} for t in found.traces
                                                if t.query])))
    if pairs is not None:
        written.append(str(write_rows(pairs, [{"query_id": e.query_id, "doc_id": e.doc_id} for e in entries])))
    return TraceFiles(traces=len(found.traces), documents=len(entries), without_query=without, written=written)
