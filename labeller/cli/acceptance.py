"""`labeller acceptance`: required-evidence coverage, no-answer/access-denied outcomes and live latency."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import app


@app.command("acceptance")
def acceptance(
    queries: Annotated[Path, typer.Option(help="Queries file with query_id and text.")],
    run: Annotated[Optional[Path], typer.Option(help="A run (TREC or table) to score.")] = None,
    retriever: Annotated[Optional[str], typer.Option(help="A labeller retriever to call live (records latency).")] = None,
    corpus: Annotated[Optional[Path], typer.Option(help="Corpus for --retriever.")] = None,
    evidence: Annotated[Optional[Path], typer.Option(help="Required evidence: rows {query_id, doc_id[, evidence_id]}.")] = None,
    outcomes: Annotated[Optional[Path], typer.Option(help="Expected outcomes: rows {query_id, outcome}.")] = None,
    answers: Annotated[Optional[Path], typer.Option(help="Abstentions: rows {query_id, abstained}; without it, a query with no result abstains.")] = None,
    k: Annotated[int, typer.Option(min=1, help="Evidence must be in the top K.")] = 10,
    min_score: Annotated[Optional[float], typer.Option(help="Results scoring below this count as abstaining.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Live calls in flight while timing latency.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Acceptance-test metrics that relevance metrics miss. Outcome classes are never averaged together."""
    from labeller.acceptance import acceptance_test

    report = acceptance_test(queries=queries, run=run, retriever=retriever, corpus=corpus, evidence=evidence,
                             outcomes=outcomes, answers=answers, k=k, min_score=min_score, concurrency=concurrency)
    for warning in report.warnings:
        print(f"labeller: warning: {warning}", file=sys.stderr)
    if as_json:
        print(json.dumps(report.model_dump(), indent=2))
        return
    print(f"acceptance test of {report.source}: {report.n_queries} queries, "
          f"{len(report.answerable_queries)} answerable (relevance metrics use only these)")
    if report.coverage is not None:
        c = report.coverage
        print(f"required-evidence coverage@{c.k}: {c.mean_coverage:.3f} over {c.n_queries} queries "
              f"({c.fully_covered} fully covered)")
    if report.outcomes is not None:
        for o in report.outcomes.outcomes:
            rate = "n/a" if o.rate is None else f"{o.rate:.3f}"
            rule = "answered" if o.outcome == "answerable" else "abstained"
            print(f"  {o.outcome}: {o.correct}/{o.n} {rule} correctly ({rate})")
    if report.latency is not None:
        lat = report.latency
        print(f"latency: p50 {lat.p50_ms:.2f} ms, p95 {lat.p95_ms:.2f} ms (n={lat.n}, concurrency {lat.concurrency})")
