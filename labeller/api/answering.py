"""judge_answers: answers, queries and passages as DataFrames (or lists of row dicts) in memory, an AnswerReport
out, through the same core as `labeller answers judge` (labeller.answers.run). Nothing is written to a temporary
file: the frames' rows go straight to the readers that check files, each problem named by its frame and row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labeller.answers.inputs import (Rows, answers_from, facts_from, outcomes_from, passages_from_contexts,
                                     passages_from_run, required_from)
from labeller.answers.models import AnswerInputs, AnswerOptions, AnswerReport
from labeller.answers.run import judge_answers as _judge
from labeller.errors import BadInputError
from labeller.records import Doc, RunEntry

Table = Any  # a pandas DataFrame, or a list of row dicts


def _rows(table: Table) -> list[dict[str, Any]]:
    if hasattr(table, "to_dict"):
        return [{k: (None if _missing(v) else v) for k, v in row.items()} for row in table.to_dict("records")]
    return [dict(row) for row in table]


def _missing(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _numbered(table: Table) -> Rows:
    return ((n, row) for n, row in enumerate(_rows(table), start=1))  # "line" n: the nth row of the frame


def _texts(table: Table, id_field: str, role: str) -> dict[str, str]:
    out = {}
    for n, row in _numbered(table):
        if not isinstance(row.get(id_field), str) or not isinstance(row.get("text"), str):
            raise BadInputError(f"expected {id_field} and text (strings)", path=f"{role} DataFrame", line=n)
        out[row[id_field]] = row["text"]
    return out


def _run(run: Table | Mapping[str, Mapping[str, float]]) -> list[RunEntry]:
    if isinstance(run, Mapping):  # {query_id: {doc_id: score}}
        return [RunEntry(query_id=q, doc_id=d, score=float(s)) for q, docs in run.items() for d, s in docs.items()]
    return [RunEntry(query_id=str(r["query_id"]), doc_id=str(r["doc_id"]), score=float(r["score"])) for r in _rows(run)]


def judge_answers(answers: Table, *, queries: Table, corpus: Table | None = None, run: Any = None,
                  contexts: Table | None = None, depth: int = 5, required: Table | None = None,
                  facts: Table | None = None, outcomes: Table | None = None,
                  options: AnswerOptions | None = None) -> AnswerReport:
    """Judge every answer's claims against its passages and attribute each query (see labeller.answers).

    `answers` {query_id, answer, citations?, abstained?}; `queries` {query_id, text}; the passages either the top
    `depth` of `run` ({query_id, doc_id, score} rows or a {query_id: {doc_id: score}} dict) with texts from `corpus`
    {doc_id, text}, or `contexts` {query_id, text, doc_id?, rank?}. Optional: `required` {query_id, doc_id},
    `facts` {query_id, facts, forbidden?}, `outcomes` {query_id, outcome}. `options` (AnswerOptions): the judge,
    store, claim rubric, LabelOptions (concurrency, max_cost, samples, dry_run) and gate thresholds.
    report.answers holds one AnswerRecord per query; report.passed is the gate's verdict."""
    if (run is None) == (contexts is None):
        raise BadInputError("give exactly one of run= (with corpus=) or contexts=")
    questions = _texts(queries, "query_id", "queries")
    if run is not None:
        if corpus is None:
            raise BadInputError("run= needs corpus=: the passages' texts come from it")
        docs = {did: Doc(doc_id=did, text=text) for did, text in _texts(corpus, "doc_id", "corpus").items()}
        entries = _run(run)
        for entry in entries:
            if entry.query_id not in questions or entry.doc_id not in docs:
                unknown = "query" if entry.query_id not in questions else "document"
                raise BadInputError(f"the run names an unknown {unknown} ({entry.query_id}, {entry.doc_id})",
                                    path="run")
        passages = passages_from_run(entries, docs, depth)
    else:
        passages = passages_from_contexts(_numbered(contexts), "contexts DataFrame", questions)
    optional = {name: None if table is None else reader(_numbered(table), f"{name} DataFrame", questions)
                for name, reader, table in (("required", required_from, required), ("facts", facts_from, facts),
                                            ("outcomes", outcomes_from, outcomes))}
    inputs = AnswerInputs(questions=questions, answers=answers_from(_numbered(answers), "answers DataFrame", questions),
                          passages=passages, **optional)
    return _judge(inputs, options)
