"""Grades handed over from Python (a frame of query_id, doc_id and grade, or a ranx-style {query: {doc: grade}}
dict) read in columns, as evaluation.qrels reads a plain TREC qrels file: what io.gold.read_grades would give,
without a record per row. None wherever the row reader must decide (another column, a null, blank or non-text id,
a grade that is not a whole number or is outside its scale, a pair given twice, a --columns mapping); it then
reads the rows and names the one at fault."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from labeller.evaluation.columnar import frame_ids, has_duplicate_pair, string_hash
from labeller.io.gold import DEFAULT_QRELS_SCALE
from labeller.io.memory import InMemory
from labeller.io.scales import scale_of
from labeller.io.trec import parse_scale
from labeller.records import GRADE_MAX, GRADE_MIN

_GOLD_ROLES = ("judgments", "labels-alt", "gold")  # a table of these three columns is gold for them (io.gold)


def memory_grades(source: InMemory, from_scale: str | None,
                  role: str) -> tuple[dict[str, dict[str, int]], str, str | None] | None:
    """An in-memory frame's or dict's (grades on 1-5, kind, qrels scale) as evaluation.qrels.Judgments holds them,
    or None for the row reader."""
    from labeller.io.columns import mapped_sources

    given = scale_of(from_scale, role)
    try:
        if source.mapping is not None:  # ranx Qrels: TREC's grades, on the qrels scale
            kind = "qrels"
            low, high = parse_scale(given or (from_scale if from_scale and "=" not in from_scale else None)
                                    or DEFAULT_QRELS_SCALE)
            pairs = [(str(q), str(d), g) for q, docs in source.mapping.items() for d, g in docs.items()]
            if any(type(g) is not int for _, _, g in pairs):
                return None  # a float, text or bool grade: the row reader's rules
            queries = pa.array([q for q, _, _ in pairs], type=pa.string())
            docs = pa.array([d for _, d, _ in pairs], type=pa.string())
            raw = np.array([g for _, _, g in pairs], dtype=np.int64)
        else:
            frame = source.frame
            if mapped_sources() or role not in _GOLD_ROLES or sorted(map(str, frame.columns)) != [
                    "doc_id", "grade", "query_id"]:
                return None
            if frame["grade"].dtype.kind not in "iu":
                return None
            kind = "gold"
            low, high = parse_scale(given) or (GRADE_MIN, GRADE_MAX)
            queries, docs = frame_ids(frame["query_id"]), frame_ids(frame["doc_id"])
            raw = frame["grade"].to_numpy(dtype=np.int64)
    except (TypeError, ValueError, pa.ArrowException):  # a value the row reader judges (None, a list, ...)
        return None
    if not len(raw) or queries.null_count or docs.null_count or raw.min() < low or raw.max() > high \
            or high - low + GRADE_MIN > GRADE_MAX:
        return None
    if min(pc.min(pc.utf8_length(pc.utf8_trim_whitespace(a))).as_py() for a in (queries, docs)) == 0:
        return None  # a blank id
    encoded = queries.dictionary_encode()
    if has_duplicate_pair(encoded.indices.to_numpy().astype(np.int64), string_hash(docs)):
        return None  # several people on one pair, or a pair twice: the row reader settles or refuses it
    grades: dict[str, dict[str, int]] = {}
    for qid, did, grade in zip(queries.to_pylist(), docs.to_pylist(), (raw - low + GRADE_MIN).tolist()):
        grades.setdefault(qid, {})[did] = grade
    return grades, kind, f"{GRADE_MIN - 1}-{high - low}" if kind == "qrels" else None
