"""Several judges of one slice: how far they agree with each other, and each one (and the jury) with gold.

Inter-judge agreement is Cohen's kappa, plain and quadratic, for every pair of judges on the pairs both
graded (sklearn's, through agreement.kappa), and ordinal Krippendorff's alpha across all judges at once
(agreement.alpha; it takes a pair only some judges graded). Against gold each judge is measured exactly as
`labeller agree` measures one label file (align + measure), so its kappa and query-bootstrap interval are
the ones a single-judge report would print.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from pathlib import Path

import numpy as np

from labeller.agreement.alpha import ordinal_alpha
from labeller.agreement.align import align
from labeller.agreement.bootstrap import Interval
from labeller.agreement.kappa import cohen_kappa
from labeller.agreement.measure import measure
from labeller.io.gold import GradeFile, Graded
from labeller.io.memory import as_source
from labeller.records import GRADE_MAX, GRADE_MIN, Record

GRADES = list(range(GRADE_MIN, GRADE_MAX + 1))
Grades = Mapping[tuple[str, str], int]  # (query_id, doc_id) -> grade
ESCALATED = "escalated (final labels)"  # the name of an escalation file's own grades in a report


class PairwiseAgreement(Record):
    first: str
    second: str
    n: int  # pairs both judges graded
    kappa: float | None
    kappa_quadratic: float | None
    exact_agreement: float | None


class InterJudge(Record):
    """How much the judges of a jury agree with each other."""

    judges: list[str]
    pairwise: list[PairwiseAgreement]
    alpha_ordinal: float | None  # Krippendorff's alpha (ordinal) across all judges
    units: int  # pairs graded by at least two judges (what alpha is computed on)


class JudgeAgreement(Record):
    """One judge (or the jury, or an escalated label set) against human gold."""

    name: str
    n: int
    kappa: float | None
    kappa_ci: Interval
    kappa_quadratic: float | None
    kappa_quadratic_ci: Interval
    alpha_ordinal: float | None
    kappa_relevant: float | None
    exact_agreement: float


def inter_judge(by_judge: Mapping[str, Grades]) -> InterJudge:
    names = list(by_judge)
    pairwise = []
    for a, b in combinations(names, 2):
        shared = sorted(by_judge[a].keys() & by_judge[b].keys())
        first = [by_judge[a][p] for p in shared]
        second = [by_judge[b][p] for p in shared]
        pairwise.append(PairwiseAgreement(
            first=a, second=b, n=len(shared), kappa=cohen_kappa(first, second, GRADES),
            kappa_quadratic=cohen_kappa(first, second, GRADES, "quadratic"),
            exact_agreement=float(np.mean(np.equal(first, second))) if shared else None))
    units = sorted(set().union(*(g.keys() for g in by_judge.values()))) if names else []
    data = np.array([[by_judge[j].get(u, np.nan) for j in names] for u in units], dtype=float).reshape(-1, len(names))
    pairable = int((np.sum(~np.isnan(data), axis=1) >= 2).sum()) if len(units) else 0
    alpha = ordinal_alpha(data, GRADES) if pairable else None
    return InterJudge(judges=names, pairwise=pairwise, alpha_ordinal=alpha, units=pairable)


def grade_file(name: str, grades: Grades, path: str = "") -> GradeFile:
    """In-memory grades as a label file, for align()."""
    rows = [Graded(query_id=q, doc_id=d, grade=g, annotator=name, line=i)
            for i, ((q, d), g) in enumerate(sorted(grades.items()), start=1)]
    return GradeFile(path=path or name, kind="labels", scale=(GRADE_MIN, GRADE_MAX), rows=rows)


def against_gold(by_name: Mapping[str, Grades], gold: GradeFile, *, relevant_from: int = 3, resamples: int = 1000,
                 seed: int = 0, confidence: float = 0.95) -> list[JudgeAgreement]:
    """One row per label set that shares a pair with the gold set, in the order given."""
    rows = []
    for name, grades in by_name.items():
        file = grade_file(name, grades)
        if not {(r.query_id, r.doc_id) for r in gold.rows} & grades.keys():
            continue  # an expensive judge asked about no gold pair has nothing to be measured on
        a = measure(align(file, gold), relevant_from=relevant_from, resamples=resamples, seed=seed,
                    confidence=confidence)
        rows.append(JudgeAgreement(name=name, n=a.n, kappa=a.kappa, kappa_ci=a.ci.kappa, kappa_quadratic=a.kappa_quadratic,
                                   kappa_quadratic_ci=a.ci.kappa_quadratic, alpha_ordinal=a.alpha_ordinal,
                                   kappa_relevant=a.kappa_relevant, exact_agreement=a.exact_agreement))
    return rows


def label_sets_in_file(path: str | Path, final: GradeFile) -> dict[str, dict[tuple[str, str], int]] | None:
    """A jury or escalation label file's grade sets: each judge's (from `judge_grades`), then the file's own
    final grades under its judge name. None for a file without `judge_grades` (one judge's labels)."""
    from labeller.io.tables import read_rows
    from labeller.io.trec import is_table
    from labeller.records import Label

    if not is_table(as_source(path)):
        return None
    sets: dict[str, dict[tuple[str, str], int]] = {}
    final_name = "labels"
    for _, row in read_rows(path, role="grades"):
        if row.get("judge_grades") in (None, "") or "cache_key" not in row:
            continue
        label = Label.model_validate(row)  # already validated by read_grades: this only parses judge_grades
        final_name = ESCALATED if label.escalated is not None else label.judge
        for judge, grade in (label.judge_grades or {}).items():
            sets.setdefault(judge, {})[(label.query_id, label.doc_id)] = grade
    if not sets:
        return None
    sets[final_name] = {(r.query_id, r.doc_id): r.grade for r in final.rows}
    return sets
