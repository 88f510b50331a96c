"""Any JSON search endpoint, through a documented request/response mapping (docs/acceptance.md).

    kind = "http"
    [system]
    url = "http://127.0.0.1:8080/search"
    auth_env = "SEARCH_TOKEN"          # the header's value is read from this variable, never written anywhere
    auth_header = "Authorization"      # default
    auth_prefix = "Bearer "            # default
    timeout_s = 30
    [system.request]                   # the JSON body POSTed; "$query", "$query_id", "$user", "$groups", "$k"
    q = "$query"                       # are replaced by the case's values (default: query, user, groups, k)
    [system.response]                  # dotted paths into the reply
    results = "results"                # the ranked list; each item's fields below
    doc_id = "doc_id"
    score = "score"
    source_uri = "source_uri"
    revision = "revision"
    answer = "answer"                  # optional: the system's answer text
    citations = "citations"            # optional: the ids it cites
    cost = "cost"                      # optional: what the query cost

A reply that is not JSON, lacks the results list, or comes with a status >= 400 is an integration
failure of that case, named with the status; the auth value is redacted from any text kept.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from labeller.errors import BadInputError, redact
from labeller.redaction import redact_url
from labeller.systems.base import ResultItem, SearchRequest, SearchResponse

PLACEHOLDERS = ("$query", "$query_id", "$user", "$groups", "$k")


class ResponseMapping(BaseModel):
    model_config = ConfigDict(extra="forbid")
    results: str = "results"
    doc_id: str = "doc_id"
    score: str | None = "score"
    source_uri: str | None = "source_uri"
    revision: str | None = "revision"
    answer: str | None = "answer"
    citations: str | None = "citations"
    cost: str | None = "cost"


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(pattern=r"^https?://")
    auth_env: str | None = None
    auth_header: str = "Authorization"
    auth_prefix: str = "Bearer "
    timeout_s: float = Field(default=30.0, gt=0)
    request: dict[str, Any] = {"query": "$query", "user": "$user", "groups": "$groups", "k": "$k"}
    response: ResponseMapping = ResponseMapping()


def fill(template: Any, request: SearchRequest) -> Any:
    """The request body: every string equal to a placeholder becomes the case's value (lists and tables too)."""
    values = {"$query": request.query, "$query_id": request.query_id, "$user": request.identity.user,
              "$groups": list(request.identity.groups), "$k": request.k}
    if isinstance(template, dict):
        return {key: fill(value, request) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, request) for value in template]
    return values.get(template, template) if isinstance(template, str) else template


def dig(reply: Any, path: str | None) -> Any:
    """The value at a dotted path, or None when any step is missing."""
    if not path:
        return None
    for step in path.split("."):
        if not isinstance(reply, dict) or step not in reply:
            return None
        reply = reply[step]
    return reply


def parse_reply(reply: Any, mapping: ResponseMapping, k: int) -> SearchResponse:
    """A reply mapped to a SearchResponse; a shape that does not fit is an error response saying why."""
    items = dig(reply, mapping.results)
    if not isinstance(items, list):
        return SearchResponse(error=f"reply has no list at '{mapping.results}'")
    results = []
    for item in items[:k]:
        doc = dig(item, mapping.doc_id)
        if doc is None:
            return SearchResponse(error=f"a result has no '{mapping.doc_id}'")
        score, uri, rev = dig(item, mapping.score), dig(item, mapping.source_uri), dig(item, mapping.revision)
        results.append(ResultItem(doc_id=str(doc), score=float(score) if isinstance(score, (int, float)) else None,
                                  source_uri=None if uri is None else str(uri),
                                  revision=None if rev is None else str(rev)))
    answer, citations, cost = dig(reply, mapping.answer), dig(reply, mapping.citations), dig(reply, mapping.cost)
    return SearchResponse(results=results, answer=None if answer is None else str(answer),
                          citations=[str(c) for c in citations] if isinstance(citations, list) else [],
                          cost=float(cost) if isinstance(cost, (int, float)) else None)


class HttpSystem:
    live = True

    def __init__(self, settings: Settings, name: str):
        self.settings, self.name = settings, name
        headers = {}
        self._secret: str | None = None
        if settings.auth_env:
            self._secret = os.environ.get(settings.auth_env)
            if not self._secret:
                raise BadInputError(f"the system's auth header comes from ${settings.auth_env}, which is not set",
                                    field="system.auth_env")
            headers[settings.auth_header] = settings.auth_prefix + self._secret
        self._client = httpx.Client(headers=headers, timeout=settings.timeout_s)
        self._server: str | None = None

    def _clean(self, text: str) -> str:
        return redact(text, [self._secret])[:300]

    def search(self, request: SearchRequest) -> SearchResponse:
        try:
            reply = self._client.post(self.settings.url, json=fill(self.settings.request, request))
        except httpx.HTTPError as exc:
            return SearchResponse(error=self._clean(f"HTTP call failed: {type(exc).__name__}: {exc}"))
        self._server = reply.headers.get("server", self._server)
        if reply.status_code >= 400:
            return SearchResponse(error=self._clean(f"HTTP {reply.status_code}: {reply.text[:200]}"))
        try:
            body = reply.json()
        except ValueError:
            return SearchResponse(error=f"HTTP {reply.status_code}: the reply is not JSON")
        return parse_reply(body, self.settings.response, request.k)

    def describe(self) -> dict[str, Any]:
        return {"kind": "http", "url": redact_url(self.settings.url), "server": self._server,
                "auth": f"${self.settings.auth_env}" if self.settings.auth_env else None,
                "client": f"httpx {httpx.__version__}"}

    def close(self) -> None:
        self._client.close()


def open_system(settings: Settings, base: Path, name: str) -> HttpSystem:
    return HttpSystem(settings, name)
