"""The records labeller reads and writes. Every serialized record forbids unknown keys."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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


class GoldLabel(Record):
    """One human judgment."""

    query_id: str
    doc_id: str
    grade: int = Field(ge=GRADE_MIN, le=GRADE_MAX)
    annotator: str = "unknown"
    note: str = ""


class RunEntry(Record):
    """One line of a retriever's ranked output."""

    query_id: str
    doc_id: str
    score: float
    rank: int | None = None
