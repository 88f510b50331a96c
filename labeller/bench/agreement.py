"""One judge's labels against the human grades, with labeller.agreement's own figures and bootstrap.

Nothing is computed here: the labels become a GradeFile, labeller.agreement aligns and measures it
exactly as `labeller agree` does (query-resampled intervals included), and the bench keeps the
figures it shows side by side.
"""

from __future__ import annotations

from collections.abc import Sequence

from labeller.agreement import align, measure
from labeller.agreement.summary import Agreement
from labeller.bench.models import Figure
from labeller.io.gold import Clipped, GradeFile, Graded
from labeller.records import Label

SHOWN = ("kappa", "kappa_quadratic", "alpha_ordinal", "kappa_relevant", "exact_agreement")


def label_file(labels: Sequence[Label], source: str, top: int | None = None) -> GradeFile:
    """The judge's labels as a grade file on labeller's 1-5 scale. With `top` (the gold scale's top grade),
    grades above it are moved to it and listed as clipped (the LLMJudge organisers clipped LLM labels to
    the 0-3 scale before computing their figures)."""
    rows, clipped = [], []
    for line, label in enumerate(labels, start=1):
        grade = label.grade if top is None else min(label.grade, top)
        if grade != label.grade:
            clipped.append(Clipped(path=source, line=line, query_id=label.query_id, doc_id=label.doc_id,
                                   raw=label.grade, clipped_to=grade))
        rows.append(Graded(query_id=label.query_id, doc_id=label.doc_id, grade=grade, annotator=label.judge,
                           note=label.justification, line=line))
    return GradeFile(path=source, kind="labels", scale=(1, top or 5), rows=rows, clipped=clipped)


def agreement(labels: GradeFile, gold: GradeFile, *, relevant_from: int, resamples: int, seed: int,
              confidence: float) -> Agreement:
    return measure(align(labels, gold), relevant_from=relevant_from, resamples=resamples, seed=seed,
                   confidence=confidence, clip=bool(labels.clipped))


def figures(result: Agreement) -> dict[str, Figure]:
    intervals = result.ci
    return {name: Figure(value=getattr(result, name),
                         ci=intervals.kappa_binary[str(result.relevant_from)] if name == "kappa_relevant"
                         else getattr(intervals, name))
            for name in SHOWN}
