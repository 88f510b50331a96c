"""A JSONL corpus kept as where each row is in its file, each row read again when it is needed.

Labelling a large slice needs every document's text twice: to hash its pair's cache key, and to send the
pairs the store does not hold. Kept in memory, the texts of a million documents are most of the run's
memory (~630 MB for 1M documents of 60 words); their ids and byte offsets (~45 bytes a row) go to temporary
files read through maps (io.spill), and a row read again (a slice of the mapped file, one orjson parse: ~2 µs)
costs about what keeping it cost to build.

A cache key needs only a document's text, as JSON writes it: where a line holds no escape at all and ends with
its text, those are the very bytes of the file, and text_bytes() slices them out with no parse (reading rows
again was a third of a cached rerun's hashing).
"""

from __future__ import annotations

import mmap
import os
import weakref
from pathlib import Path
from typing import Any

import orjson

from labeller.errors import BadInputError
from labeller.io.columns import apply_plan, renamed
from labeller.io.id_index import IdIndex
from labeller.io.spill import Spill
from labeller.io.inputs import NO_FIELDS, Records, duplicate, entries
from labeller.io.tables import _PLAIN_VALUES, _read_jsonl, loads
from labeller.records import Doc, Query

_RELEASE = getattr(mmap, "MADV_DONTNEED", None)  # not on Windows
_READS_MAPPED = 4096  # rows read between two releases of the mapped pages (at most ~16 MB of them resident)


class IndexedCorpus(Records):
    """doc_id -> Doc like Records, with `rows` mapping each id to its row's number here and the row's bytes read
    from the file when asked. The file is mapped (a corpus replaced while a run reads it is still read whole); a
    row that no longer names its id (the file was rewritten in place) is an error, never a wrong text."""

    numbered = True  # `rows` maps each id to its number, in file order (io.inputs.Numbering uses them as they are)

    def __init__(self, path: Path, model: type[Doc] | type[Query] = Doc, id_field: str = "doc_id") -> None:
        # the same index serves a large queries file (model=Query, id_field="query_id")
        self.path = path
        role = self.role = "corpus" if id_field == "doc_id" else "queries"
        span: list[int] = [0, 0]
        starts, ends = Spill("q"), Spill("q")  # in temporary files once large (io.spill)
        rows = IdIndex()  # ~27 bytes an id, where a dict of them took ~140 (io.id_index)
        self.plan: dict[str, str | None] = {}
        read = _written(os.stat(path))

        def rows_read(span: list[int] | None = None):
            return entries(renamed(_read_jsonl(path, span), role, keep=self.plan), path, id_field)

        for _, key, _, _ in rows_read(span):
            rows.append(key)
            starts.append(span[0])
            ends.append(span[1])
        if twice := rows.freeze():  # the first id given twice (by its later row), found once all are read
            later = twice[0][1]
            line = next(line for n, (line, _, _, _) in enumerate(rows_read()) if n == later)
            raise duplicate(path, id_field, rows.names[later], line)
        super().__init__(model, id_field, rows)
        self.starts, self.ends = starts.freeze(), ends.freeze()
        with open(path, "rb") as handle:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            self._written = _written(os.fstat(handle.fileno()))
        weakref.finalize(self, self._map.close)
        if self._written != read:
            raise _changed(path, what=role)
        self._reads = 0

    def _mapped(self, start: int, end: int) -> bytes:
        raw = self._map[start:end]  # a copy: a pread per row costs three times as much
        self._reads += 1
        if self._reads == _READS_MAPPED and _RELEASE is not None:  # mapped pages are this process's memory
            self._reads = 0  # until they are let go
            self._map.madvise(_RELEASE)
        return raw

    def text_bytes(self, key: str) -> bytes | None:
        """The document's text as UTF-8, when its line holds no escape and ends with its "text" member (as
        json.dumps writes a row): those bytes of the file are the text as JSON writes it, and hold nothing JSON
        escapes (a quote, a backslash or a control character would each have needed an escape). None for any
        other row (text_and_fields() reads it). The line was checked as JSON when the file was indexed."""
        return self.text_bytes_at(self.rows[key])

    def text_bytes_at(self, number: int) -> bytes | None:
        """text_bytes() of the document numbered `number` (io.inputs.IdColumn holds pairs' documents so)."""
        line = self._mapped(self.starts[number], self.ends[number])
        if b"\\" in line or self.plan:
            return None
        close = line.rfind(b'"')  # no escape: every quote delimits, so the last string is the last member's value
        opened = line.rfind(b'"', 0, close)
        if line[close + 1:].strip() != b"}":
            return None
        name = line[max(opened - 24, 0):opened].rstrip()  # the member's name and colon, in the last few bytes
        if not name.endswith(b":") or not name[:-1].rstrip().endswith(b'"text"'):
            return None
        return line[opened + 1:close]  # "text" is named once: a line naming a key twice was refused when indexed

    def check_unchanged(self) -> None:
        """text_bytes() reads where the text was: a file written over in place since is refused, as
        text_and_fields() refuses a row that names another document. A file replaced (a new inode) is fine:
        the mapped one is still the old file, read whole."""
        try:
            now = os.stat(self.path)
        except OSError:  # moved away or deleted: the mapped file is still the old one
            return
        if now.st_ino == self._written[0] and _written(now) != self._written:
            raise _changed(self.path, what=self.role)

    def text_and_fields(self, key: str) -> tuple[str, dict[str, Any]]:
        number = self.rows[key]
        start = self.starts[number]
        raw = self._mapped(start, self.ends[number])
        try:
            row = orjson.loads(raw) if start else None  # the first line may start with a byte-order mark
        except orjson.JSONDecodeError:
            row = None
        if type(row) is not dict or not _PLAIN_VALUES.issuperset(map(type, row.values())):
            row = loads(raw.decode("utf-8-sig" if not start else "utf-8"))  # as _read_jsonl read it the first time
        if self.plan:
            row = apply_plan(self.plan, row)
        if len(row) == 2 and row.get(self.id_field) == key and type(text := row.get("text")) is str:
            return text, NO_FIELDS  # the usual row, as it was checked when the file was indexed
        for _, found, text, fields in entries([(number + 1, row)], self.path, self.id_field):
            if found == key:
                return text, fields or NO_FIELDS
        kind = "document" if self.id_field == "doc_id" else "query"
        raise _changed(self.path, f": the row of {kind} '{key}' now holds another {kind}", self.role)


def _written(stat: os.stat_result) -> tuple[int, int, int]:
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _changed(path: Path, how: str = "", what: str = "corpus") -> BadInputError:
    return BadInputError(f"the {what} changed while labeller was reading it{how}; run again on a file left as it is",
                         path=str(path))
