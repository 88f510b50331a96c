"""Redaction mode: no raw query text anywhere in a result (sensitive suites).

Query text is dropped from each case and replaced wherever else it appears (an error message or an
answer that echoes it) by `[query <case id>]`. Case ids, identities and document ids are kept: they are
what a reviewer needs to act on a failure.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


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


class Redactor:
    """Replaces each case's query text (4 characters or more) by `[query <case id>]` in any record."""

    def __init__(self, queries: dict[str, str]):
        # Shorter texts are only dropped from `query`: replacing them everywhere would garble ids.
        self.texts = sorted(((q, f"[query {cid}]") for cid, q in queries.items() if len(q) >= 4),
                            key=lambda t: -len(t[0]))

    def __call__(self, record: M) -> M:
        return type(record).model_validate(_scrub(record.model_dump(mode="json"), self.texts))

    def dicts(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _scrub(rows, self.texts)
