"""The pairs where judge and people differ by `min_diff` grades or more: what people read to fix a rubric."""

from __future__ import annotations

import csv
import io
from typing import Literal

from labeller.agreement.align import Alignment
from labeller.io.csvcells import escape_row
from labeller.records import Doc, Query, Record

GENEROUS, STRICT = "judge too generous", "judge too strict"
CSV_COLUMNS = ["direction", "difference", "query_id", "doc_id", "human_grade", "judge_grade", "query",
               "document_excerpt", "human_note", "judge_justification"]


class Disagreement(Record):
    direction: Literal["judge too generous", "judge too strict"]
    difference: int  # judge minus human
    query_id: str
    doc_id: str
    human_grade: int
    judge_grade: int
    query: str  # empty when no queries file was given
    document_excerpt: str
    human_note: str
    judge_justification: str


def excerpt(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def find_disagreements(alignment: Alignment, min_diff: int = 2, queries: dict[str, Query] | None = None,
                       corpus: dict[str, Doc] | None = None) -> list[Disagreement]:
    """Every pair with |judge - human| >= min_diff, worst first (then by query and document)."""
    out = []
    for p in alignment.pairs:
        if abs(p.difference) < min_diff:
            continue
        human_note = p.humans[0].note if len(p.humans) == 1 else "; ".join(
            f"{h.annotator}{' (adjudicated)' if h.adjudicated else ''} ({h.grade}): {h.note or '(no note)'}"
            for h in p.humans)
        query, doc = (queries or {}).get(p.query_id), (corpus or {}).get(p.doc_id)
        out.append(Disagreement(direction=GENEROUS if p.difference > 0 else STRICT, difference=p.difference,
                                query_id=p.query_id, doc_id=p.doc_id, human_grade=p.gold, judge_grade=p.judge,
                                query=query.text if query else "", document_excerpt=excerpt(doc.text) if doc else "",
                                human_note=human_note, judge_justification=p.justification))
    return sorted(out, key=lambda d: (-abs(d.difference), d.query_id, d.doc_id))


def grouped(entries: list[Disagreement]) -> dict[str, list[Disagreement]]:
    return {GENEROUS: [e for e in entries if e.direction == GENEROUS],
            STRICT: [e for e in entries if e.direction == STRICT]}


def disagreements_csv(entries: list[Disagreement]) -> str:
    """CSV text, generous ones first, each group worst first; the header is there even with no rows."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for group in grouped(entries).values():
        writer.writerows(escape_row(e.model_dump()) for e in group)  # opened in spreadsheets: no live formulas
    return buffer.getvalue()
