"""OTLP JSON traces (what an OpenTelemetry Collector's file exporter writes, or an OTLP/HTTP JSON request body):
one ExportTraceServiceRequest object per file, or one per line.

A retriever span follows the OpenInference conventions (`openinference.span.kind` = RETRIEVER, the query in
`input.value`, documents flattened as `retrieval.documents.N.document.id` / `.document.score`) or the GenAI
ones (`gen_ai.operation.name` = retrieval, the query in `gen_ai.retrieval.query.text`, documents in
`gen_ai.retrieval.documents` as a list of {id, score}, structured or as a JSON string). Trace and span ids are
hex (the OTLP/JSON rule) or base64 (protobuf's own JSON mapping); both are read, and shown as hex.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path
from typing import Any

from labeller.errors import BadInputError
from labeller.traces.base import TraceDocument, TraceRun, document, merge, no_retriever, span_label

_FLAT = re.compile(r"retrieval\.documents\.(\d+)\.document\.(id|score|content|metadata)$")
_HEX = re.compile(r"[0-9a-fA-F]+")


def _requests(path: Path) -> list[tuple[int | None, Any]]:
    if not path.is_file():
        raise BadInputError("file not found", path=str(path))
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return [(None, json.loads(text))]
    except json.JSONDecodeError:
        pass
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                out.append((n, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise BadInputError(f"not JSON ({exc.msg}); expected OTLP JSON: one object with resourceSpans, or "
                                    "one per line", path=str(path), line=n) from None
    return out


def value(raw: Any) -> Any:
    """An OTLP AnyValue as a plain value."""
    if not isinstance(raw, dict):
        return raw
    if "stringValue" in raw:
        return raw["stringValue"]
    if "intValue" in raw:
        return int(raw["intValue"])
    if "doubleValue" in raw:
        return float(raw["doubleValue"])
    if "boolValue" in raw:
        return bool(raw["boolValue"])
    if "arrayValue" in raw:
        return [value(v) for v in (raw["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in raw:
        return {kv.get("key"): value(kv.get("value")) for kv in (raw["kvlistValue"] or {}).get("values", [])}
    return None


def hex_id(raw: Any, size: int, what: str, path: Path, line: int | None) -> str:
    text = str(raw or "")
    if len(text) == 2 * size and _HEX.fullmatch(text):
        return text.lower()
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) != size:
        raise BadInputError(f"span {what} {text!r} is neither {2 * size} hex digits nor base64 of {size} bytes",
                            path=str(path), line=line, field=what)
    return decoded.hex()


def is_retriever(attrs: dict[str, Any]) -> bool:
    kind = str(attrs.get("openinference.span.kind", "")).upper()
    return kind == "RETRIEVER" or attrs.get("gen_ai.operation.name") == "retrieval"


def documents(attrs: dict[str, Any], where: str, path: str) -> list[TraceDocument]:
    """The span's documents, OpenInference's (flattened or structured) or GenAI's, in the span's order."""
    flat: dict[int, dict[str, Any]] = {}
    for key, val in attrs.items():
        m = _FLAT.match(key)
        if m:
            flat.setdefault(int(m.group(1)), {})[m.group(2)] = val
    if flat:
        return [document(flat[i].get("id"), flat[i].get("score"), where, i, path, "document.id") for i in sorted(flat)]
    if isinstance(attrs.get("retrieval.documents"), list):
        return [document((d or {}).get("document.id"), (d or {}).get("document.score"), where, i, path,
                         "document.id") for i, d in enumerate(attrs["retrieval.documents"])]
    genai = attrs.get("gen_ai.retrieval.documents")
    if isinstance(genai, str):
        try:
            genai = json.loads(genai)
        except json.JSONDecodeError:
            raise BadInputError(f"{where}: gen_ai.retrieval.documents is not JSON; expected a list of "
                                "{id, score}", path=path, field="gen_ai.retrieval.documents") from None
    if genai is None:
        return []
    if not isinstance(genai, list) or not all(isinstance(d, dict) for d in genai):
        raise BadInputError(f"{where}: gen_ai.retrieval.documents is not a list of {{id, score}} objects",
                            path=path, field="gen_ai.retrieval.documents")
    return [document(d.get("id"), d.get("score"), where, i, path, "id") for i, d in enumerate(genai)]


def _parsed(span: dict, path: Path, line: int | None) -> tuple[int, dict[str, Any]]:
    """(start time, attributes) of a span; a value that is not what its type says is an error naming it."""
    key = "startTimeUnixNano"
    try:
        start = int(span.get(key) or 0)
        attrs = {}
        for attribute in span.get("attributes") or []:
            key = str(attribute.get("key"))
            attrs[key] = value(attribute.get("value"))
    except (TypeError, ValueError, AttributeError) as exc:
        raise BadInputError(f"span '{span.get('name', '')}': {key} cannot be read ({exc}); expected an OTLP "
                            "AnyValue", path=str(path), line=line, field=key) from None
    return start, attrs


def _spans(path: Path):
    """(line, trace id, span id, name, start, attributes) of every span of the file."""
    found = False
    for line, request in _requests(path):
        if not isinstance(request, dict) or "resourceSpans" not in request:
            raise BadInputError("expected OTLP JSON: an object with resourceSpans (an OpenTelemetry traces export)",
                                path=str(path), line=line, field="resourceSpans")
        for resource in request.get("resourceSpans") or []:
            for scope in (resource or {}).get("scopeSpans") or []:
                for span in (scope or {}).get("spans") or []:
                    found = True
                    yield (line, hex_id(span.get("traceId"), 16, "traceId", path, line),
                           hex_id(span.get("spanId"), 8, "spanId", path, line), str(span.get("name", "")),
                           *_parsed(span, path, line))
    if not found:
        raise BadInputError("no spans; expected an OpenTelemetry traces export with retriever spans", path=str(path))


def read_otlp(path: str | Path, name: str | None = None) -> TraceRun:
    path = Path(path)
    names: dict[str, list[str]] = {}
    retrievers: dict[str, list[tuple[int, str, str | None, list[TraceDocument]]]] = {}
    for _, trace_id, span_id, span_name, start, attrs in _spans(path):
        names.setdefault(trace_id, []).append(span_name)
        if is_retriever(attrs):
            where = span_label(span_name, span_id, trace_id)
            query = attrs.get("input.value") or attrs.get("gen_ai.retrieval.query.text")
            retrievers.setdefault(trace_id, []).append(
                (start, f"{span_name} ({span_id})", None if query is None else str(query),
                 documents(attrs, where, str(path))))
    for trace_id, spans in names.items():
        if trace_id not in retrievers:
            raise no_retriever(trace_id, spans, str(path))
    traces = [merge(t, [s[1:] for s in sorted(spans, key=lambda s: s[0])]) for t, spans in retrievers.items()]
    return TraceRun(name=name or path.stem, source=str(path), format="otlp", traces=traces)
