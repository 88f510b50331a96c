"""Request and response bodies of the HTTP API. Requests forbid unknown keys, so a typo is a 422."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from labeller.records import Label, LabelFailure
from labeller.serve.matching import Match, VariantMetrics

NonEmpty = Annotated[str, Field(min_length=1)]
TOKEN_UNIT = "whitespace-separated words"


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetrievalTestRequest(_Request):
    query: NonEmpty
    ground_truth_texts: list[NonEmpty] = Field(min_length=1, description="Texts a good retrieval returns.")
    top_k: int = Field(default=5, ge=1, le=1000)
    score_threshold: float = Field(default=0.7, ge=0.0, le=1.0, description="Fuzzy-match similarity threshold.")
    enable_rerank: bool = False
    enable_query_enhancement: bool = False


class RetrievedDocument(BaseModel):
    rank: int
    doc_id: str
    text: str
    score: float  # the retriever's score
    rerank_score: float | None = None  # share of query words found, when re-ranked
    chars: int
    tokens: int  # see TOKEN_UNIT
    keywords: list[str]
    matches: list[Match]  # the ground truths this passage matched


class VariantResult(BaseModel):
    variant: str  # "original" or "enhanced"
    query: str
    latency_ms: float
    documents: list[RetrievedDocument]
    metrics: VariantMetrics


class RetrievalTestResponse(BaseModel):
    retriever_id: str
    top_k: int
    score_threshold: float
    enable_rerank: bool
    enable_query_enhancement: bool
    token_unit: str = TOKEN_UNIT
    variants: list[VariantResult]


class JudgeQuery(_Request):
    query_id: NonEmpty = "q"
    text: NonEmpty
    fields: dict[str, Any] = Field(default_factory=dict)


class JudgeDocument(_Request):
    doc_id: NonEmpty
    text: NonEmpty
    fields: dict[str, Any] = Field(default_factory=dict)


class JudgeRequest(_Request):
    query: JudgeQuery
    documents: list[JudgeDocument] = Field(min_length=1, max_length=1000)
    judge: str | None = Field(default=None, description="Judge spec; the server's configured judge when absent.")
    rubric: str | None = Field(default=None, description="Shipped rubric name; the server's rubric when absent.")


class JudgeResponse(BaseModel):
    judge: str
    rubric: str
    rubric_version: str
    labels: list[Label]
    failures: list[LabelFailure]
    new: int  # graded by a request now
    cached: int  # answered from the verdict cache
