"""Warn when a rubric's worked examples are among the gold pairs that judge it.

An example shown to the judge in every prompt is one the judge gets right for free; if the same pair
is in the held-out gold set, agreement and the prompt-change gate look better than they are. Examples
are matched by ids when the rubric gives them, else by text, which needs the queries and corpus files:
whitespace and case are folded, and a gold text counts as shown when it is the example's text or sits
inside it (a rubric may show a document with its fields around the text).
"""

from __future__ import annotations

from labeller.records import Doc, Pair, Query, Record
from labeller.rubric import Rubric


class LeakedExample(Record):
    example: int  # 1-based position in the rubric
    query_id: str
    doc_id: str
    matched_by: str  # "ids" or "text"


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def leaked_examples(rubric: Rubric, gold_pairs: list[Pair], queries: dict[str, Query] | None = None,
                    corpus: dict[str, Doc] | None = None) -> list[LeakedExample]:
    pairs = {(p.query_id, p.doc_id) for p in gold_pairs}
    texts: list[tuple[str, str, str, str]] = []
    if queries is not None and corpus is not None:
        texts = [(_fold(queries[q].text), _fold(corpus[d].text), q, d)
                 for q, d in sorted(pairs) if q in queries and d in corpus]
    found = []
    for number, example in enumerate(rubric.examples, start=1):
        if (example.query_id, example.doc_id) in pairs:
            found.append(LeakedExample(example=number, query_id=example.query_id, doc_id=example.doc_id,
                                       matched_by="ids"))
            continue
        shown_query, shown_doc = _fold(example.query), _fold(example.document)
        for query, doc, q, d in texts:
            if _shown(query, shown_query) and _shown(doc, shown_doc):
                found.append(LeakedExample(example=number, query_id=q, doc_id=d, matched_by="text"))
                break
    return found


def _shown(text: str, shown: str) -> bool:
    # containment only for texts long enough not to match by accident
    return text == shown or (len(text) >= 12 and text in shown)


def leakage_warning(rubric: Rubric, leaked: list[LeakedExample]) -> str | None:
    if not leaked:
        return None
    which = ", ".join(f"example {x.example} = ({x.query_id}, {x.doc_id})" for x in leaked)
    return (f"rubric '{rubric.name}' shows {len(leaked)} of its worked examples to the judge that are also in the "
            f"gold set ({which}): tuning examples in the held-out set make agreement and the gate look better "
            "than they are; move them out of the gold set or out of the rubric")
