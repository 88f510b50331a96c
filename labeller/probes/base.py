"""What every probe kind shares: the field it edits, derived document ids, and the Probe interface.

A probe takes a labelled pair and makes a perturbed copy of its document that a fair judge should
grade the same way (length, near-duplicate) or no higher (stuffing, injection). The copy lives only
in memory under a derived id (`D12#probe:length`), so it never collides with a real document and is
never written into the user's corpus; the verdict cache keys it by its prompt like any other pair.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from labeller.errors import BadInputError
from labeller.records import Doc, Query
from labeller.rubric import Rubric

ID_MARK = "#probe:"
WORD = re.compile(r"[^\W_]+", re.UNICODE)


def derived_id(doc_id: str, probe: str) -> str:
    return f"{doc_id}{ID_MARK}{probe}"


def shown_text_field(names: Sequence[str], record: Query | Doc) -> str:
    """The free-text field a perturbation edits: `text` when the rubric shows it, else the longest string
    field it shows (a rubric of structured fields, like the transactions one, never shows `text`)."""
    if "text" in names:
        return "text"
    strings = [n for n in names if isinstance(record.fields.get(n), str) and record.fields[n]]
    if not strings:
        kind = "document" if isinstance(record, Doc) else "query"
        raise BadInputError(f"the rubric shows no text field of {kind}s ({', '.join(names)}) that a probe could "
                            "edit; expected `text` or a string field among them")
    return max(strings, key=lambda n: len(record.fields[n]))


def field_text(record: Query | Doc, name: str) -> str:
    return record.text if name == "text" else str(record.fields.get(name) or "")


def with_field(doc: Doc, name: str, value: str, probe: str) -> Doc:
    """A copy of `doc` under its derived id with one field replaced."""
    if name == "text":
        return doc.model_copy(update={"doc_id": derived_id(doc.doc_id, probe), "text": value})
    return doc.model_copy(update={"doc_id": derived_id(doc.doc_id, probe), "fields": {**doc.fields, name: value}})


@dataclass(frozen=True)
class Context:
    """What a probe may read to build its perturbation: the rubric, every document, and which documents
    are labelled for which query (padding is taken from other queries' documents)."""

    rubric: Rubric
    corpus: Mapping[str, Doc]
    docs_of_query: Mapping[str, Sequence[str]]


class Probe:
    """One probe kind. `low_only`: it runs on pairs the reference grades below the relevance cut only."""

    name: str = ""
    low_only: bool = False
    # The statistic the gate reads: "mean_shift" (signed, its size compared) or "mean_abs_shift".
    gated: str = "mean_shift"
    what: str = ""  # one line for reports: what the perturbation is and what a fair judge does

    def perturb(self, query: Query, doc: Doc, context: Context, rng: random.Random) -> Doc:
        raise NotImplementedError
