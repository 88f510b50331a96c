"""A stored run (TREC or table) standing in for a system: answers the query ids it holds, nothing else.

    kind = "runfile"
    [system]
    run = "runs/candidate.trec"

It cannot be timed (latency gates say so) and cannot be changed (the revocation gate compares the
`post_change_run` of [change_hook] instead). A query the run lacks returned nothing: it abstained.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from labeller.io.trec import read_run
from labeller.records import RunEntry
from labeller.systems.base import ResultItem, SearchRequest, SearchResponse


def ranked_from_run(entries: Sequence[RunEntry]) -> dict[str, list[str]]:
    """Document ids per query, best first: by rank when the run gives one, else by score; ties by doc id."""
    by_query: dict[str, list[RunEntry]] = {}
    for e in entries:
        by_query.setdefault(e.query_id, []).append(e)
    key = (lambda e: (e.rank if e.rank is not None else 0, -e.score, e.doc_id))
    return {q: [e.doc_id for e in sorted(es, key=key)] for q, es in by_query.items()}


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run: str


class RunFileSystem:
    live = False

    def __init__(self, ranked: dict[str, list[str]], name: str, source: str = ""):
        self.ranked, self.name, self.source = ranked, name, source

    @classmethod
    def from_file(cls, path: str | Path, name: str) -> RunFileSystem:
        return cls(ranked_from_run(read_run(path)), name, str(path))

    def search(self, request: SearchRequest) -> SearchResponse:
        docs = self.ranked.get(request.query_id, [])[:request.k]
        return SearchResponse(results=[ResultItem(doc_id=d) for d in docs])

    def describe(self) -> dict[str, Any]:
        return {"kind": "runfile", "run": self.source}

    def close(self) -> None:
        pass


def open_system(settings: Settings, base: Path, name: str) -> RunFileSystem:
    return RunFileSystem.from_file(base / settings.run, name)
