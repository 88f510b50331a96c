"""Request and response bodies of the HTTP API. /judge forbids unknown keys (a typo is a 422); the
retrieval-test body follows the seed contract and accepts them (see RetrievalTestRequest)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from labeller.records import Label, LabelFailure
from labeller.serve.matching import Match, VariantMetrics

NonEmpty = Annotated[str, Field(min_length=1)]
TOKEN_UNIT = "whitespace-separated words"


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetrievalTestRequest(BaseModel):
    """The seed's retrieval-test body. Unknown keys are accepted (clients of the seed API may send more)
    and named back in the reply's `ignored_fields`, so a misspelt option is visible, not silent."""

    model_config = ConfigDict(extra="allow")
    query: NonEmpty
    ground_truth_texts: list[NonEmpty] = Field(description="Texts a good retrieval returns.")
    ground_truth_doc_ids: list[NonEmpty] = Field(default_factory=list, max_length=1000,
                                                 description="Extension: documents a good retrieval returns, by id.")
    project_key: NonEmpty | None = Field(default=None, repr=False)  # required unless the config says optional (app.py)
    enable_query_enhancement: bool = False
    enable_rerank: bool = True
    score_threshold: float = Field(default=0.7, ge=0.0, le=1.0,
                                   description="Minimum (normalised) score of a returned document.")
    top_k: int = Field(default=5, ge=1, le=1000)
    match_threshold: float = Field(default=0.7, ge=0.0, le=1.0,
                                   description="Extension: word similarity a fuzzy ground-truth match needs.")

    @property
    def ignored_fields(self) -> list[str]:
        return sorted(self.model_extra or {})


class KeyedRetrievalTestRequest(RetrievalTestRequest):
    """The body when the config requires `project_key` (the default, as the contract does)."""

    project_key: NonEmpty = Field(repr=False)


class RetrievedDocument(BaseModel):
    # The seed's fields first; the rest are labeller's additions beside them.
    keywords: list[str]
    chars: int
    score: float = Field(ge=0.0, le=1.0)  # the retriever's score normalised into 0..1 (scores.py)
    tokens: int  # see TOKEN_UNIT
    text: str
    rank: int
    doc_id: str
    raw_score: float  # the retriever's own score, before normalisation
    rerank_score: float | None = None  # share of query words found, when re-ranked
    matches: list[Match]  # the ground truth credited to this passage (at most one)


class VariantResult(BaseModel):
    query: str
    query_type: Literal["original", "enhanced"]
    documents: list[RetrievedDocument]
    metrics: VariantMetrics
    latency_ms: float


class AnalysisData(BaseModel):
    enhanced_queries: list[str]  # every query text the test ran, the original first (as the contract's example)
    score_of_adequate_context: float = Field(ge=0.0, le=1.0)


class RetrievalTestResponse(BaseModel):
    is_success: bool = True
    result: list[VariantResult]
    analysis_data: AnalysisData
    agent_id: str
    token_unit: str = TOKEN_UNIT
    ignored_fields: list[str] = Field(default_factory=list)  # request keys this API does not know


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
