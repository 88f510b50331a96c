"""A plain JSONL pairs file read by pyarrow's JSON reader (C++), not by a Python loop per line.

"Plain": every line is {"query_id": "...", "doc_id": "..."} and nothing else, every id known (a pair given
twice is folded to its first line, as line by line).
That is what a large pairs file usually is, and a million of them take 1.7-2.1 s instead of 3.8-4.0 s
(a cached rerun reads its pairs before its first lookup, on one core). Anything else (a blank line, another
column, a number for an id, a null, a duplicate not numbered, an unknown id, bad JSON or UTF-8, two objects on a line)
gives None, and read_pairs reads the file line by line as before: what is wrong gets its usual error, with
its line, and what is right the same values (tests/test_plain_pairs.py). A byte-order mark is read as
line by line: skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from labeller.io.spill import Spill, later_twins, without

_COLUMNS = ["doc_id", "query_id"]  # sorted
_BLOCK = 1 << 24  # bytes per count of the file's lines
_READ_BLOCK = 1 << 22  # bytes of the file parsed at a time: its rows become Python lists before the next block is read
# The C library's allocator, which the rest of the process reuses, not pyarrow's own pool (mimalloc).
_POOL = pa.system_memory_pool()


def plain_pairs(path: Path, query_known: Callable[[str], bool] | None, doc_known: Callable[[str], bool] | None,
                numbering: tuple[Any, Any] | None = None) -> tuple[Sequence[str], Sequence[str]] | None:
    """(query ids, doc ids) in file order, each query id one string however many pairs name it; or None.
    Given the queries' and the corpus's numberings (io.inputs.Numbering), the ids come as IdColumns into them.

    The file is parsed a block at a time (_tables), each block's ids turned into Python
    values before the next is read: reading the whole file as one table held it, its parse and a string per
    pair at once. Duplicate pairs are found from one 64-bit value a pair (8 bytes each): the two numbers
    together when numbered (exact), else a hash, where any value seen twice, a duplicate or (rarely) a collision,
    leaves the file to the line-by-line reading, which folds duplicates exactly. Numbered, a value seen twice is
    the same pair twice: folded here. The ids, and the values, go to temporary files once large (io.spill)."""
    query_ids: Any = Spill("i") if numbering else []
    doc_ids: Any = Spill("i") if numbering else []
    interned: dict[str, str] = {}
    seen = Spill("q")
    try:  # one thread: pyarrow's threads' own malloc arenas kept ~30 MB more for a million pairs
        for batch in _tables(path):
            if sorted(batch.schema.names) != _COLUMNS:
                return None
            queries, docs = (batch.column(name).combine_chunks(memory_pool=_POOL) for name in ("query_id", "doc_id"))
            if not all(pa.types.is_string(column.type) and column.null_count == 0 for column in (queries, docs)):
                return None
            encoded = pc.dictionary_encode(queries, memory_pool=_POOL)
            names = encoded.dictionary.to_pylist()
            batch_docs = docs.to_pylist()
            indices = encoded.indices.to_numpy()
            if numbering:  # an id the queries or the corpus do not number (unknown, or blank) is left to read_pairs
                query_numbers = numbering[0].numbers(names)[indices]
                doc_numbers = numbering[1].numbers(batch_docs)
                if (query_numbers < 0).any() or (doc_numbers < 0).any():
                    return None
                seen.extend((query_numbers << 32) | doc_numbers)
                query_ids.extend(query_numbers)
                doc_ids.extend(doc_numbers)
                continue
            if not _all_named(names, query_known) or not _all_named(batch_docs, doc_known):
                return None
            names = [interned.setdefault(name, name) for name in names]
            batch_queries = np.array(names, dtype=object)[indices].tolist()
            seen.extend(np.fromiter(map(hash, zip(batch_queries, batch_docs)), dtype=np.int64, count=len(batch_docs)))
            query_ids += batch_queries
            doc_ids += batch_docs
    except (pa.ArrowException, OSError, ValueError, UnicodeDecodeError):
        return None
    if not len(doc_ids) or not _one_object_a_line(path, len(doc_ids)):
        return None  # pyarrow skips blank lines, and reads a line of two objects as two rows
    twins = later_twins(seen.freeze())  # a bucket at a time (io.spill): no sort of the whole file's values
    if not numbering:
        # a duplicate or (rarely) two pairs of one hash: folded line by line, which keeps each pair's first line
        return None if len(twins) else (query_ids, doc_ids)
    from labeller.io.inputs import IdColumn

    # numbered, a value seen twice is the same pair twice: folded here, each pair at its first line
    query_ids, doc_ids = without(query_ids.freeze(), twins), without(doc_ids.freeze(), twins)
    return IdColumn(numbering[0].names, query_ids), IdColumn(numbering[1].names, doc_ids)


def _tables(path: Path) -> Iterator[pa.Table]:
    """The file as tables of whole lines, _READ_BLOCK bytes or so at a time. Not pyarrow's streaming reader: it
    reads ahead as fast as the disk goes, and held the whole file (~80 MB for 2M pairs) while the blocks were
    being turned into Python values."""
    options = pa_json.ReadOptions(use_threads=False)
    with path.open("rb") as handle:
        rest = b""
        while block := handle.read(_READ_BLOCK):
            block = rest + block
            cut = block.rfind(b"\n") + 1
            rest, block = block[cut:], block[:cut]
            if block:
                yield pa_json.read_json(pa.py_buffer(block), read_options=options, memory_pool=_POOL)
        if rest.strip():
            yield pa_json.read_json(pa.py_buffer(rest), read_options=options, memory_pool=_POOL)


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
