"""What the progress, agreement and adjudication views show, computed from the gold rows.

Human-human agreement is labeller's own (labeller.agreement.ceiling, as in `labeller agree`), on the pairs
two or more people graded. Below MIN_SHARED shared pairs the figures are withheld: with fewer, a
kappa's interval spans most of its range (Quepid keeps the same floor for ordinal alpha).
"""

from __future__ import annotations

import numpy as np

from labeller.agreement.ceiling import people_agreement
from labeller.annotate.sample import SampleRow
from labeller.annotate.sources import Candidate
from labeller.io.gold import consensus_grade
from labeller.records import GRADE_MAX, GRADE_MIN, GoldLabel, Record

MIN_SHARED = 30
GRADES = list(range(GRADE_MIN, GRADE_MAX + 1))
OUTCOMES = ("graded", "cant_judge", "later")


class Progress(Record):
    annotator: str
    assigned: int
    graded: int = 0
    cant_judge: int = 0
    later: int = 0

    @property
    def done(self) -> int:  # "later" is a promise to come back, so it is not done
        return self.graded + self.cant_judge


class Distribution(Record):
    annotator: str
    grades: dict[int, int]  # grade -> how many pairs
    cant_judge: int
    later: int


class PairGrades(Record):
    query_id: str
    doc_id: str
    position: int
    grades: dict[str, int]  # annotator -> grade
    notes: dict[str, str]


class AgreementView(Record):
    shared_pairs: int
    min_shared: int = MIN_SHARED
    enough: bool
    kappa: float | None = None
    kappa_quadratic: float | None = None
    alpha_ordinal: float | None = None
    exact_agreement: float | None = None
    progress: list[Progress]
    distributions: list[Distribution]
    blind_pass_done: bool
    disagreements: list[PairGrades] | None = None  # None while the blind pass goes on (grades stay private)


def blind(rows: list[GoldLabel]) -> list[GoldLabel]:
    return [r for r in rows if r.outcome != "adjudicated"]


def progress(assignment: dict[str, list[SampleRow]], rows: list[GoldLabel]) -> list[Progress]:
    mine = {(r.annotator, r.query_id, r.doc_id): r.outcome for r in blind(rows)}
    out = []
    for name, pairs in assignment.items():
        counts = {o: 0 for o in OUTCOMES}
        for p in pairs:
            outcome = mine.get((name, p.query_id, p.doc_id))
            if outcome:
                counts[outcome] += 1
        out.append(Progress(annotator=name, assigned=len(pairs), **counts))
    return out


def graded_by_pair(rows: list[GoldLabel], position: dict[tuple[str, str], int]) -> list[PairGrades]:
    by_pair: dict[tuple[str, str], PairGrades] = {}
    for r in blind(rows):
        if r.outcome == "graded":
            entry = by_pair.setdefault((r.query_id, r.doc_id), PairGrades(
                query_id=r.query_id, doc_id=r.doc_id, position=position[r.query_id, r.doc_id], grades={}, notes={}))
            entry.grades[r.annotator] = r.grade
            entry.notes[r.annotator] = r.note
    return sorted(by_pair.values(), key=lambda p: p.position)


def agreement_view(assignment: dict[str, list[SampleRow]], rows: list[GoldLabel],
                   position: dict[tuple[str, str], int], *, open_review: bool = False) -> AgreementView:
    shared = [p for p in graded_by_pair(rows, position) if len(p.grades) >= 2]
    done = progress(assignment, rows)
    finished = all(p.done == p.assigned for p in done)
    figures = _figures(shared) if len(shared) >= MIN_SHARED else {}
    disagreements = None
    if finished or open_review:
        disagreements = sorted((p for p in shared if len(set(p.grades.values())) > 1),
                               key=lambda p: (-(max(p.grades.values()) - min(p.grades.values())), p.position))
    return AgreementView(shared_pairs=len(shared), enough=len(shared) >= MIN_SHARED, progress=done,
                         distributions=_distributions(assignment, rows), blind_pass_done=finished,
                         disagreements=disagreements, **figures)


def _figures(shared: list[PairGrades]) -> dict[str, float | None]:
    names = sorted({a for p in shared for a in p.grades})
    data = np.array([[p.grades.get(a, np.nan) for a in names] for p in shared], dtype=float)
    return people_agreement(data, GRADES)


def _distributions(assignment: dict[str, list[SampleRow]], rows: list[GoldLabel]) -> list[Distribution]:
    out = []
    for name in assignment:
        mine = [r for r in blind(rows) if r.annotator == name]
        out.append(Distribution(annotator=name, grades={g: sum(r.grade == g for r in mine) for g in GRADES},
                                cant_judge=sum(r.outcome == "cant_judge" for r in mine),
                                later=sum(r.outcome == "later" for r in mine)))
    return out


class AdjudicationItem(Record):
    query_id: str
    doc_id: str
    position: int
    humans: list[dict]  # annotator, grade, note
    consensus: int
    judge_grade: int | None = None
    judge_justification: str = ""
    reason: str  # why it is listed: people disagree, or people and judge disagree
    decision: dict | None = None  # the adjudicated row so far: grade, note, rubric_problem, annotator
    query: list[list[str]] = []  # [field, value] as the rubric names them
    doc: list[list[str]] = []


def adjudication_items(rows: list[GoldLabel], position: dict[tuple[str, str], int],
                       labels: dict[tuple[str, str], Candidate] | None) -> list[AdjudicationItem]:
    """Pairs people disagreed on, and pairs where their consensus differs from the judge's grade."""
    decided = {(r.query_id, r.doc_id): r for r in rows if r.outcome == "adjudicated"}
    out = []
    for p in graded_by_pair(rows, position):
        consensus = consensus_grade(list(p.grades.values()))
        label = (labels or {}).get((p.query_id, p.doc_id))
        reasons = []
        if len(set(p.grades.values())) > 1:
            reasons.append("people disagree")
        if label is not None and label.judge_grade != consensus:
            reasons.append("judge differs")
        if not reasons:
            continue
        decision = decided.get((p.query_id, p.doc_id))
        out.append(AdjudicationItem(
            query_id=p.query_id, doc_id=p.doc_id, position=p.position, consensus=consensus,
            humans=[{"annotator": a, "grade": g, "note": p.notes[a]} for a, g in sorted(p.grades.items())],
            judge_grade=label.judge_grade if label else None,
            judge_justification=label.justification if label else "",
            reason=" and ".join(reasons),
            decision=decision.model_dump(include={"annotator", "grade", "note", "rubric_problem"}) if decision else None))
    return out
