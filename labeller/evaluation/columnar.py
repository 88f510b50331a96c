"""Runs as columns: a TREC run read straight into Arrow/numpy arrays and sorted once, in trec_eval's order.

A 10,000-query x 1,000-document run is 10M lines; as Python dicts and lists it costs seconds and
gigabytes before any metric is computed. Here pyarrow's CSV reader parses the file (one string
array of doc ids, one float64 array of scores), queries become integer codes, and one lexsort
orders every query's documents by score descending (rounded to float32 as trec_eval does, or the
full double with exact_scores). Only rows whose scores tie are then ordered by doc id, descending
(byte order of UTF-8 = code-point order = strcmp), so the order is trec_eval's bit for bit.

The fast reader takes only what the line-by-line reader (labeller.io.trec) would read the same way:
printable ASCII separated by single spaces, six columns, finite scores, one score per pair. Any
other file goes through the line-by-line reader, which gives its exact error (file, line, field).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

# Where Python's str.split()/splitlines() and a single-space CSV split could both see six columns
# but different ones (a tab or form feed inside a field, an empty field between two spaces). Other
# differences (a leading or trailing space) change Arrow's column count, which it rejects.
_AMBIGUOUS = (b"\t", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f", b"  ")
_NAMES = ["query_id", "q0", "doc_id", "rank", "score", "tag"]


@dataclass
class RankedColumns:
    """Every query's documents, best first: docs[offsets[i]:offsets[i + 1]] belong to query_ids[i]."""

    query_ids: list[str]
    offsets: np.ndarray  # int64, len(query_ids) + 1
    docs: pa.Array  # doc ids in ranking order

    @property
    def query_codes(self) -> np.ndarray:
        """The query index of every row (rows are grouped by query)."""
        return np.repeat(np.arange(len(self.query_ids), dtype=np.int64), np.diff(self.offsets))

    def to_dict(self) -> dict[str, list[str]]:
        docs = self.docs.to_pylist()
        bounds = self.offsets.tolist()
        return {q: docs[bounds[i]:bounds[i + 1]] for i, q in enumerate(self.query_ids)}

    @classmethod
    def from_dict(cls, docs: dict[str, list[str]]) -> RankedColumns:
        lengths = np.fromiter((len(d) for d in docs.values()), dtype=np.int64, count=len(docs))
        flat = [d for ranked in docs.values() for d in ranked]
        return cls(list(docs), np.concatenate(([0], np.cumsum(lengths))), pa.array(flat, type=pa.string()))


def read_trec_columns(path: str | Path, exact_scores: bool = False) -> RankedColumns | None:
    """A TREC run ranked as trec_eval ranks it, or None when only the line-by-line reader can say
    what is wrong with (or reads exactly) this file."""
    path = Path(path)
    if not path.is_file():
        return None
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw.isascii() or any(raw.find(b) >= 0 for b in _AMBIGUOUS):
        return None
    try:
        table = pa_csv.read_csv(
            pa.BufferReader(raw),
            read_options=pa_csv.ReadOptions(column_names=_NAMES, block_size=1 << 24),
            parse_options=pa_csv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False),
            convert_options=pa_csv.ConvertOptions(
                include_columns=["query_id", "doc_id", "score"], null_values=[], strings_can_be_null=False,
                column_types={"query_id": pa.string(), "doc_id": pa.string(), "score": pa.float64()}))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    del raw
    if table.num_rows == 0:
        return None
    scores = table.column("score").to_numpy()
    if not np.isfinite(scores).all():
        return None
    queries = table.column("query_id").combine_chunks().dictionary_encode()
    docs = table.column("doc_id").combine_chunks()
    del table
    codes = queries.indices.to_numpy().astype(np.int64)
    if _has_duplicate_pair(codes, docs):
        return None
    return rank_columns(queries.dictionary.to_pylist(), codes, docs, scores, exact_scores)


def rank_columns(query_ids: list[str], codes: np.ndarray, docs: pa.Array, scores: np.ndarray,
                 exact_scores: bool = False) -> RankedColumns:
    """Sort rows by query (in sorted query-id order), score descending, then doc id descending."""
    by_name = np.argsort(np.array(query_ids, dtype=object), kind="stable")
    position = np.empty(len(query_ids), dtype=np.int64)
    position[by_name] = np.arange(len(query_ids))
    codes = position[codes]
    descending = _descending_key(scores, exact_scores)
    order = np.lexsort((descending, codes))
    codes, descending = codes[order], descending[order]
    tied = (codes[1:] == codes[:-1]) & (descending[1:] == descending[:-1])
    if tied.any():
        order = _break_ties(order, tied, docs)
    counts = np.bincount(codes, minlength=len(query_ids))
    return RankedColumns([query_ids[i] for i in by_name], np.concatenate(([0], np.cumsum(counts))),
                         docs.take(pa.array(order)))


def _descending_key(scores: np.ndarray, exact_scores: bool) -> np.ndarray:
    """Unsigned keys whose ascending order is the scores' descending order (-0.0 equal to 0.0)."""
    if exact_scores:
        bits = (scores.astype(np.float64) + 0.0).view(np.uint64)
        sign = np.uint64(1 << 63)
    else:  # trec_eval's `float sim`: the double rounded to nearest float32
        bits = (scores.astype(np.float32) + np.float32(0.0)).view(np.uint32)
        sign = np.uint32(1 << 31)
    ascending = np.where(bits & sign, ~bits, bits | sign)
    return ~ascending


def _break_ties(order: np.ndarray, tied: np.ndarray, docs: pa.Array) -> np.ndarray:
    """Within each run of tied rows, order by doc id descending (Arrow compares UTF-8 bytes)."""
    starts = np.flatnonzero(np.concatenate(([True], ~tied)))  # first row of every group (ties or single)
    group = np.repeat(np.arange(len(starts)), np.diff(np.concatenate((starts, [len(order)]))))
    in_tie = np.concatenate((tied, [False])) | np.concatenate(([False], tied))
    rows = np.flatnonzero(in_tie)
    subset = pa.table({"group": group[rows], "doc": docs.take(pa.array(order[rows]))})
    resorted = pc.sort_indices(subset, sort_keys=[("group", "ascending"), ("doc", "descending")]).to_numpy()
    order = order.copy()
    order[rows] = order[rows][resorted]
    return order


def _has_duplicate_pair(codes: np.ndarray, docs: pa.Array) -> bool:
    """True if some (query, doc) pair may appear twice: a 64-bit hash of each pair, sorted. A hash
    collision only sends the file to the exact line-by-line reader, which decides."""
    keys = _string_hash(docs) ^ (codes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    keys.sort()
    return bool((keys[1:] == keys[:-1]).any())


def _string_hash(strings: pa.Array) -> np.ndarray:
    """FNV-1a-style 64-bit hash of every string, vectorized over character positions."""
    strings = strings.cast(pa.large_string()) if strings.type != pa.large_string() else strings
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)[strings.offset:strings.offset + len(strings) + 1]
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)
    lengths = np.diff(offsets)
    hashed = np.full(len(strings), 0xCBF29CE484222325, dtype=np.uint64)
    prime = np.uint64(0x100000001B3)
    starts = offsets[:-1]
    for j in range(int(lengths.max(initial=0))):
        live = lengths > j
        byte = np.zeros(len(strings), dtype=np.uint64)
        byte[live] = data[starts[live] + j]
        hashed = np.where(live, (hashed ^ byte) * prime, hashed)
    return hashed ^ lengths.astype(np.uint64)
