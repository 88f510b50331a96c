"""Runs as rankings in trec_eval's order.

trec_eval ignores the rank column and orders each query's documents by score, descending, with
tied scores ordered by document id, descending (strcmp; Python's str order is the same code-point
order). trec_eval keeps a score as a C `float` (32 bits: `float sim` in trec_format.h, parsed by
atof into a double, then rounded), so two scores that differ only beyond single precision tie and
go by document id. labeller rounds each score the same way (double -> float32, round to nearest)
before ranking, so its order is trec_eval's bit for bit; `exact_scores=True` ranks by the full
double instead, for runs whose scores carry real information below 1e-7 of their size.
A TREC run is read and ranked in columns (labeller.evaluation.columnar) whenever the fast reader
can read it exactly; other files go line by line here. Either way the order is the same.
ranx (scoring with LABELLER_JIT=on|off) would break ties its own way (an unstable sort on hashed
ids), so labeller hands it strictly decreasing pseudo-scores in this order (see
labeller.evaluation.scoring): ranx then scores exactly the ranking trec_eval scores.
"""

from __future__ import annotations

import math
import random
from array import array
from pathlib import Path

from labeller.errors import BadInputError
from labeller.evaluation.columnar import RankedColumns, memory_columns, read_trec_columns
from labeller.io.memory import InMemory, as_source
from labeller.io.trec import gc_paused, is_ranx_json, is_table, read_run, read_run_scores
from labeller.records import RunEntry


class Ranking:
    """A run's rankings, as columns (how evaluation scores them) or as query -> doc ids, best first, in
    trec_eval's order (for hole filling and hand-made rankings); each form is built from the other on
    first use, so a 10M-line run scored in columns never becomes 10M Python strings."""

    def __init__(self, name: str, source: str = "", docs: dict[str, list[str]] | None = None,
                 columns: RankedColumns | None = None):
        if docs is None and columns is None:
            raise ValueError("a Ranking needs docs or columns")
        self.name, self.source = name, source
        self._docs, self._columns, self._queries = docs, columns, None

    @property
    def docs(self) -> dict[str, list[str]]:
        if self._docs is None:
            self._docs = self._columns.to_dict()
        return self._docs

    @property
    def columns(self) -> RankedColumns:
        if self._columns is None:
            self._columns = RankedColumns.from_dict(self._docs)
        return self._columns

    @property
    def query_ids(self) -> set[str]:
        if self._queries is None:
            self._queries = set(self._docs if self._docs is not None else self._columns.query_ids)
        return self._queries

    @property
    def size(self) -> int:
        return sum(len(d) for d in self.docs.values()) if self._columns is None else len(self._columns.docs)

    def top(self, query_id: str, k: int) -> list[str]:
        docs = self.docs.get(query_id, [])
        return docs[:k] if k else docs


def rank(entries: list[RunEntry], name: str, source: str = "", exact_scores: bool = False) -> Ranking:
    """Order each query's entries by score descending, ties by doc id descending (trec_eval)."""
    scores: dict[str, dict[str, float]] = {}
    for entry in entries:
        if not math.isfinite(entry.score):
            raise BadInputError(f"score {entry.score} for ({entry.query_id}, {entry.doc_id}) is not a finite number",
                                path=source or None, field="score")
        scores.setdefault(entry.query_id, {})[entry.doc_id] = entry.score
    return _rank_scored(scores, name, source, exact_scores)


def run_name(path: str | Path) -> str:
    """A short display name: the file name without .gz and the format suffix (an in-memory run's own)."""
    if isinstance(path, InMemory):
        return path.name
    name = Path(path).name
    for suffix in (".gz", ".trec", ".run", ".txt", ".tsv", ".jsonl", ".json", ".csv", ".parquet"):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def load_run(path: str | Path, name: str | None = None, exact_scores: bool = False) -> Ranking:
    """Read a TREC run or a JSONL/CSV/Parquet run (query_id, doc_id, score[, rank]) as a Ranking."""
    name = name or run_name(path)
    if isinstance(path, InMemory):  # a DataFrame or dict from Python: in columns where it reads as its rows would
        columns = memory_columns(path, exact_scores)
        if columns is not None:
            return Ranking(name=name, source=str(path), columns=columns)
    if is_table(path) and not is_ranx_json(as_source(path)):  # a ranx JSON run takes the lean path, like TREC
        return rank(read_run(path), name, str(path), exact_scores)
    columns = None if is_ranx_json(as_source(path)) else read_trec_columns(path, exact_scores)  # None: line by line
    if columns is not None:
        return Ranking(name=name, source=str(path), columns=columns)
    return _rank_scored(read_run_scores(path), name, str(path), exact_scores)


def as_trec_eval_sees(scores) -> list[float]:
    """The scores as trec_eval holds them: each rounded to a 32-bit float (array('f') rounds to
    nearest, as C's double-to-float conversion does), back as Python floats."""
    return array("f", scores).tolist()


def _rank_scored(scores: dict[str, dict[str, float]], name: str, source: str, exact_scores: bool = False) -> Ranking:
    with gc_paused():
        if exact_scores:
            docs = {q: [d for _, d in sorted(zip(ds.values(), ds.keys()), reverse=True)] for q, ds in scores.items()}
        else:
            docs = {q: [d for _, d in sorted(zip(as_trec_eval_sees(ds.values()), ds.keys()), reverse=True)]
                    for q, ds in scores.items()}
    return Ranking(name=name, source=source, docs=docs)


def shuffle_top(ranking: Ranking, depth: int, seed: int = 0, name: str | None = None) -> Ranking:
    """A deliberately degraded copy: each query's top `depth` documents in a random order.

    Used to check that the regression gate fires; deterministic for a given seed.
    """
    rng = random.Random(seed)
    docs = {}
    for qid in sorted(ranking.docs):
        head, tail = ranking.docs[qid][:depth], ranking.docs[qid][depth:]
        rng.shuffle(head)
        docs[qid] = head + tail
    return Ranking(name=name or f"{ranking.name}-shuffled", source=ranking.source, docs=docs)


def ranx_run_dict(ranking: Ranking) -> dict[str, dict[str, float]]:
    """The ranking as a dict for `ranx.Run`: strictly decreasing pseudo-scores (n, ..., 1) in
    trec_eval's order, so ranx, which breaks ties its own way, ranks exactly as trec_eval does."""
    return {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in ranking.docs.items()}


def to_trec(ranking: Ranking, tag: str = "labeller") -> str:
    """The ranking as TREC run text whose scores reproduce its order under trec_eval."""
    lines = []
    for qid in sorted(ranking.docs):
        n = len(ranking.docs[qid])
        lines += [f"{qid} Q0 {d} {i} {n - i + 1} {tag}\n" for i, d in enumerate(ranking.docs[qid], start=1)]
    return "".join(lines)
