"""Production traces read as runs: spans made by the real OpenTelemetry SDK, encoded by its OTLP encoder and
written as OTLP JSON (hex ids, as the OTLP/JSON rule says, and protobuf's own base64 mapping); a Phoenix spans
export in the shape `get_spans_dataframe()` gives. The trace id joins outcomes."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from cli_helpers import cli
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import labeller
from labeller.errors import BadInputError
from labeller.traces import read_traces

QUESTIONS = {"q-ink": "HP 305XL black ink cartridge", "q-rent": "Office rent Q1 2026", "q-fuel": "Diesel 40 litres"}
RANKED = {"q-ink": ["tx-ink", "tx-paper", "tx-rent"], "q-rent": ["tx-paper", "tx-rent", "tx-ink"],
          "q-fuel": ["tx-paper", "tx-ink", "tx-rent"]}  # q-fuel's evidence (tx-fuel) is not retrieved


def _sdk_spans(genai: frozenset = frozenset(), broken: str | None = None, also=None) -> list:
    """One trace per question: an agent span, its retriever child (OpenInference, or GenAI for `genai`), an LLM
    span. `broken`: 'no-retriever' drops the retriever span of q-rent; 'no-id' drops a document id there.
    `also`: a second exporter the same spans go to."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if also is not None:
        provider.add_span_processor(SimpleSpanProcessor(also))
    tracer = provider.get_tracer("bookkeeping-agent")
    for qid, text in QUESTIONS.items():
        with tracer.start_as_current_span("categorise", attributes={"app.query_id": qid}):
            if not (broken == "no-retriever" and qid == "q-rent"):
                docs = RANKED[qid]
                if qid in genai:
                    attributes = {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": text,
                                  "gen_ai.retrieval.documents": json.dumps(
                                      [{"id": d, "score": 1.0 - 0.1 * i} for i, d in enumerate(docs)])}
                else:
                    attributes = {"openinference.span.kind": "RETRIEVER", "input.value": text}
                    for i, d in enumerate(docs):
                        if not (broken == "no-id" and qid == "q-rent" and i == 1):
                            attributes[f"retrieval.documents.{i}.document.id"] = d
                        attributes[f"retrieval.documents.{i}.document.score"] = 0.2 + 0.1 * i  # a distance
                        attributes[f"retrieval.documents.{i}.document.content"] = f"ledger row {d}"
                with tracer.start_as_current_span("vector-search", attributes=attributes):
                    pass
            with tracer.start_as_current_span("llm", attributes={"openinference.span.kind": "LLM"}):
                pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _trace_ids(spans) -> dict[str, str]:
    return {s.attributes["app.query_id"]: format(s.context.trace_id, "032x") for s in spans if s.name == "categorise"}


