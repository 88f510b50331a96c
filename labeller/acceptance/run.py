"""An acceptance test of a retriever: evidence coverage, outcome classes and, when live, latency.

Relevance metrics (NDCG, recall@k, ...) belong to `labeller evaluate`; this report lists the
answerable queries they should be computed on, because no-answer and access-denied queries are
scored by their own rule (abstain) and never averaged in.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from labeller.acceptance.coverage import CoverageReport, evidence_coverage, read_evidence
from labeller.acceptance.latency import LatencyStats, timed_search
from labeller.acceptance.outcomes import (OutcomeReport, abstentions_from_run, answerable_ids, outcome_report,
                                          read_abstentions, read_outcomes)
from labeller.acceptance.ranking import ranked_from_run
from labeller.errors import BadInputError
from labeller.io.inputs import read_corpus, read_queries
from labeller.io.trec import read_run
from labeller.records import RunEntry
from labeller.retrieval.base import Retriever


class AcceptanceReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str
    k: int
    n_queries: int
    answerable_queries: list[str]  # the only queries relevance metrics should average over
    coverage: CoverageReport | None = None
    outcomes: OutcomeReport | None = None
    latency: LatencyStats | None = None
    warnings: list[str] = []


def acceptance_test(*, queries: str | Path, run: str | Path | None = None, retriever: str | Retriever | None = None,
                    corpus: str | Path | None = None, evidence: str | Path | None = None,
                    outcomes: str | Path | None = None, answers: str | Path | None = None, k: int = 10,
                    min_score: float | None = None, concurrency: int = 1) -> AcceptanceReport:
    """Read the files, get each query's ranking (from a run, or by calling the retriever), and score it."""
    if (run is None) == (retriever is None):
        raise BadInputError("give exactly one of --run (a run file) or --retriever (called live over --corpus)")
    qs = read_queries(queries)
    latency = None
    warnings: list[str] = []
    if run is not None:
        entries = read_run(run)
        source = str(run)
        warnings = _check_query_ids(entries, qs, run, queries)
    else:
        if isinstance(retriever, str):
            if corpus is None:
                raise BadInputError("a named retriever needs --corpus")
            from labeller.retrieval import make_retriever

            retriever = make_retriever(retriever, list(read_corpus(corpus).values()))
        results, latency = timed_search(retriever, [(q, t.text) for q, t in qs.items()], k, concurrency)
        entries = [RunEntry(query_id=q, doc_id=h.doc_id, score=h.score, rank=i)
                   for q, hits in results.items() for i, h in enumerate(hits, start=1)]
        source = f"retriever {retriever.name}"
    expected = read_outcomes(outcomes, qs) if outcomes is not None else {}
    expected = {q: expected.get(q, "answerable") for q in qs}
    required = read_evidence(evidence, qs) if evidence is not None else None
    if required is not None:
        for qid in required:
            if expected[qid] != "answerable":
                raise BadInputError(f"query '{qid}' has required evidence but is marked {expected[qid]}; expected "
                                    "evidence only for answerable queries", path=str(evidence), field="query_id")
    outcome = None
    if outcomes is not None or answers is not None:
        abstained = read_abstentions(answers) if answers is not None else abstentions_from_run(qs, entries, min_score)
        outcome = outcome_report(expected, abstained)
    coverage = evidence_coverage(required, ranked_from_run(entries), k) if required is not None else None
    return AcceptanceReport(source=source, k=k, n_queries=len(qs), answerable_queries=answerable_ids(qs, expected),
                            coverage=coverage, outcomes=outcome, latency=latency, warnings=warnings)


def _check_query_ids(entries: list[RunEntry], qs: dict, run: str | Path, queries: str | Path) -> list[str]:
    """A run whose query ids match no query would score every query as abstaining: a wrong answer, not a
    result. One whose ids match only in part is scored, with a warning naming what was ignored."""
    ids = sorted({e.query_id for e in entries})
    unknown = [q for q in ids if q not in qs]
    if ids and len(unknown) == len(ids):
        raise BadInputError(f"none of the run's {len(ids)} query ids is in the queries file {queries} (first: "
                            f"'{unknown[0]}'); expected the query ids of that file", path=str(run))
    if unknown:
        shown = ", ".join(f"'{q}'" for q in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
        return [f"{len(unknown)} of the {len(ids)} query ids in {run} are not in {queries} and were ignored ({shown})"]
    return []

