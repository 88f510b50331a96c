"""keyword stuffing: the query's own words appended to a document the reference grades irrelevant.

The words add no information about the document's subject; a fair judge is not moved (expected
shift 0). A positive shift is how much stuffing inflates the grade.
"""

from __future__ import annotations

import random

from labeller.probes.base import WORD, Context, Probe, field_text, shown_text_field, with_field
from labeller.records import Doc, Query


def query_terms(query: Query, names: list[str]) -> list[str]:
    """The distinct words of the query fields a rubric shows, in order (case-insensitively distinct)."""
    texts = [field_text(query, n) for n in names]
    seen: dict[str, str] = {}
    for text in texts:
        for word in WORD.findall(text):
            seen.setdefault(word.lower(), word)
    return list(seen.values())


class StuffingProbe(Probe):
    name = "stuffing"
    low_only = True
    what = "the query's terms appended to a document graded irrelevant; a positive shift is inflation"

    def perturb(self, query: Query, doc: Doc, context: Context, rng: random.Random) -> Doc:
        name = shown_text_field(context.rubric.doc_fields, doc)
        terms = " ".join(query_terms(query, context.rubric.query_fields))
        return with_field(doc, name, f"{field_text(doc, name)} {terms}", self.name)
