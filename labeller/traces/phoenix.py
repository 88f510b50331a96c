"""Arize Phoenix span exports: `client.get_spans_dataframe()` saved as Parquet or JSON lines
(`df.reset_index().to_parquet("spans.parquet")`), or the DataFrame itself from Python.

Phoenix flattens OpenInference attributes into columns: `context.trace_id`, `context.span_id`, `name`,
`span_kind` (RETRIEVER for retriever spans), `start_time`, `attributes.input.value` (the query) and
`attributes.retrieval.documents` (a list of {document.id, document.score, document.content, ...}). Those are
the columns read; the export's other columns (LLM tokens, latencies, ...) describe other spans and are not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from labeller.errors import BadInputError
from labeller.io.tables import read_rows, require
from labeller.traces.base import TraceDocument, TraceRun, document, merge, no_retriever, span_label

DOCUMENTS = "attributes.retrieval.documents"


def _kind(row: dict[str, Any]) -> str:
    return str(row.get("span_kind") or row.get("attributes.openinference.span.kind") or "").upper()


def _documents(raw: Any, where: str, source: str, line: int) -> list[TraceDocument]:
    if raw is None:
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raw = None
    if not isinstance(raw, list) or not all(isinstance(d, dict) for d in raw):
        raise BadInputError(f"{where}: expected a list of {{document.id, document.score}} objects", path=source,
                            line=line, field=DOCUMENTS)
    return [document(d.get("document.id"), d.get("document.score"), where, i, source, "document.id")
            for i, d in enumerate(raw)]


def phoenix_rows(rows: Iterable[tuple[int, dict[str, Any]]], source: str, name: str) -> TraceRun:
    names: dict[str, list[str]] = {}
    retrievers: dict[str, list[tuple[str, str, str | None, list[TraceDocument]]]] = {}
    for line, row in rows:
        trace_id = require(row, "context.trace_id", source, line)
        span_id = require(row, "context.span_id", source, line)
        span_name = str(row.get("name") or "")
        names.setdefault(trace_id, []).append(span_name)
        if _kind(row) == "RETRIEVER":
            where = span_label(span_name, span_id, trace_id)
            query = row.get("attributes.input.value")
            retrievers.setdefault(trace_id, []).append(
                (str(row.get("start_time") or ""), f"{span_name} ({span_id})", None if query is None else str(query),
                 _documents(row.get(DOCUMENTS), where, source, line)))
    if not names:
        raise BadInputError("no spans; expected a Phoenix spans export (get_spans_dataframe)", path=source)
    for trace_id, spans in names.items():
        if trace_id not in retrievers:
            raise no_retriever(trace_id, spans, source)
    traces = [merge(t, [s[1:] for s in sorted(spans, key=lambda s: s[0])]) for t, spans in retrievers.items()]
    return TraceRun(name=name, source=source, format="phoenix", traces=traces)


def read_phoenix(path: str | Path, name: str | None = None) -> TraceRun:
    path = Path(path)
    return phoenix_rows(read_rows(path), str(path), name or path.stem)
