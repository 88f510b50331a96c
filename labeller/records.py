"""The records labeller reads and writes. Every serialized record forbids unknown keys."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

GRADE_MIN, GRADE_MAX = 1, 5


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Query(Record):
    query_id: str
    text: str
    fields: dict[str, Any] = Field(default_factory=dict)


class Doc(Record):
    doc_id: str
    text: str
    fields: dict[str, Any] = Field(default_factory=dict)


class Pair(Record):
    query_id: str
    doc_id: str


class Verdict(Record):
    """What a judge returns. The justification comes first so the model reasons before grading."""

    justification: str = Field(min_length=1, description="One to three sentences on why the grade fits the rubric.")
    grade: int = Field(ge=GRADE_MIN, le=GRADE_MAX, description="Relevance grade from 1 (not relevant) to 5.")


class Label(Record):
    """One graded pair with its provenance: one row of `labeller label` output."""

    query_id: str
    doc_id: str
    grade: int = Field(ge=GRADE_MIN, le=GRADE_MAX)
    justification: str
    judge: str  # "provider:model"
    provider: str
    model: str
    rubric: str
    rubric_version: str
    cache_key: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cost_usd: float | None = None  # None when the model has no known price: never a guessed cost
    latency_s: float | None = None
    created_at: str
    from_cache: bool = False
    served_model: str | None = None  # the model the server said answered (response.model); None: not reported
    system_fingerprint: str | None = None  # the server's backend fingerprint, when it gives one
    # Self-consistency (`--samples N`, N > 1; labeller.labelling.samples): `grade` is the aggregate of
    # the samples that succeeded, in sample order; agreement is the share of them equal to `grade`.
    samples: int | None = None  # N asked; len(sample_grades) < N when some samples failed
    sample_grades: list[int] | None = None
    sample_agreement: float | None = Field(None, ge=0, le=1)
    sample_spread: int | None = Field(None, ge=0)  # max - min of sample_grades
    aggregate: Literal["median", "majority"] | None = None

    # Juries and escalation (labelling/jury.py, escalation.py): each judge's grade of this pair, and
    # whether the expensive judge was asked for it. None on a single judge's labels.
    judge_grades: dict[str, int] | None = None
    escalated: bool | None = None
    # --grade-probs (labeller.judges.grade_probs): the grade's distribution read from the judge's token
    # log-probabilities in the same request, its expected grade and entropy (bits). None: not asked or not given.
    grade_probs: dict[str, float] | None = None
    expected_grade: float | None = Field(None, ge=GRADE_MIN, le=GRADE_MAX)
    grade_entropy: float | None = Field(None, ge=0)
    # Where grade_probs came from: the judge's token log-probabilities, or (a judge that gives none, with
    # --grade-probs) the shares of the pair's sample grades (labeller.labelling.grading).
    grade_probs_source: Literal["logprobs", "samples"] | None = None
    # How the run graded each pair, when not one plain request ("grade-probs logprobs top 10; samples auto"):
    # part of the label set's identity (labeller.io.gold.label_identities), like the judge's name.
    grading: str | None = None

    @field_validator("samples", "sample_grades", "sample_agreement", "sample_spread", "aggregate", "judge_grades",
                     "escalated", "grade_probs", "expected_grade", "grade_entropy", "grade_probs_source", "grading",
                     mode="before")
    @classmethod
    def _table_cell(cls, value: Any) -> Any:
        """A label file read back from CSV or Parquet. A CSV cell is text: an empty one means "not set", and
        the sample grades and per-judge grades are JSON there. Parquet stores the per-judge grades as a struct,
        which gives every row every judge: null where one did not grade it."""
        if value == "":
            return None
        if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
            try:
                return json.loads(value)
            except ValueError:
                return value  # pydantic then names the field and what it expected
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if v is not None}
        return value

    @model_serializer(mode="wrap")
    def _single_judge_columns(self, handler: Any) -> dict[str, Any]:
        """A single judge's rows keep their columns: the jury/escalation and grade-probability ones appear only
        when set."""
        row = handler(self)
        for name in OPTIONAL_COLUMNS:
            if row.get(name) is None:
                row.pop(name, None)
        return row


JURY_COLUMNS = ("judge_grades", "escalated")
GRADE_PROB_COLUMNS = ("grade_probs", "expected_grade", "grade_entropy", "grade_probs_source")
OPTIONAL_COLUMNS = JURY_COLUMNS + GRADE_PROB_COLUMNS + ("grading",)  # left out of a row where unset: older outputs stay as they were


class LabelFailure(Record):
    """A pair the judge could not grade after retries. Counted and reported, never turned into a grade."""

    query_id: str
    doc_id: str
    judge: str
    rubric: str
    rubric_version: str
    cache_key: str
    reason: str
    attempts: int
    created_at: str


# What a person did with a pair. Only "graded" and "adjudicated" rows are grades; "cant_judge" and
# "later" are kept so the annotation page can resume, and are never read as a grade.
GoldOutcome = Literal["graded", "cant_judge", "later", "adjudicated"]
NOT_A_GRADE = ("cant_judge", "later")


class GoldLabel(Record):
    """One human judgment. The columns after `note` are optional, written by `labeller annotate`."""

    query_id: str
    doc_id: str
    grade: int | None = Field(None, ge=GRADE_MIN, le=GRADE_MAX)
    annotator: str = "unknown"
    note: str = ""
    outcome: GoldOutcome = "graded"
    created_at: str | None = None  # when the grade was given (ISO 8601, UTC)
    sample_id: str | None = None  # the frozen sample it was graded in
    rubric_version: str | None = None  # the rubric the person read while grading
    rubric_problem: bool = False  # adjudication: the disagreement points at the rubric, not the person

    @model_validator(mode="after")
    def _grade_fits_outcome(self) -> GoldLabel:
        if self.outcome in NOT_A_GRADE and self.grade is not None:
            raise ValueError(f"outcome '{self.outcome}' is not a grade, so the grade must be empty")
        if self.outcome not in NOT_A_GRADE and self.grade is None:
            raise ValueError(f"grade is missing; outcome '{self.outcome}' needs a whole-number grade 1-5")
        return self


class RunEntry(Record):
    """One line of a retriever's ranked output."""

    query_id: str
    doc_id: str
    score: float
    rank: int | None = None
