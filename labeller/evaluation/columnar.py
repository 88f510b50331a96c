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

from labeller.io.memory import InMemory

# The bytes the fast reader takes: printable ASCII, space or tab as the one separator of the file,
# line ends. Anything else (a form feed Python's str.split() would cut at, non-ASCII text, spaces
# and tabs mixed) goes to the line-by-line reader, as does an empty field between two separators.
# Other differences (a leading or trailing separator) change Arrow's column count, which it rejects.
_PLAIN = bytes(range(0x20, 0x7F)) + b"\t\n\r"
_CHUNK = 1 << 20  # rows per step of the vectorized loops
_NAMES = ["query_id", "q0", "doc_id", "rank", "score", "tag"]


@dataclass
class RankedColumns:
    """Every query's documents, best first: docs[offsets[i]:offsets[i + 1]] belong to query_ids[i]."""

    query_ids: list[str]
    offsets: np.ndarray  # int64, len(query_ids) + 1
    docs: pa.Array  # doc ids in ranking order
    doc_hash: np.ndarray | None = None  # string_hash(docs), when the reader had it already

    def hashes(self) -> np.ndarray:
        if self.doc_hash is None:
            self.doc_hash = string_hash(self.docs)
        return self.doc_hash

    @property
    def query_codes(self) -> np.ndarray:
        """The query index of every row (rows are grouped by query)."""
        return np.repeat(np.arange(len(self.query_ids), dtype=np.int32), np.diff(self.offsets))

    def to_dict(self) -> dict[str, list[str]]:
        docs = self.docs.to_pylist()
        bounds = self.offsets.tolist()
        return {q: docs[bounds[i]:bounds[i + 1]] for i, q in enumerate(self.query_ids)}

    @classmethod
    def from_dict(cls, docs: dict[str, list[str]]) -> RankedColumns:
        lengths = np.fromiter((len(d) for d in docs.values()), dtype=np.int64, count=len(docs))
        flat = [d for ranked in docs.values() for d in ranked]
        return cls(list(docs), np.concatenate(([0], np.cumsum(lengths))), pa.array(flat, type=pa.string()))


