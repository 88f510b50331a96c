"""A plain JSONL pairs file read by pyarrow's JSON reader (C++), not by a Python loop per line.

"Plain": every line is {"query_id": "...", "doc_id": "..."} and nothing else, no pair twice, every id known.
That is what a large pairs file usually is, and a million of them take 1.7-2.1 s instead of 3.8-4.0 s
(a cached rerun reads its pairs before its first lookup, on one core). Anything else (a blank line, another
column, a number for an id, a null, a duplicate, an unknown id, bad JSON or UTF-8, two objects on a line)
gives None, and read_pairs reads the file line by line as before: what is wrong gets its usual error, with
its line, and what is right the same values (tests/test_plain_pairs.py). A byte-order mark is read as
line by line: skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

_COLUMNS = ["doc_id", "query_id"]  # sorted
_BLOCK = 1 << 24  # bytes per count of the file's lines
# The C library's allocator, which the rest of the process reuses, not pyarrow's own pool (mimalloc).
_POOL = pa.system_memory_pool()


def plain_pairs(path: Path, query_known: Callable[[str], bool] | None,
                doc_known: Callable[[str], bool] | None) -> tuple[list[str], list[str]] | None:
    """(query ids, doc ids) in file order, each query id one string however many pairs name it; or None."""
    try:  # one thread: pyarrow's threads' own malloc arenas kept ~30 MB more for a million pairs
        table = pa_json.read_json(path, read_options=pa_json.ReadOptions(use_threads=False), memory_pool=_POOL)
    except (pa.ArrowException, OSError, ValueError):
        return None
    if sorted(table.column_names) != _COLUMNS or not _one_object_a_line(path, table.num_rows):
        return None  # pyarrow skips blank lines, and reads a line of two objects as two rows
    queries, docs = table.column("query_id"), table.column("doc_id")
    if not all(pa.types.is_string(column.type) and column.null_count == 0 for column in (queries, docs)):
        return None
    try:
        encoded = pc.dictionary_encode(queries.combine_chunks(memory_pool=_POOL), memory_pool=_POOL)
        query_names = encoded.dictionary.to_pylist()
        doc_ids = docs.to_pylist()
    except (pa.ArrowException, UnicodeDecodeError, ValueError):
        return None
    if not _all_named(query_names, query_known) or not _all_named(doc_ids, doc_known):
        return None
    if pc.count_distinct(docs).as_py() != len(doc_ids) and _has_duplicate_pairs(encoded.indices, docs):
        return None  # folded line by line, which also keeps each pair's first line
    return np.array(query_names, dtype=object)[encoded.indices.to_numpy()].tolist(), doc_ids


def _one_object_a_line(path: Path, rows: int) -> bool:
    """Whether the file has `rows` lines, each ending in "}" (a raw newline never sits inside a JSON string,
    so "}\n" closes an object at the end of its line). pyarrow also reads two objects on one line, or one
    object over two, which line by line is an error."""
    lines = ends = 0
    last = b""
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            lines += block.count(b"\n")
            ends += block.count(b"}\n") + (last == b"}" and block[:1] == b"\n")
            last = block[-1:]
    unterminated = last not in (b"", b"\n")  # the last line, without its newline
    return lines + unterminated == rows == ends + (last == b"}")


def _all_named(ids: list[str], known: Callable[[str], bool] | None) -> bool:
    """Every id non-blank (read_pairs' rule) and, given `known`, known."""
    if not all(map(str.strip, ids)):
        return False
    return known is None or all(map(known, ids))


def _has_duplicate_pairs(query_positions: pa.Array, docs: pa.ChunkedArray) -> bool:
    pairs = pa.table({"query": query_positions, "doc": docs.combine_chunks(memory_pool=_POOL)})
    return pairs.group_by(["query", "doc"]).aggregate([]).num_rows != pairs.num_rows
