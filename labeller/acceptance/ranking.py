"""Turn run entries into each query's ranked document ids."""

from __future__ import annotations

from collections.abc import Sequence

from labeller.records import RunEntry


def ranked_from_run(entries: Sequence[RunEntry]) -> dict[str, list[str]]:
    """Document ids per query, best first: by rank when the run gives one, else by score; ties by doc id."""
    by_query: dict[str, list[RunEntry]] = {}
    for e in entries:
        by_query.setdefault(e.query_id, []).append(e)
    key = (lambda e: (e.rank if e.rank is not None else 0, -e.score, e.doc_id))
    return {q: [e.doc_id for e in sorted(es, key=key)] for q, es in by_query.items()}
