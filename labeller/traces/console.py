"""What the OpenTelemetry Python SDK's ConsoleSpanExporter writes: one `span.to_json()` object per span,
pretty-printed one after another (`ConsoleSpanExporter(out=open("spans.json", "w"))`), the quickest way to
get spans out of an application without a collector.

Each object has `name`, `context` {trace_id, span_id as 0x-prefixed hex}, `start_time` (ISO) and the span's
`attributes` as a plain object; retriever spans follow the conventions labeller.traces.otlp reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from labeller.errors import BadInputError
from labeller.traces.base import TraceDocument, TraceRun, merge, no_retriever, span_label
from labeller.traces.otlp import documents, is_retriever


def _objects(path: Path):
    """(line, object) for each JSON object in the file, however it is indented."""
    if not path.is_file():
        raise BadInputError("file not found", path=str(path))
    text = path.read_text(encoding="utf-8", errors="replace")
    decoder, at = json.JSONDecoder(), 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return
        line = text.count("\n", 0, at) + 1
        try:
            obj, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise BadInputError(f"not JSON ({exc.msg}); expected the spans ConsoleSpanExporter writes", path=str(path),
                                line=line) from None
        yield line, obj


def _hex(context: dict[str, Any], key: str, path: Path, line: int) -> str:
    raw = str(context.get(key) or "")
    if not raw.startswith("0x") or len(raw) < 3:
        raise BadInputError(f"context.{key} {raw!r} is not 0x-prefixed hex", path=str(path), line=line,
                            field=f"context.{key}")
    return raw[2:].lower()


def read_console(path: str | Path, name: str | None = None) -> TraceRun:
    path = Path(path)
    names: dict[str, list[str]] = {}
    retrievers: dict[str, list[tuple[str, str, str | None, list[TraceDocument]]]] = {}
    for line, span in _objects(path):
        if not isinstance(span, dict) or not isinstance(span.get("context"), dict):
            raise BadInputError("expected a span object with a context (what ConsoleSpanExporter writes)",
                                path=str(path), line=line, field="context")
        trace_id, span_id = _hex(span["context"], "trace_id", path, line), _hex(span["context"], "span_id", path, line)
        span_name, attrs = str(span.get("name", "")), span.get("attributes") or {}
        names.setdefault(trace_id, []).append(span_name)
        if isinstance(attrs, dict) and is_retriever(attrs):
            query = attrs.get("input.value") or attrs.get("gen_ai.retrieval.query.text")
            retrievers.setdefault(trace_id, []).append(
                (str(span.get("start_time") or ""), f"{span_name} ({span_id})", None if query is None else str(query),
                 documents(attrs, span_label(span_name, span_id, trace_id), str(path))))
    if not names:
        raise BadInputError("no spans; expected the spans ConsoleSpanExporter writes", path=str(path))
    for trace_id, spans in names.items():
        if trace_id not in retrievers:
            raise no_retriever(trace_id, spans, str(path))
    traces = [merge(t, [s[1:] for s in sorted(spans, key=lambda s: s[0])]) for t, spans in retrievers.items()]
    return TraceRun(name=name or path.stem, source=str(path), format="console", traces=traces)
