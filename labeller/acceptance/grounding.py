"""The answer-grounding gate: are the system's answers supported by the evidence it retrieved?

This module does not judge claims. It takes the answers table of a run (query id, answer, citations,
returned documents) and a *grounder*: a function given those rows that returns one record per judged
query, {query_id, groundedness (0..1), attribution}. labeller.answers (claims judged against retrieved
evidence) is that function once merged; any function of the same shape works, e.g. a team's own judge.

The gate passes when the mean groundedness over held-out answered cases reaches the suite's
`groundedness` threshold. An answer the grounder did not judge abstains (named); a case whose
attribution says the evidence was missing is triaged to retrieval coverage, an unsupported one to
answer grounding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from statistics import fmean
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labeller.acceptance.result import AnswerRow, Failure, GateResult
from labeller.errors import BadInputError


class GroundingRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    query_id: str
    groundedness: float = Field(ge=0, le=1)
    attribution: str  # e.g. correct, missing_evidence, unsupported_generation, both, correct_without_evidence


Grounder = Callable[[Sequence[AnswerRow]], Iterable[GroundingRecord | dict[str, Any]]]
CAUSES = {"missing_evidence": "retrieval_coverage", "unsupported_generation": "answer_grounding",
          "both": "answer_grounding"}


def grounding_gate(answers: Sequence[AnswerRow], held_out: set[str], grounder: Grounder | None,
                   threshold: float | None) -> GateResult | None:
    if threshold is None:
        return None
    rows = [a for a in answers if a.query_id in held_out]
    if grounder is None or not rows:
        why = "no answer judge was given (see docs/acceptance.md, answer grounding)" if grounder is None else \
            "the system returned no answers for held-out cases"
        return GateResult(gate="grounding", status="abstain", threshold=threshold, n=len(rows), detail=why)
    try:
        records = {r.query_id: r for r in (GroundingRecord.model_validate(x) if isinstance(x, dict) else x
                                           for x in grounder(rows))}
    except ValidationError as exc:
        raise BadInputError(f"the grounder returned a malformed record: {exc.errors()[0]['msg']}",
                            field="grounding") from None
    unjudged = [a.query_id for a in rows if a.query_id not in records]
    judged = [records[a.query_id] for a in rows if a.query_id in records]
    mean = fmean(r.groundedness for r in judged) if judged else None
    failures = [Failure(case_id=r.query_id, reason=f"groundedness {r.groundedness:.2f} ({r.attribution})",
                        cause=CAUSES.get(r.attribution, "answer_grounding"))
                for r in judged if r.groundedness < threshold]
    failures += [Failure(case_id=q, reason="answer not judged by the grounder") for q in unjudged]
    status = "abstain" if mean is None or unjudged else ("pass" if mean >= threshold else "fail")
    return GateResult(gate="grounding", status=status, measured=mean, threshold=threshold, n=len(judged),
                      failures=failures, detail="mean groundedness of held-out answers")
