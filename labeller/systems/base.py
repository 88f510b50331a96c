"""One interface for every system under test: a query asked as an identity in, ranked results out.

A system may also answer (an answer text and the documents it cites), report what a call cost, and
describe itself (kind, versions) for the result's record. A call that fails is a response with an
`error`, never an exception: the acceptance run counts it as an integration failure of that case.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class Identity(BaseModel):
    """Who asks: the user and the groups a permission can be granted to."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    user: str = Field(min_length=1)
    groups: tuple[str, ...] = ()


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    query_id: str
    query: str
    identity: Identity
    k: int = Field(ge=1)


class ResultItem(BaseModel):
    """One ranked result: a document or chunk id, and where it came from when the system says so."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    doc_id: str
    score: float | None = None
    source_uri: str | None = None
    revision: str | None = None


class SearchResponse(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    results: list[ResultItem] = []
    answer: str | None = None
    citations: list[str] = []
    cost: float | None = None  # what this query cost, when the system reports it
    error: str | None = None  # the call failed: HTTP status, MCP error, exception (never a secret)


@runtime_checkable
class SystemUnderTest(Protocol):
    name: str
    live: bool  # False for a stored run: it cannot be timed or re-queried after a change

    def search(self, request: SearchRequest) -> SearchResponse: ...

    def describe(self) -> dict[str, Any]:
        """Kind and versions (server, client, protocol), recorded with every result."""
        ...

    def close(self) -> None: ...