def write_otlp(path, spans, hex_ids: bool = True):
    """The SDK's OTLP encoding, as JSON: protobuf's JSON mapping, with ids turned to hex as OTLP/JSON requires."""
    body = MessageToDict(encode_spans(spans))
    if hex_ids:
        import base64

        for resource in body["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = base64.b64decode(span[key]).hex()
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


@pytest.mark.parametrize("hex_ids", [True, False])
def test_otlp_json_from_the_sdk_reads_as_a_run_in_the_order_the_agent_saw(tmp_path, hex_ids):
    spans = _sdk_spans(genai=frozenset({"q-fuel"}))
    ids = _trace_ids(spans)
    found = read_traces(write_otlp(tmp_path / "traces.json", spans, hex_ids))
    assert found.format == "otlp" and {t.trace_id for t in found.traces} == set(ids.values())
    by_id = {t.trace_id: t for t in found.traces}
    for qid, trace_id in ids.items():
        trace = by_id[trace_id]
        assert [d.doc_id for d in trace.documents] == RANKED[qid]
        assert trace.query == QUESTIONS[qid] and trace.spans[0].startswith("vector-search (")
    assert [d.score for d in by_id[ids["q-ink"]].documents] == pytest.approx([0.2, 0.3, 0.4])  # kept as given
    entries = [e for e in found.entries() if e.query_id == ids["q-ink"]]
    assert [(e.doc_id, e.rank) for e in entries] == [("tx-ink", 1), ("tx-paper", 2), ("tx-rent", 3)]


def test_a_trace_without_a_retriever_span_is_an_error_naming_the_trace_and_its_spans(tmp_path):
    spans = _sdk_spans(broken="no-retriever")
    with pytest.raises(BadInputError) as info:
        read_traces(write_otlp(tmp_path / "traces.json", spans))
    assert f"trace {_trace_ids(spans)['q-rent']} has no retriever span" in str(info.value)
    assert "'categorise', 'llm'" in str(info.value) or "'llm', 'categorise'" in str(info.value)


def test_a_document_without_an_id_is_an_error_naming_the_span(tmp_path):
    spans = _sdk_spans(broken="no-id")
    retriever = next(s for s in spans if s.name == "vector-search" and s.attributes.get("input.value") ==
                     QUESTIONS["q-rent"])
    with pytest.raises(BadInputError) as info:
        read_traces(write_otlp(tmp_path / "traces.json", spans))
    message = str(info.value)
    assert f"span 'vector-search' (span id {format(retriever.context.span_id, '016x')}" in message
    assert "document 1 has no document.id" in message and info.value.field == "document.id"


def test_not_an_otlp_export_is_refused(tmp_path):
    (tmp_path / "t.jsonl").write_text('{"resourceSpans": []}\n{"spans": 1}\n')
    with pytest.raises(BadInputError) as info:
        read_traces(tmp_path / "t.jsonl", "otlp")
    assert info.value.line == 2 and info.value.field == "resourceSpans"


def _phoenix_frame(spans) -> pd.DataFrame:
    """What Phoenix's get_spans_dataframe() holds for these spans (its documented columns), one row per span."""
    rows = []
    for s in spans:
        a = dict(s.attributes)
        docs = None
        if a.get("openinference.span.kind") == "RETRIEVER":
            n = len({k.split(".")[2] for k in a if k.startswith("retrieval.documents.")})
            docs = [{"document.id": a.get(f"retrieval.documents.{i}.document.id"),
                     "document.score": a.get(f"retrieval.documents.{i}.document.score"),
                     "document.content": a.get(f"retrieval.documents.{i}.document.content")} for i in range(n)]
        rows.append({"context.span_id": format(s.context.span_id, "016x"),
                     "context.trace_id": format(s.context.trace_id, "032x"), "name": s.name,
                     "span_kind": a.get("openinference.span.kind", "CHAIN"),
                     "start_time": pd.Timestamp(s.start_time, unit="ns"),
                     "attributes.input.value": a.get("input.value"), "attributes.retrieval.documents": docs})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_a_phoenix_export_reads_as_the_same_run(tmp_path, suffix):
    spans = _sdk_spans()
    frame = _phoenix_frame(spans)
    path = tmp_path / f"spans{suffix}"
    frame.to_parquet(path) if suffix == ".parquet" else frame.to_json(path, orient="records", lines=True)
    phoenix = read_traces(path)
    otlp = read_traces(write_otlp(tmp_path / "traces.json", spans))
    assert phoenix.format == "phoenix"
    assert sorted((t.trace_id, t.query, tuple(d.doc_id for d in t.documents)) for t in phoenix.traces) == \
        sorted((t.trace_id, t.query, tuple(d.doc_id for d in t.documents)) for t in otlp.traces)


def _labels_and_outcomes(tmp_path, ids):
    """Labels per trace (the relevant ledger row graded 5) and outcomes keyed by trace id only."""
    relevant = {"q-ink": "tx-ink", "q-rent": "tx-rent", "q-fuel": "tx-fuel"}
    labels = [{"query_id": ids[q], "doc_id": d, "grade": 5 if d == relevant[q] else 1}
              for q in QUESTIONS for d in {*RANKED[q], relevant[q]}]
    outcomes = [{"trace_id": ids[q], "outcome": q != "q-fuel"} for q in QUESTIONS]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labels))
    (tmp_path / "outcomes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in outcomes))
    return labels, outcomes


def test_outcomes_join_traces_by_trace_id(tmp_path, capsys):
    spans = _sdk_spans()
    ids = _trace_ids(spans)
    write_otlp(tmp_path / "traces.json", spans)
    labels, outcomes = _labels_and_outcomes(tmp_path, ids)
    code, out, err = cli(capsys, "outcomes", "--traces", tmp_path / "traces.json", "--labels",
                         tmp_path / "labels.jsonl", "--outcomes", tmp_path / "outcomes.jsonl", "--bootstrap", "50",
                         "--gate-metric", "hit_rate@3", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["key"] == "trace_id" and report["joined"]["analysed"] == 3
    cells = {c: [q["query_id"] for q in qs] for c, qs in report["attribution"]["queries"].items()}
    assert cells["retrieval_fault"] == [ids["q-fuel"]]
    assert sorted(cells["both_ok"]) == sorted([ids["q-ink"], ids["q-rent"]])
    fuel = report["attribution"]["queries"]["retrieval_fault"][0]
    assert fuel["text"] == QUESTIONS["q-fuel"]  # the retriever span's input, beside its trace id
    from_api = labeller.link_outcomes(pd.DataFrame(outcomes), pd.DataFrame(labels),
                                      traces=_phoenix_frame(spans), bootstrap=50, gate_metric="hit_rate@3")
    assert from_api.attribution.counts == report["attribution"]["counts"]


def test_labeller_traces_writes_a_run_queries_and_pairs_that_evaluate_reads(tmp_path, capsys):
    spans = _sdk_spans()
    ids = _trace_ids(spans)
    write_otlp(tmp_path / "traces.json", spans)
    _labels_and_outcomes(tmp_path, ids)
    code, out, err = cli(capsys, "traces", tmp_path / "traces.json", "--run", tmp_path / "run.jsonl", "--queries",
                         tmp_path / "queries.jsonl", "--pairs", tmp_path / "pairs.jsonl", "--depth", "2")
    assert code == 0, err
    assert out.startswith("3 traces, 6 retrieved documents")
    queries = [json.loads(line) for line in (tmp_path / "queries.jsonl").read_text().splitlines()]
    assert sorted((q["query_id"], q["text"]) for q in queries) == sorted((ids[q], t) for q, t in QUESTIONS.items())
    pairs = [json.loads(line) for line in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    assert len(pairs) == 6 and {p["doc_id"] for p in pairs if p["query_id"] == ids["q-ink"]} == {"tx-ink", "tx-paper"}
    code, out, err = cli(capsys, "evaluate", "--run", tmp_path / "run.jsonl", "--labels", tmp_path / "labels.jsonl",
                         "--metrics", "hit_rate@2", "--json")
    assert code == 0, err
    assert json.loads(out)["per_query"]["hit_rate@2"] == {ids["q-ink"]: 1.0, ids["q-rent"]: 1.0, ids["q-fuel"]: 0.0}


def test_outcomes_keyed_by_query_id_only_cannot_join_traces(tmp_path, capsys):
    spans = _sdk_spans()
    write_otlp(tmp_path / "traces.json", spans)
    _labels_and_outcomes(tmp_path, _trace_ids(spans))
    (tmp_path / "outcomes.jsonl").write_text('{"query_id": "q-ink", "outcome": "correct"}\n')
    code, out, err = cli(capsys, "outcomes", "--traces", tmp_path / "traces.json", "--labels",
                         tmp_path / "labels.jsonl", "--outcomes", tmp_path / "outcomes.jsonl")
    assert code == 2 and "outcomes.jsonl:1: field 'trace_id': missing; expected a trace_id in every row" in err


def test_the_sdk_console_exporter_output_reads_as_the_same_run(tmp_path):
    """ConsoleSpanExporter writing to a file: the quickest way out of an application, no collector needed."""
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    path = tmp_path / "spans.json"
    with path.open("w") as out:
        spans = _sdk_spans(genai=frozenset({"q-fuel"}), also=ConsoleSpanExporter(out=out))
    found = read_traces(path)
    assert found.format == "console"
    ids = _trace_ids(spans)
    assert sorted((t.trace_id, t.query, tuple(d.doc_id for d in t.documents)) for t in found.traces) == \
        sorted((ids[q], QUESTIONS[q], tuple(RANKED[q])) for q in QUESTIONS)