def read_spaced(path: str | Path, names: list[str], types: dict[str, pa.DataType]) -> pa.Table | None:
    """The `types` columns of a file of columns `names` split by single spaces (or single tabs), or None when the
    line-by-line reader must decide (a field Python's split() would cut elsewhere, a missing or
    extra column, a value Arrow cannot convert, no rows)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
    except (OSError, EOFError):  # unreadable or not gzip: the line-by-line reader reports it
        return None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if raw.translate(None, _PLAIN):
        return None
    separator = " "
    if raw.find(b"\t") >= 0:
        if raw.find(b" ") >= 0:
            return None
        separator = "\t"
    if _has_doubled(raw, separator):
        return None
    try:
        table = pa_csv.read_csv(
            pa.BufferReader(raw), read_options=pa_csv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=pa_csv.ParseOptions(delimiter=separator, quote_char=False, escape_char=False),
            convert_options=pa_csv.ConvertOptions(include_columns=list(types), column_types=types, null_values=[],
                                                  strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return table if table.num_rows else None


def _has_doubled(raw: bytes, separator: str) -> bool:
    """The separator twice in a row anywhere: two-byte words compared at even and at odd offsets,
    16 MB at a time (3x faster than bytes.find, and no file-sized temporary)."""
    if len(raw) < 3:
        return raw == (separator * 2).encode()
    pair, step = np.uint16(ord(separator) * 0x101), 1 << 24
    for start in range(0, max(len(raw) - 1, 0), step):
        block = raw[start:start + step + 1]
        even = np.frombuffer(block, dtype=np.uint16, count=len(block) // 2)
        odd = np.frombuffer(block, dtype=np.uint16, offset=1, count=(len(block) - 1) // 2)
        if (even == pair).any() or (odd == pair).any():
            return True
    return False


def read_trec_columns(path: str | Path, exact_scores: bool = False) -> RankedColumns | None:
    """A TREC run ranked as trec_eval ranks it, or None when only the line-by-line reader can say
    what is wrong with (or reads exactly) this file."""
    table = read_spaced(path, _NAMES, {"query_id": pa.string(), "doc_id": pa.string(), "score": pa.float64()})
    if table is None:
        return None
    scores = table.column("score").to_numpy()
    if not np.isfinite(scores).all():
        return None
    queries = table.column("query_id").combine_chunks().dictionary_encode()
    docs = table.column("doc_id").combine_chunks()
    del table
    codes = queries.indices.to_numpy()  # int32, no copy
    hashed = string_hash(docs)
    if has_duplicate_pair(codes, hashed):
        return None
    return rank_columns(queries.dictionary.to_pylist(), codes, docs, scores, exact_scores, hashed)


def memory_columns(source: InMemory, exact_scores: bool = False) -> RankedColumns | None:
    """An in-memory run ranked as read_trec_columns ranks a file: a {query_id: {doc_id: score}} mapping, or a frame
    of query_id, doc_id (strings or whole numbers) and numeric scores; None where the row-by-row reader
    (io.trec) must decide: a missing, empty or blank id, a score it would read otherwise, a rank column (which it
    checks), a --columns mapping or another name for a column, a pair given twice. It then gives the exact error."""
    from labeller.io.columns import mapped_sources

    try:
        if source.mapping is not None:
            ranked = [(str(q), docs) for q, docs in source.mapping.items()]
            lengths = np.fromiter((len(docs) for _, docs in ranked), dtype=np.int64, count=len(ranked))
            queries = pa.array([q for q, _ in ranked], type=pa.string()).dictionary_encode()
            codes = queries.indices.to_numpy()[np.repeat(np.arange(len(ranked)), lengths)]
            docs = pa.array([str(d) for _, ranking in ranked for d in ranking], type=pa.string())
            scores = np.array([v for _, ranking in ranked for v in ranking.values()], dtype=np.float64)
        else:
            frame = source.frame
            if mapped_sources() or "rank" in frame.columns or not {"query_id", "doc_id", "score"} <= set(frame.columns):
                return None
            if frame["score"].dtype.kind not in "iuf":
                return None
            queries = frame_ids(frame["query_id"]).dictionary_encode()
            codes, docs = queries.indices.to_numpy(), frame_ids(frame["doc_id"])
            scores = frame["score"].to_numpy(dtype=np.float64)
    except (TypeError, ValueError, pa.ArrowException):  # a value the row-by-row reader judges (None, a list, ...)
        return None
    if not len(scores) or queries.null_count or docs.null_count or not np.isfinite(scores).all():
        return None
    if min(pc.min(pc.utf8_length(pc.utf8_trim_whitespace(a))).as_py() for a in (queries.dictionary, docs)) == 0:
        return None  # a blank id
    hashed = string_hash(docs)
    if has_duplicate_pair(codes, hashed):
        return None
    return rank_columns(queries.dictionary.to_pylist(), codes, docs, scores, exact_scores, hashed)


def frame_ids(column) -> pa.Array:
    """A frame's id column as strings, as io.tables.require reads each: text as it is, whole numbers as digits."""
    if column.dtype.kind in "iu":
        return pa.array(column.astype(str), type=pa.string())
    return pa.array(column, type=pa.string())  # text only: anything else raises, and the rows decide


def rank_columns(query_ids: list[str], codes: np.ndarray, docs: pa.Array, scores: np.ndarray,
                 exact_scores: bool = False, hashed: np.ndarray | None = None) -> RankedColumns:
    """Sort rows by query (in sorted query-id order), score descending, then doc id descending."""
    by_name = np.argsort(np.array(query_ids, dtype=object), kind="stable")
    position = np.empty(len(query_ids), dtype=np.int32)
    position[by_name] = np.arange(len(query_ids))
    codes = position[codes]
    descending = _descending_key(scores, exact_scores)
    if exact_scores or len(query_ids) >= 1 << 32:
        order = np.lexsort((descending, codes))
        codes, descending = codes[order], descending[order]
        tied = (codes[1:] == codes[:-1]) & (descending[1:] == descending[:-1])
    else:  # one 64-bit key; a stable sort (timsort) is near linear on a run already in query/score order
        key = codes.astype(np.uint64)
        key <<= np.uint64(32)
        key |= descending
        del descending
        order = np.argsort(key, kind="stable")
        key = key[order]
        tied = key[1:] == key[:-1]
        key >>= np.uint64(32)
        codes = key.astype(np.int32)
        del key
    if tied.any():
        order = _break_ties(order, tied, docs)
    counts = np.bincount(codes, minlength=len(query_ids))
    return RankedColumns([query_ids[i] for i in by_name], np.concatenate(([0], np.cumsum(counts))),
                         docs.take(pa.array(order)), None if hashed is None else hashed[order])


