"""The records of answer evaluation: what goes in (AnswerInputs, AnswerOptions with its Thresholds) and what comes
out (a ClaimResult per claim, an AnswerRecord per query, the AnswerReport). Every record forbids unknown keys."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from labeller.acceptance.outcomes import Outcome
from labeller.canaries.model import Fact
from labeller.labelling.models import LabelOptions, LabelStats
from labeller.records import LabelFailure

Attribution = Literal["missing_evidence", "unsupported_generation", "both", "correct_without_evidence",
                      "ignored_context", "ok"]
ATTRIBUTIONS: tuple[str, ...] = ("missing_evidence", "unsupported_generation", "both", "correct_without_evidence",
                                 "ignored_context", "ok")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Answer(_Record):
    query_id: str
    answer: str
    citations: list[str] | None = None  # doc ids the system cited; None: the table has no citations
    abstained: bool | None = None  # the system says it abstained; None: the claim split decides


class Passage(_Record):
    passage_id: str  # the doc id (from a run), or the context's own id, else "c<rank>"
    text: str
    doc_id: str | None = None  # None: a context given as text with no doc id


class ExpectedFacts(_Record):
    """The canary fact form: facts to find in the answer (a value or any alias) and strings it must not hold."""

    facts: list[Fact] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)


class AnswerInputs(_Record):
    """Everything answer evaluation reads, in memory. `passages`: per query, in rank order (already cut to the
    top K). `required`: per query, doc ids that must be among the passages (required evidence)."""

    questions: dict[str, str]
    answers: list[Answer]
    passages: dict[str, list[Passage]]
    required: dict[str, list[str]] | None = None
    facts: dict[str, ExpectedFacts] | None = None
    outcomes: dict[str, Outcome] | None = None


class Thresholds(_Record):
    """The gate (None: not checked). Rates are shares of the answers evaluated."""

    min_groundedness: float | None = Field(None, ge=0, le=1)  # mean groundedness of answers with claims
    max_unsupported_generation_rate: float | None = Field(None, ge=0, le=1)  # unsupported_generation + both
    max_missing_evidence_rate: float | None = Field(None, ge=0, le=1)  # missing_evidence + both + correct_w/o
    max_ignored_context_rate: float | None = Field(None, ge=0, le=1)
    max_contradicted: int | None = Field(None, ge=0)  # contradicted claims over all answers
    min_fact_recall: float | None = Field(None, ge=0, le=1)  # mean, over answers with expected facts
    max_forbidden_hits: int | None = Field(None, ge=0)
    min_abstention_accuracy: float | None = Field(None, ge=0, le=1)  # over answers with an expected outcome
    max_failures: int | None = Field(0, ge=0)  # claims or splits the judge could not give (counted, never a verdict)


class AnswerOptions(_Record):
    judge: str = "offline:lexical"
    jury: list[str] = Field(default_factory=list)  # more judges: the claim verdicts are the majority of all (a tie:
    # not_supported); the split is the first judge's
    escalate_to: str | None = None  # claims `judge` does not find supported are asked of this judge, whose verdict wins
    claim_rubric: str | None = None  # a claim rubric file; None: the shipped rubrics/claims/claims.md
    store: str | None = None  # the verdict store (directory or postgresql:// URL); None: the default
    base_url: str | None = None
    timeout: float = 60.0
    temperature: float | None = None
    output_mode: str | None = None
    # The output cap of every request: a claim split lists every claim of an answer, far more than a relevance
    # verdict's 400 tokens; a reply cut off at the cap is a malformed reply. Budgets assume it as the worst case.
    max_output_tokens: int = Field(2000, ge=64)
    prices: str | None = None
    labelling: LabelOptions = Field(default_factory=LabelOptions)  # concurrency, --max-cost, --samples, dry run
    thresholds: Thresholds = Field(default_factory=Thresholds)


class ClaimResult(_Record):
    claim_id: str
    text: str
    verdict: Literal["supported", "contradicted", "not_supported"] | None  # None: the judge failed (see failure)
    supporting: list[str] = Field(default_factory=list)
    contradicting: list[str] = Field(default_factory=list)
    justification: str = ""
    failure: str | None = None
    from_cache: bool = False
    sample_verdicts: list[str] | None = None  # --samples N: every sample's verdict
    judge_verdicts: dict[str, str] | None = None  # a jury: each judge's verdict
    escalated: bool = False  # asked of the escalation judge, whose verdict this is


class AnswerRecord(_Record):
    query_id: str
    attribution: Attribution | None  # None: a claim or the split failed, so the answer is not attributed
    groundedness: float | None  # supported / judged claims; None when there is no judged claim
    claims: list[ClaimResult]
    supported: int
    contradicted: int
    not_supported: int
    failed: int  # claims the judge could not give a verdict for (+1 when the split itself failed)
    abstained: bool
    evidence_retrieved: bool | None  # every required doc among the passages; None: no required evidence given
    missing_evidence: list[str] = Field(default_factory=list)
    answer_correct: bool | None = None  # by expected facts: recall 1 and no forbidden string; None: no facts
    fact_recall: float | None = None
    forbidden_hits: list[str] = Field(default_factory=list)
    citation_precision: float | None = None  # cited docs supporting a claim / cited docs
    citation_recall: float | None = None  # claims with a supporting citation / judged claims
    expected_outcome: Outcome | None = None
    abstention_correct: bool | None = None  # abstained iff the outcome is no_answer or access_denied
    question: str = ""
    answer: str = ""
    passages: list[Passage] = Field(default_factory=list)
    split_justification: str = ""


class GateCheck(_Record):
    name: str
    threshold: float
    value: float | None
    passed: bool
    detail: str = ""


class AnswerReport(_Record):
    judge: str
    claim_rubric: str
    answers: list[AnswerRecord]
    attribution: dict[str, list[str]]  # class -> query ids, every class present (maybe empty)
    counts: dict[str, int]
    mean_groundedness: float | None
    claims: int
    failures: list[LabelFailure]
    checks: list[GateCheck]
    passed: bool
    stats: dict[str, LabelStats]  # "split" and "verdicts": what each engine run did (cached, new, cost)
