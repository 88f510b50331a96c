"""What an acceptance run records: the suite's digest, the comparison conditions, the candidate as given,
each case's outcome, the answers table, every gate's verdict and the release verdict."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from labeller.acceptance.latency import LatencyStats

FORMAT = "labeller-acceptance/1"
Cause = Literal["source_or_revision", "permissions", "retrieval_coverage", "retrieval_ranking",
                "answer_grounding", "integration", "operations"]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Failure(Record):
    """One named failure: which case, which identity, which document, why, and its likely cause."""

    case_id: str | None = None
    user: str | None = None
    doc_id: str | None = None
    reason: str
    cause: Cause | None = None


class GateResult(Record):
    gate: str
    status: Literal["pass", "fail", "abstain"]  # abstain: could not be checked; blocks like a failure
    measured: float | None = None
    threshold: float | None = None
    n: int | None = None  # the sample the figure came from
    detail: str = ""
    failures: list[Failure] = []

    @property
    def holds(self) -> bool:
        return self.status == "pass"


class CaseResult(Record):
    case_id: str
    split: Literal["tuning", "held_out"]
    expected: str
    user: str
    groups: list[str]
    query: str | None  # None in redaction mode
    case_digest: str
    returned: list[str]
    abstained: bool
    error: str | None = None
    latency_ms: float | None = None
    required: int = 0
    covered: int = 0
    missing: list[str] = []
    stale: list[str] = []  # evidence returned at another revision than the suite pins
    leaked: list[str] = []
    unverified: list[str] = []  # returned documents whose permissions are unknown
    outcome_correct: bool = True
    cost: float | None = None

    @property
    def failed(self) -> bool:
        return bool(self.error or self.missing or self.stale or self.leaked or not self.outcome_correct)


class AnswerRow(Record):
    """The system's answer and citations for a case: what the answer-grounding gate judges."""

    query_id: str
    answer: str
    citations: list[str]
    returned: list[str]


class Conditions(Record):
    suite_digest: str
    corpus_snapshot: str
    query_set: str  # digest of the held-out cases' ids and queries
    identities: list[str]  # users the cases ask as
    retrieval_unit: str
    k: int
    workload: dict[str, Any]
    evaluation_budget: str | None


class AcceptanceResult(Record):
    format: str = FORMAT
    suite: dict[str, Any]  # name, version, path, digest, thresholds (with who approved them)
    candidate: dict[str, Any]  # name, kind, configuration as given, system description (versions)
    conditions: Conditions
    started_at: str
    finished_at: str
    redacted: bool = False
    latency: LatencyStats | None = None
    query_cost: float | None = None  # mean per query, when the system reports costs
    ingestion_cost: float | None = None
    cases: list[CaseResult]
    answers: list[AnswerRow] = []
    revocations: list[dict[str, Any]] = []
    gates: list[GateResult]
    notes: list[str] = []  # changed thresholds, changed held-out cases, triage transitions
    passed: bool
