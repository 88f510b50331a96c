"""The answer-grounding gates: are the system's answers supported by the evidence it retrieved?

This module does not judge claims. It takes the answers table of a run (query id, answer, citations,
returned documents) and a *grounder*: a function given those rows that returns one record per judged
query, {query_id, groundedness (0..1, None for an answer without claims), attribution}. The suite's
[grounding] table makes labeller.answers that function (acceptance/answer_judge.py: claims judged against
the returned documents' texts, records from labeller.answers.grounding_records); `--grounding
module:function` gives any other function of the same shape, e.g. a team's own judge.

Three gates, each run when its threshold is set: `grounding` (mean groundedness of held-out answers at
least `groundedness`), `unsupported_generation` (share of answers unsupported_generation or both at most
`max_unsupported_generation_rate`), `missing_evidence` (share missing_evidence, both or
correct_without_evidence at most `max_missing_evidence_rate`). An answer the grounder did not judge (or
could not attribute) makes every gate abstain, naming it; a failing answer's triage cause is retrieval
coverage when its evidence was missing, else answer grounding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from statistics import fmean
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labeller.acceptance.result import AnswerRow, Failure, GateResult
from labeller.acceptance.suite import Thresholds
from labeller.errors import BadInputError


class GroundingRecord(BaseModel):
    """One judged answer. The optional counts are what labeller.answers.grounding_records adds."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    query_id: str
    groundedness: float | None = Field(ge=0, le=1)  # None: no claim to judge (an abstention)
    attribution: str | None  # e.g. ok, missing_evidence, unsupported_generation, both; None: the judge failed
    supported: int | None = None
    contradicted: int | None = None
    not_supported: int | None = None
    failed: int | None = None
    evidence_retrieved: bool | None = None
    answer_correct: bool | None = None
    abstained: bool | None = None
    abstention_correct: bool | None = None


Grounder = Callable[[Sequence[AnswerRow]], Iterable[GroundingRecord | dict[str, Any]]]
MISSING = ("missing_evidence", "both", "correct_without_evidence")
UNSUPPORTED = ("unsupported_generation", "both")


def cause_of(attribution: str | None) -> str:
    return "retrieval_coverage" if attribution in ("missing_evidence", "correct_without_evidence") \
        else "answer_grounding"


def _records(grounder: Grounder, rows: list[AnswerRow]) -> dict[str, GroundingRecord]:
    try:
        return {r.query_id: r for r in (GroundingRecord.model_validate(x) if isinstance(x, dict) else x
                                        for x in grounder(rows))}
    except ValidationError as exc:
        raise BadInputError(f"the grounder returned a malformed record: {exc.errors()[0]['msg']}",
                            field="grounding") from None


def grounding_gates(answers: Sequence[AnswerRow], held_out: set[str], grounder: Grounder | None,
                    thresholds: Thresholds) -> list[GateResult]:
    limits = {"grounding": thresholds.groundedness, "unsupported_generation": thresholds.max_unsupported_generation_rate,
              "missing_evidence": thresholds.max_missing_evidence_rate}
    limits = {gate: t for gate, t in limits.items() if t is not None}
    rows = [a for a in answers if a.query_id in held_out]
    if grounder is None or not rows:
        why = ("no answer judge was given: a [grounding] table in the suite, or --grounding (docs/acceptance.md)"
               if grounder is None else "the system returned no answers for held-out cases")
        return [GateResult(gate=gate, status="abstain", threshold=t, n=len(rows), detail=why)
                for gate, t in limits.items()]
    if not limits:
        return []
    records = _records(grounder, rows)
    unjudged = [Failure(case_id=a.query_id, reason="answer not judged by the grounder") for a in rows
                if a.query_id not in records]
    unjudged += [Failure(case_id=a.query_id, reason="the answer judge could not give every claim of this answer")
                 for a in rows if a.query_id in records and records[a.query_id].attribution is None]
    judged = [records[a.query_id] for a in rows if a.query_id in records and records[a.query_id].attribution]
    about = getattr(grounder, "detail", "")  # what the built-in judge did (requests, cost), when it says
    gates = []
    for gate, threshold in limits.items():
        if gate == "grounding":
            values = [r.groundedness for r in judged if r.groundedness is not None]
            measured = fmean(values) if values else None
            bad = [r for r in judged if r.groundedness is not None and r.groundedness < threshold]
            detail, reason = "mean groundedness of held-out answers", "groundedness {g:.2f} ({a})"
        else:
            classes = UNSUPPORTED if gate == "unsupported_generation" else MISSING
            bad = [r for r in judged if r.attribution in classes]
            measured = len(bad) / len(judged) if judged else None
            detail, reason = f"share of held-out answers {' or '.join(classes)}", "{a}"
        failures = [Failure(case_id=r.query_id, reason=reason.format(g=r.groundedness or 0, a=r.attribution),
                            cause=cause_of(r.attribution)) for r in bad]
        holds = measured is not None and (measured >= threshold if gate == "grounding" else measured <= threshold)
        status = "abstain" if measured is None or unjudged else ("pass" if holds else "fail")
        gates.append(GateResult(gate=gate, status=status, measured=measured, threshold=threshold, n=len(judged),
                                failures=failures + unjudged, detail=f"{detail}{'; ' if about else ''}{about}"))
    return gates
