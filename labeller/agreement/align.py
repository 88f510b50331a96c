"""Join judge labels with human gold, pair by pair, keeping every pair that is on one side only.

A pair several people graded is compared on its consensus grade (the median; an even split takes the
lower middle grade), and each person's grade and note are kept for the report and the human ceiling.
A pair settled in adjudication (`labeller annotate`) is compared on the adjudicated grade instead.
"""

from __future__ import annotations

from labeller.errors import BadInputError
from labeller.io.gold import Clipped, GradeFile, Graded, settled_grade
from labeller.records import GRADE_MIN, Pair, Record


class HumanGrade(Record):
    annotator: str
    grade: int
    note: str = ""
    adjudicated: bool = False  # settled after the blind pass: not part of the human ceiling


class AlignedPair(Record):
    query_id: str
    doc_id: str
    judge: int
    gold: int  # consensus of the human grades
    justification: str = ""
    humans: list[HumanGrade]

    @property
    def difference(self) -> int:
        """Judge minus human: positive when the judge is more generous."""
        return self.judge - self.gold


class Alignment(Record):
    grades: list[int]  # the whole scale compared, e.g. [1, 2, 3, 4] for 0-3 qrels
    pairs: list[AlignedPair]  # sorted by query, then document
    labels_only: list[Pair]
    labels_only_grades: list[int]  # the judge's grades of those pairs, for the prediction-powered estimate
    gold_only: list[Pair]
    clipped: list[Clipped]
    labels_path: str
    gold_path: str


def _by_pair(rows: list[Graded]) -> dict[tuple[str, str], list[Graded]]:
    out: dict[tuple[str, str], list[Graded]] = {}
    for row in rows:
        out.setdefault((row.query_id, row.doc_id), []).append(row)
    return out


def align(labels: GradeFile, gold: GradeFile) -> Alignment:
    """Pairs graded on both sides, plus those on one side only. Raises when no pair is shared."""
    judged = {(r.query_id, r.doc_id): r for r in labels.rows}
    human = _by_pair(gold.rows)
    shared = sorted(judged.keys() & human.keys())
    if not shared:
        raise BadInputError(f"no pair appears in both {labels.path} and {gold.path}; expected labels for the "
                            "gold pairs (same query_id and doc_id)", path=labels.path)
    pairs = [AlignedPair(query_id=q, doc_id=d, judge=judged[q, d].grade, justification=judged[q, d].note,
                         gold=settled_grade(human[q, d]),
                         humans=[HumanGrade(annotator=h.annotator, grade=h.grade, note=h.note, adjudicated=h.adjudicated)
                                 for h in human[q, d]])
             for q, d in shared]
    top = max(labels.scale[1], gold.scale[1])
    only_labels = sorted(judged.keys() - human.keys())
    return Alignment(grades=list(range(GRADE_MIN, top + 1)), pairs=pairs,
                     labels_only=[Pair(query_id=q, doc_id=d) for q, d in only_labels],
                     labels_only_grades=[judged[p].grade for p in only_labels],
                     gold_only=[Pair(query_id=q, doc_id=d) for q, d in sorted(human.keys() - judged.keys())],
                     clipped=labels.clipped + gold.clipped, labels_path=labels.path, gold_path=gold.path)
