"""The retriever interface the pipelines, canary probes and the retrieval-test API call."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict


class Hit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    doc_id: str
    score: float
    text: str = ""


@runtime_checkable
class Retriever(Protocol):
    name: str

    def search(self, query: str, k: int) -> list[Hit]:
        """The top k documents for a query text, best first."""
        ...