def _descending_key(scores: np.ndarray, exact_scores: bool) -> np.ndarray:
    """Unsigned keys whose ascending order is the scores' descending order (-0.0 equal to 0.0)."""
    if exact_scores:
        bits = (scores.astype(np.float64) + 0.0).view(np.uint64)
        sign = np.uint64(1 << 63)
    else:  # trec_eval's `float sim`: the double rounded to nearest float32
        bits = (scores.astype(np.float32) + np.float32(0.0)).view(np.uint32)
        sign = np.uint32(1 << 31)
    negative = (bits & sign).astype(bool)
    bits |= sign  # positive: sign bit set sorts it above every negative
    np.invert(bits, out=bits, where=negative)  # negative: all bits flipped, so larger magnitude sorts lower
    np.invert(bits, out=bits)  # ascending key order = descending score order
    return bits


def _break_ties(order: np.ndarray, tied: np.ndarray, docs: pa.Array) -> np.ndarray:
    """Within each run of tied rows, order by doc id descending (Arrow compares UTF-8 bytes)."""
    starts = np.flatnonzero(np.concatenate(([True], ~tied)))  # first row of every group (ties or single)
    group = np.repeat(np.arange(len(starts), dtype=np.int32), np.diff(np.concatenate((starts, [len(order)]))))
    in_tie = np.concatenate((tied, [False])) | np.concatenate(([False], tied))
    rows = np.flatnonzero(in_tie)
    subset = pa.table({"group": group[rows], "doc": docs.take(pa.array(order[rows]))})
    resorted = pc.sort_indices(subset, sort_keys=[("group", "ascending"), ("doc", "descending")]).to_numpy()
    order = order.copy()
    order[rows] = order[rows][resorted]
    return order


def pair_keys(codes: np.ndarray, hashed: np.ndarray) -> np.ndarray:
    """A 64-bit key per (query code, doc hash): equal pairs, equal keys (unequal ones rarely collide)."""
    return hashed ^ (codes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))


def has_duplicate_pair(codes: np.ndarray, hashed: np.ndarray) -> bool:
    """True if some (query, doc) pair may appear twice. A hash collision only sends the file to the
    exact line-by-line reader, which decides."""
    keys = pair_keys(codes, hashed)
    keys.sort()
    return bool((keys[1:] == keys[:-1]).any())


def string_hash(strings: pa.Array) -> np.ndarray:
    """FNV-1a-style 64-bit hash of every string, vectorized over character positions, a million
    strings at a time: small temporaries are reused by the allocator instead of faulting in fresh
    pages on every step (which cost more system time than the hashing itself)."""
    width = np.int64 if strings.type == pa.large_string() else np.int32  # no file-sized cast to 64-bit offsets
    offsets = np.frombuffer(strings.buffers()[1], dtype=width)[strings.offset:strings.offset + len(strings) + 1]
    values = strings.buffers()[2]
    data = np.frombuffer(values, dtype=np.uint8) if values is not None and values.size else np.zeros(1, np.uint8)
    hashed = np.empty(len(strings), dtype=np.uint64)
    prime = np.uint64(0x100000001B3)
    for low in range(0, len(strings), _CHUNK):
        high = min(len(strings), low + _CHUNK)
        starts = offsets[low:high]
        lengths = offsets[low + 1:high + 1] - starts
        chunk = np.full(len(starts), 0xCBF29CE484222325, dtype=np.uint64)
        for j in range(int(lengths.max(initial=0))):
            live = lengths > j
            where = np.minimum(starts + j, len(data) - 1)
            np.copyto(chunk, (chunk ^ data[where]) * prime, where=live)
        hashed[low:low + len(starts)] = chunk ^ lengths.astype(np.uint64)
    return hashed
