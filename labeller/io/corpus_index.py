"""A JSONL corpus kept as where each row is in its file, each row read again when it is needed.

Labelling a large slice needs every document's text twice: to hash its pair's cache key, and to send the
pairs the store does not hold. Kept in memory, the texts of a million documents are most of the run's
memory (~630 MB for 1M documents of 60 words); their ids and byte offsets take ~150 MB, and a row read
again (a slice of the mapped file, one orjson parse: ~2 µs) costs about what keeping it cost to build.
"""

from __future__ import annotations

import mmap
import weakref
from array import array
from pathlib import Path
from typing import Any

import orjson

from labeller.errors import BadInputError
from labeller.io.columns import renamed
from labeller.io.inputs import NO_FIELDS, Records, duplicate, entries
from labeller.io.tables import _PLAIN_VALUES, _read_jsonl, loads
from labeller.records import Doc

_RELEASE = getattr(mmap, "MADV_DONTNEED", None)  # not on Windows
_READS_MAPPED = 4096  # rows read between two releases of the mapped pages (at most ~16 MB of them resident)


class IndexedCorpus(Records):
    """doc_id -> Doc like Records, with `rows` mapping each id to its row's number here and the row's bytes read
    from the file when asked. The file is mapped (a corpus replaced while a run reads it is still read whole); a
    row that no longer names its id (the file was rewritten in place) is an error, never a wrong text."""

    def __init__(self, path: Path) -> None:
        self.path = path
        span: list[int] = [0, 0]
        starts, ends = array("q"), array("q")
        rows: dict[str, int] = {}
        self.plan: dict[str, str] = {}
        for line, key, _, _ in entries(renamed(_read_jsonl(path, span), "corpus", keep=self.plan), path, "doc_id"):
            if key in rows:
                raise duplicate(path, "doc_id", key, line)
            rows[key] = len(starts)
            starts.append(span[0])
            ends.append(span[1])
        super().__init__(Doc, "doc_id", rows)
        self.starts, self.ends = starts, ends
        with open(path, "rb") as handle:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        weakref.finalize(self, self._map.close)
        self._reads = 0

    def text_and_fields(self, key: str) -> tuple[str, dict[str, Any]]:
        number = self.rows[key]
        start = self.starts[number]
        raw = self._map[start:self.ends[number]]  # a copy: a pread per row costs three times as much
        self._reads += 1
        if self._reads == _READS_MAPPED and _RELEASE is not None:  # mapped pages are this process's memory
            self._reads = 0  # until they are let go
            self._map.madvise(_RELEASE)
        try:
            row = orjson.loads(raw) if start else None  # the first line may start with a byte-order mark
        except orjson.JSONDecodeError:
            row = None
        if type(row) is not dict or not _PLAIN_VALUES.issuperset(map(type, row.values())):
            row = loads(raw.decode("utf-8-sig" if not start else "utf-8"))  # as _read_jsonl read it the first time
        if self.plan:
            row = {self.plan.get(k, k): v for k, v in row.items()}
        if len(row) == 2 and row.get("doc_id") == key and type(text := row.get("text")) is str:
            return text, NO_FIELDS  # the usual row, as it was checked when the file was indexed
        for _, found, text, fields in entries([(number + 1, row)], self.path, "doc_id"):
            if found == key:
                return text, fields or NO_FIELDS
        raise BadInputError(f"the corpus changed while labeller was reading it: the row of document '{key}' now "
                            "holds another document; run again on a file left as it is", path=str(self.path))
