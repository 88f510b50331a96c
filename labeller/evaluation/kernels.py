"""Metrics over a columnar ranking, vectorized with numpy: every query at once, no per-query Python.

Each ranked row gets its grade (0 when unjudged) from a 64-bit key of (query, doc id hash): a
bitmap rules most rows out, a binary search among the judged keys finds the rest, and every match
is confirmed on the doc id itself. A metric is then a masked
bincount over rows (`rank < k`), the definitions being ranx's (which tests check against
trec_eval): relevant means gain >= level, gain = grade - 1; NDCG's ideal ranking is the query's
judgments by gain, cut at k; precision divides by k; recall, AP and RR are 0 without a relevant
judgment; a cutoff of 0 is the whole ranking.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from labeller.evaluation.columnar import RankedColumns, pair_keys, string_hash
from labeller.evaluation.metrics import MetricSpec
from labeller.evaluation.qrels import Judgments
from labeller.records import GRADE_MIN

_BITMAP = 1 << 25


class JoinedRanking:
    """A ranking's rows with their judgments: grade, rank and query code of every row."""

    def __init__(self, columns: RankedColumns, judgments: Judgments):
        self.query_ids = columns.query_ids
        self.size = len(columns.query_ids)
        self.codes = columns.query_codes
        self.lengths = np.diff(columns.offsets)
        # 32-bit codes and ranks, 8-bit grades: these arrays are as long as the run
        self.rank = (np.arange(len(self.codes), dtype=np.int64) - columns.offsets[self.codes]).astype(np.int32)
        judged_codes, judged_docs, judged_grades = [], [], []
        for code, qid in enumerate(self.query_ids):
            docs = judgments.grades.get(qid)
            if docs:
                judged_codes.append(np.full(len(docs), code, dtype=np.int64))
                judged_docs.extend(docs)
                judged_grades.extend(docs.values())
        self.judged_codes = np.concatenate(judged_codes) if judged_codes else np.zeros(0, dtype=np.int64)
        self.judged_grades = np.array(judged_grades, dtype=np.int64)
        self.grade = self._row_grades(columns, judgments, pa.array(judged_docs, type=pa.string()))

    def _row_grades(self, columns: RankedColumns, judgments: Judgments, judged_docs: pa.Array) -> np.ndarray:
        """Each row's grade, 0 if unjudged: (query, doc-hash) keys matched by binary search, every
        match confirmed on the doc id itself; a row whose hash collided is looked up by name."""
        grade = np.zeros(len(self.codes), dtype=np.int8)
        if not len(judged_docs):
            return grade
        judged_keys = pair_keys(self.judged_codes, string_hash(judged_docs))
        order = np.argsort(judged_keys, kind="stable")
        judged_keys = judged_keys[order]
        keys = pair_keys(self.codes, columns.hashes())
        # Most rows are unjudged: a 32M-slot bitmap of the judged keys' low bits rules them out with
        # one cache-friendly lookup each, so only the few left pay for a binary search.
        bitmap = np.zeros(_BITMAP, dtype=bool)
        bitmap[judged_keys & np.uint64(_BITMAP - 1)] = True
        candidates = np.flatnonzero(bitmap[keys & np.uint64(_BITMAP - 1)])
        found = np.minimum(np.searchsorted(judged_keys, keys[candidates]), len(judged_keys) - 1)
        match = judged_keys[found] == keys[candidates]
        rows, source = candidates[match], order[found[match]]
        same = (self.judged_codes[source] == self.codes[rows]) & pc.equal(
            columns.docs.take(pa.array(rows)), judged_docs.take(pa.array(source))).to_numpy(zero_copy_only=False)
        grade[rows[same]] = self.judged_grades[source[same]]
        for row in rows[~same].tolist():  # a hash collision: rare, so by name
            docs = judgments.grades.get(self.query_ids[self.codes[row]], {})
            grade[row] = docs.get(columns.docs[row].as_py(), 0)
        return grade

    def _per_query(self, weights: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        codes = self.codes if mask is None else self.codes[mask]
        values = weights if mask is None else weights[mask]
        return np.bincount(codes, weights=values, minlength=self.size)

    def _top(self, k: int) -> np.ndarray | None:
        return self.rank < k if k else None

    def relevant_count(self, level: int) -> np.ndarray:
        relevant = (self.judged_grades - GRADE_MIN) >= level
        return np.bincount(self.judged_codes[relevant], minlength=self.size).astype(np.float64)

    def values(self, spec: MetricSpec, relevant_from: int, gain: str) -> np.ndarray:
        """The metric of every query of the ranking (index = query code)."""
        level = spec.level(relevant_from)
        gains = np.where(self.grade > 0, self.grade - GRADE_MIN, 0)
        if spec.kind == "ndcg":
            return self._ndcg(gains, spec.k, gain)
        relevant = (gains >= level) & (self.grade > 0)
        total = self.relevant_count(level)
        top = self._top(spec.k)
        hits = self._per_query(relevant.astype(np.float64), top)
        with np.errstate(divide="ignore", invalid="ignore"):
            if spec.kind == "recall":
                return np.where(total > 0, hits / total, 0.0)
            if spec.kind == "precision":
                return hits / (spec.k if spec.k else np.maximum(self.lengths, 1))
            if spec.kind == "hit_rate":
                return np.where((total > 0) & (hits > 0), 1.0, 0.0)
            if spec.kind == "mrr":
                return self._reciprocal_rank(relevant, top)
            if spec.kind == "map":
                return self._average_precision(relevant, top, total)
        raise ValueError(f"no kernel for {spec.kind}")

    def _ndcg(self, gains: np.ndarray, k: int, gain: str) -> np.ndarray:
        def weighted(g: np.ndarray, rank: np.ndarray) -> np.ndarray:
            g = g.astype(np.float64)
            return (g if gain == "linear" else np.exp2(g) - 1.0) / np.log2(rank + 2.0)

        dcg = self._per_query(weighted(gains, self.rank), self._top(k))
        ideal_gains = self.judged_grades - GRADE_MIN
        order = np.lexsort((-ideal_gains, self.judged_codes))
        codes, ideal_gains = self.judged_codes[order], ideal_gains[order]
        starts = np.searchsorted(codes, np.arange(self.size))
        ideal_rank = np.arange(len(codes)) - starts[codes]
        keep = (ideal_rank < k) if k else np.ones(len(codes), dtype=bool)
        idcg = np.bincount(codes[keep], weights=weighted(ideal_gains, ideal_rank)[keep], minlength=self.size)
        return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)

    def _reciprocal_rank(self, relevant: np.ndarray, top: np.ndarray | None) -> np.ndarray:
        rows = np.flatnonzero(relevant if top is None else relevant & top)
        codes = self.codes[rows]
        first = rows[np.concatenate(([True], codes[1:] != codes[:-1]))] if len(rows) else rows
        out = np.zeros(self.size)
        out[self.codes[first]] = 1.0 / (self.rank[first] + 1.0)
        return out

    def _average_precision(self, relevant: np.ndarray, top: np.ndarray | None, total: np.ndarray) -> np.ndarray:
        running = np.cumsum(relevant)
        before = np.concatenate(([0], running))[np.searchsorted(self.codes, np.arange(self.size))]
        hits_so_far = running - before[self.codes]
        precision = np.where(relevant, hits_so_far / (self.rank + 1.0), 0.0)
        summed = self._per_query(precision, top)
        return np.where(total > 0, summed / np.where(total > 0, total, 1.0), 0.0)

    def judged(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(judged share of each query's top min(k, returned), unjudged pairs there), per query."""
        top = self.rank < k
        judged = self._per_query((self.grade > 0).astype(np.float64), top)
        shown = np.minimum(self.lengths, k).astype(np.float64)
        return np.where(shown > 0, judged / np.maximum(shown, 1.0), 0.0), shown - judged
