"""judge_answers: answers, queries and passages as DataFrames (or lists of row dicts) in memory, an AnswerReport
out, through the same core as `labeller answers judge` (labeller.answers.job.read_inputs, then labeller.answers.run).
Nothing is written to a temporary file: each frame is read in memory by the readers that read the command's files
(labeller.io.memory), each problem named by its frame and row."""

from __future__ import annotations

from typing import Any

from labeller.answers.job import AnswerFiles, read_inputs
from labeller.answers.models import AnswerOptions, AnswerReport
from labeller.answers.run import judge_answers as _judge
from labeller.api.sources import api_errors, readable

Table = Any  # a pandas DataFrame, or a list of row dicts


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
    with api_errors():  # errors name the parameters (run=, corpus=), not the command line's flags
        files = AnswerFiles(queries=readable(queries, "queries"), answers=readable(answers, "answers"),
                            corpus=readable(corpus, "corpus"), run=readable(run, "run"), depth=depth,
                            contexts=readable(contexts, "contexts"), required=readable(required, "required"),
                            facts=readable(facts, "facts"), outcomes=readable(outcomes, "outcomes"))
        return _judge(read_inputs(files), options)
