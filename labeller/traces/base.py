"""Retrieval traces as runs: what every trace reader returns.

A trace's query id is its trace id (which joins an outcomes table's `trace_id`), its query text the
retriever span's input, and its ranking the documents in the order the span lists them: the order the
agent saw. Scores are kept as given but not used for ranking, because a span's score may be a
distance (lower is better) as well as a similarity.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from labeller.errors import BadInputError
from labeller.records import RunEntry

RETRIEVER_RULE = "openinference.span.kind = RETRIEVER, or gen_ai.operation.name = retrieval"


class TraceDocument(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    doc_id: str
    score: float | None = None  # as the span gives it (a similarity or a distance)


class RetrievalTrace(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    trace_id: str
    spans: list[str]  # the retriever spans read, "name (span id)", in start order
    query: str | None  # the retriever's input: input.value (OpenInference) or gen_ai.retrieval.query.text
    documents: list[TraceDocument]  # in the order the spans list them; a document listed twice keeps its first place


class TraceRun(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    source: str
    format: str  # otlp | phoenix
    traces: list[RetrievalTrace]

    def entries(self) -> list[RunEntry]:
        """The run: query_id = trace id; scores n, n-1, ..., 1 reproduce the spans' order exactly."""
        out = []
        for trace in self.traces:
            n = len(trace.documents)
            out += [RunEntry(query_id=trace.trace_id, doc_id=d.doc_id, score=float(n - i), rank=i + 1)
                    for i, d in enumerate(trace.documents)]
        return out


def span_label(name: str, span_id: str, trace_id: str) -> str:
    return f"span '{name}' (span id {span_id}, trace {trace_id})"


def document(raw_id: object, raw_score: object, where: str, index: int, path: str, id_key: str) -> TraceDocument:
    """One retrieved document; one without an id is an error naming its span and position."""
    if raw_id is None or (isinstance(raw_id, str) and not raw_id.strip()):
        raise BadInputError(f"{where}: document {index} has no {id_key}; expected every retrieved document to carry "
                            "its id (the corpus doc_id the labels use)", path=path, field=id_key)
    if isinstance(raw_id, float) and raw_id.is_integer():
        raw_id = int(raw_id)
    score = None
    if raw_score is not None:
        try:
            score = float(raw_score)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise BadInputError(f"{where}: document {index} has score {raw_score!r}; expected a number",
                                path=path, field="document.score") from None
    return TraceDocument(doc_id=str(raw_id), score=score)


def merge(trace_id: str, spans: list[tuple[str, str | None, list[TraceDocument]]]) -> RetrievalTrace:
    """A trace's retriever spans (label, query, documents; in start order) as one ranking."""
    seen: set[str] = set()
    docs = []
    for _, _, found in spans:
        for d in found:
            if d.doc_id not in seen:
                seen.add(d.doc_id)
                docs.append(d)
    query = next((q for _, q, _ in spans if q), None)
    return RetrievalTrace(trace_id=trace_id, spans=[label for label, _, _ in spans], query=query, documents=docs)


def no_retriever(trace_id: str, names: list[str], path: str) -> BadInputError:
    shown = ", ".join(f"'{n}'" for n in names[:6]) + (", ..." if len(names) > 6 else "")
    return BadInputError(f"trace {trace_id} has no retriever span (its spans: {shown}); expected a span with "
                         f"{RETRIEVER_RULE}", path=path, field="spans")
