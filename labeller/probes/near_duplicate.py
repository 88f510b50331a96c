"""near-duplicate consistency: the same document with trivial edits must get the same grade.

The edits change nothing a reader would call content: single spaces doubled, the text lower-cased,
and a final full stop added (or removed when there is one). The gate reads the mean absolute shift,
since changes up and down would cancel in a signed mean.
"""

from __future__ import annotations

import random

from labeller.probes.base import Context, Probe, field_text, shown_text_field, with_field
from labeller.records import Doc, Query


def trivial_edits(text: str) -> str:
    edited = text.lower().replace(" ", "  ")
    return edited[:-1] if edited.endswith(".") else edited + "."


class NearDuplicateProbe(Probe):
    name = "near-duplicate"
    gated = "mean_abs_shift"
    what = "the same document with doubled spaces, lower case and a full stop toggled; the grade must not change"

    def perturb(self, query: Query, doc: Doc, context: Context, rng: random.Random) -> Doc:
        name = shown_text_field(context.rubric.doc_fields, doc)
        return with_field(doc, name, trivial_edits(field_text(doc, name)), self.name)
