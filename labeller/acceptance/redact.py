"""Redaction mode: no raw query text anywhere in a result (sensitive suites).

Query text is dropped from each case and replaced wherever else it appears (an error message or an
answer that echoes it) by `[query <case id>]`. Case ids, identities and document ids are kept: they are
what a reviewer needs to act on a failure.
"""

from __future__ import annotations

from typing import Any

from labeller.acceptance.result import AcceptanceResult


def _scrub(value: Any, texts: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for text, label in texts:
            value = value.replace(text, label)
        return value
    if isinstance(value, dict):
        return {k: _scrub(v, texts) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, texts) for v in value]
    return value


def redact_queries(result: AcceptanceResult, queries: dict[str, str]) -> AcceptanceResult:
    # Texts under 4 characters are only dropped from `query`: replacing them everywhere would garble ids.
    texts = sorted(((q, f"[query {cid}]") for cid, q in queries.items() if len(q) >= 4), key=lambda t: -len(t[0]))
    data = _scrub(result.model_dump(mode="json"), texts)
    for case in data["cases"]:
        case["query"] = None
    return AcceptanceResult.model_validate({**data, "redacted": True})
