"""Relevance judgments for evaluation: `labeller label` output, human gold files, or TREC qrels.

Everything becomes grades on labeller's 1-5 scale (1 = not relevant). Tables (.jsonl, .csv,
.parquet) are labels or gold rows and are already on that scale. TREC qrels are mapped with
--from-scale (default 0-3, TREC's usual scale: 0..3 -> 1..4); --from-scale applies to qrels only,
so human qrels and `labeller label` output can be mixed in one command.
Gains handed to ranx are grade - 1 (see labeller.evaluation.metrics).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from labeller.evaluation.columnar import has_duplicate_pair, read_spaced, string_hash
from labeller.evaluation.memory_grades import memory_grades
from labeller.io.gold import DEFAULT_QRELS_SCALE, Role, label_identities, label_identity, read_grades, settled_grades
from labeller.io.memory import InMemory, as_source
from labeller.io.trec import is_ranx_json, is_table, parse_scale
from labeller.records import GRADE_MIN, Label

Grades = dict[str, dict[str, int]]  # query_id -> doc_id -> grade (1-5)


@dataclass
class Judgments:
    grades: Grades
    source: str
    kind: str  # labels | gold | qrels
    scale: str | None = None  # qrels only: the scale mapped from
    added: dict[tuple[str, str], int] = field(default_factory=dict)  # pairs labelled by --fill-holes
    judges: list[str] = field(default_factory=list)  # who labelled them (labeller.io.gold.label_identities)
    rubrics: list[str] = field(default_factory=list)  # the rubrics labeller's own labels name (their examples)
    # (query_id, doc_id) -> {"1": p, .., "5": p}: the judge's grade distribution (`label --grade-probs`), where given;
    # the corrected estimates predict with it (labeller.evaluation.corrected)
    probs: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)

    def grade(self, query_id: str, doc_id: str) -> int | None:
        return self.grades.get(query_id, {}).get(doc_id)

    def __contains__(self, pair: tuple[str, str]) -> bool:
        return pair[1] in self.grades.get(pair[0], {})

    @property
    def pairs(self) -> int:
        return sum(len(d) for d in self.grades.values())

    def relevant_queries(self, relevant_from: int) -> set[str]:
        return {q for q, docs in self.grades.items() if any(g >= relevant_from for g in docs.values())}

    def with_labels(self, labels: Iterable[Label]) -> Judgments:
        """A copy with new labels added; an existing judgment always wins over a new one."""
        grades = {q: dict(d) for q, d in self.grades.items()}
        added = dict(self.added)
        for label in labels:
            docs = grades.setdefault(label.query_id, {})
            if label.doc_id not in docs:
                docs[label.doc_id] = label.grade
                added[(label.query_id, label.doc_id)] = label.grade
        judges = list(dict.fromkeys([*self.judges, *(label_identity(label.judge, label.rubric, label.rubric_version,
                                                                    label.grading) for label in labels
                                                     if (label.query_id, label.doc_id) in added)]))
        return Judgments(grades, self.source, self.kind, self.scale, added, judges, self.rubrics, self.probs)


def load_judgments(path: str | Path, from_scale: str | None = None, role: Role = "judgments") -> Judgments:
    """Read labels, gold or qrels into grades (the same reader and checks as `labeller agree`).

    Several gold annotators on one pair give their consensus grade (or the adjudicated one), as in
    `labeller agree`.
    """
    # The columnar reader takes plain TREC qrels on one scale; anything else (tables, ranx JSON, a scale
    # per role) goes through read_grades, which also returns the exact file:line error.
    if not is_table(path) and not is_ranx_json(as_source(path)) and (from_scale is None or "=" not in from_scale):
        fast = _read_plain_qrels(path, from_scale)
        if fast is not None:
            return fast
    if isinstance(path, InMemory):  # a frame or dict from Python: in columns where the row reader would agree
        read = memory_grades(path, from_scale, role)
        if read is not None:
            return Judgments(read[0], str(path), read[1], read[2])
    graded = read_grades(path, role=role, from_scale=from_scale, clip_hint=False)  # evaluate has no --clip
    grades: Grades = {}
    for (qid, did), grade in settled_grades(graded).items():
        grades.setdefault(qid, {})[did] = grade
    scale = f"{graded.scale[0] - 1}-{graded.scale[1] - 1}" if graded.kind == "qrels" else None
    return Judgments(grades, str(path), graded.kind, scale, judges=label_identities(graded),
                     rubrics=list(dict.fromkeys(r.rubric for r in graded.rows if r.rubric)),
                     probs={(r.query_id, r.doc_id): grade_distribution(r, path) for r in graded.rows if r.grade_probs})


def grade_distribution(row, path) -> dict[str, float]:
    """A label row's grade distribution, as the corrected estimates read it: grades of the 1-5 scale, each
    probability in [0, 1], some mass somewhere."""
    from labeller.errors import BadInputError
    from labeller.records import GRADE_MAX

    probs = row.grade_probs
    known = {str(g) for g in range(GRADE_MIN, GRADE_MAX + 1)}
    if not set(probs) <= known or any(not 0 <= p <= 1 for p in probs.values()) or sum(probs.values()) <= 0:
        raise BadInputError(f"grade_probs {probs} of ({row.query_id}, {row.doc_id}) is not a grade distribution: "
                            f"expected probabilities in [0, 1] for grades {GRADE_MIN}-{GRADE_MAX} ('1'..'5'), not all 0",
                            path=str(path), line=row.line, field="grade_probs")
    return probs


def _read_plain_qrels(path: str | Path, from_scale: str | None) -> Judgments | None:
    """Well-formed TREC qrels read in columns (1M lines: about 1 s instead of 10 s of per-row records);
    None for anything the line-by-line reader must judge (it then gives the exact error)."""
    table = read_spaced(path, ["query_id", "iteration", "doc_id", "grade"],
                        {"query_id": pa.string(), "doc_id": pa.string(), "grade": pa.int64()})
    scale = parse_scale(from_scale or DEFAULT_QRELS_SCALE)
    if table is None or scale is None:
        return None
    low, high = scale
    raw = table.column("grade").to_numpy()
    if raw.min() < low or raw.max() > high:  # out of scale: the line-by-line reader names the line
        return None
    queries = table.column("query_id").combine_chunks().dictionary_encode()
    docs = table.column("doc_id").combine_chunks()
    if has_duplicate_pair(queries.indices.to_numpy().astype(np.int64), string_hash(docs)):
        return None
    grades: Grades = {}
    for qid, did, grade in zip(table.column("query_id").to_pylist(), docs.to_pylist(),
                               (raw - low + GRADE_MIN).tolist()):
        grades.setdefault(qid, {})[did] = grade
    return Judgments(grades, str(path), "qrels", f"{GRADE_MIN - 1}-{high - low}")


def ranx_qrels_dict(judgments: Judgments) -> dict[str, dict[str, int]]:
    """The judgments as a dict for `ranx.Qrels`: gains (grade - 1). Give binary metrics an explicit
    level, relevant_from - 1 (e.g. `recall@100-l2`), since ranx's default counts any gain >= 1."""
    return {q: {d: gain(g) for d, g in docs.items()} for q, docs in judgments.grades.items()}


def gain(grade: int) -> int:
    """The gain ranx sees: grade 1 (not relevant) is 0."""
    return grade - GRADE_MIN
