"""length: the document padded with irrelevant text taken from documents labelled for other queries.

A fair judge grades relevance, not volume: the expected shift is 0. Padding is appended (so the
document still opens with its own content) until the edited field is at least PAD_FACTOR times as
long as it was and at least MIN_PAD characters longer.
"""

from __future__ import annotations

import random

from labeller.errors import BadInputError
from labeller.probes.base import Context, Probe, field_text, shown_text_field, with_field
from labeller.records import Doc, Query

PAD_FACTOR = 3
MIN_PAD = 600


class LengthProbe(Probe):
    name = "length"
    what = "document padded with irrelevant text from other queries' documents; a fair judge's grade stays put"

    def perturb(self, query: Query, doc: Doc, context: Context, rng: random.Random) -> Doc:
        name = shown_text_field(context.rubric.doc_fields, doc)
        original = field_text(doc, name)
        own = set(context.docs_of_query.get(query.query_id, ()))
        others = sorted({d for q, ds in context.docs_of_query.items() if q != query.query_id for d in ds} - own)
        if not others:  # every labelled document belongs to this query: take any other corpus document
            others = sorted(set(context.corpus) - own - {doc.doc_id})
        target = max(len(original) * PAD_FACTOR, len(original) + MIN_PAD)
        pieces, length = [original], len(original)
        rng.shuffle(others)
        for did in others:
            if length >= target:
                break
            other = context.corpus[did]
            piece = field_text(other, name) or other.text
            if piece:
                pieces.append(piece)
                length += len(piece) + 2
        if len(pieces) == 1:
            raise BadInputError(f"probe 'length' has nothing to pad ({query.query_id}, {doc.doc_id}) with: every "
                                "other document is labelled for this query too; add documents of other queries "
                                "to the corpus, or leave length out of --probes")
        return with_field(doc, name, "\n\n".join(pieces), self.name)
