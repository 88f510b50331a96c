"""Retrieval metrics (NDCG, recall, MRR, ...) of the held-out answerable cases, by labeller.evaluation.

Judgments come from the suite's `judgments` file (labels, gold or qrels) when given, else from the
required evidence (every carrier graded 5). Only answerable held-out cases are averaged: no-answer and
access-denied cases are scored by their own outcome gates.
"""

from __future__ import annotations

from labeller.acceptance.result import CaseResult, Failure, GateResult
from labeller.acceptance.suite import Suite
from labeller.errors import BadInputError


def metric_specs(suite: Suite) -> list:
    """The metrics the thresholds name, parsed (a bad name is refused when the suite is read)."""
    from labeller.evaluation import parse_metrics

    if not suite.thresholds.metrics:
        return []
    try:
        return parse_metrics(list(suite.thresholds.metrics))
    except BadInputError as exc:
        raise BadInputError(exc.detail, path=suite.path, field="thresholds.metrics") from None


def suite_grades(suite: Suite) -> dict[str, dict[str, int]]:
    """case id -> doc id -> grade: the suite's judgments file, else every required-evidence document as 5.
    Read before any system is asked, so a bad file costs nothing."""
    if suite.suite.judgments:
        from labeller.evaluation import load_judgments

        return load_judgments(suite.resolve(suite.suite.judgments)).grades
    return {c.id: {e.doc_id: 5 for e in c.evidence} for c in suite.cases if c.evidence}


def metric_gates(suite: Suite, held: list[CaseResult], grades: dict[str, dict[str, int]]) -> list[GateResult]:
    wanted = suite.thresholds.metrics
    if not wanted:
        return []
    from labeller.evaluation import Settings, score_run
    from labeller.evaluation.qrels import Judgments
    from labeller.evaluation.runs import Ranking

    specs = metric_specs(suite)
    ids = {c.case_id for c in held if c.expected == "answerable"}
    grades = {q: d for q, d in grades.items() if q in ids}
    ranking = Ranking("candidate", docs={c.case_id: c.returned for c in held if c.case_id in ids})
    gates = []
    if not grades:
        return [GateResult(gate=f"metric:{name}", status="abstain", threshold=limit,
                           detail="no held-out answerable case has judgments") for name, limit in wanted.items()]
    scores = score_run(ranking, Judgments(grades, suite.path, "labels"), specs, Settings(average="all"))
    for spec, (name, limit) in zip(specs, wanted.items()):
        value = scores.metrics.get(spec.name)
        per_query = scores.per_query.get(spec.name, {})
        low = sorted(per_query, key=lambda q: per_query[q])[:3]
        failures = [] if value is not None and value >= limit else [
            Failure(case_id=q, reason=f"{name} = {per_query[q]:.3f}", cause="retrieval_ranking") for q in low]
        gates.append(GateResult(gate=f"metric:{name}", status="abstain" if value is None else
                                ("pass" if value >= limit else "fail"), measured=value, threshold=limit,
                                n=scores.queries.averaged, failures=failures,
                                detail="mean over held-out answerable cases (a case returning nothing scores 0)"))
    return gates
