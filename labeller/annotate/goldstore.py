"""The gold file the annotation page writes: every grade saved as it is given, atomically.

The file holds one row per (pair, annotator, adjudicated or not): the person's latest word on the pair,
in the documented gold format plus `outcome`, `created_at`, `sample_id` and `rubric_version`. Each save
takes a lock (a lock file beside the gold file, so two servers on one file also queue), re-reads the
file, changes one row and writes the whole file to a temporary file that replaces the old one. A
reader, a killed server or a closed browser therefore finds either the old file or the new one, and
two annotators saving at once both keep their grades.

A gold file that holds rows of another sample, rows not written by `labeller annotate`, or pairs
outside the sample is refused (`BadInputError`): the page never rewrites a file it does not own.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from filelock import FileLock

from labeller.annotate.sample import Sample
from labeller.errors import BadInputError
from labeller.io.inputs import read_models
from labeller.io.writing import atomic_file
from labeller.records import GoldLabel

Key = tuple[str, str, str, bool]  # query_id, doc_id, annotator, adjudicated


def key_of(row: GoldLabel) -> Key:
    return row.query_id, row.doc_id, row.annotator, row.outcome == "adjudicated"


class GoldStore:
    def __init__(self, path: str | Path, sample: Sample) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() != ".jsonl":
            raise BadInputError("the annotation page writes JSONL gold files; expected a path ending in .jsonl",
                                path=str(self.path))
        self.sample = sample
        self._position = {(r.query_id, r.doc_id): r.position for r in sample.rows}
        self._thread_lock = threading.Lock()  # filelock is re-entrant per thread; threads queue here first
        self._file_lock = FileLock(str(self.path.with_name(f".{self.path.name}.lock")))
        self.rows()  # refuse a foreign file before anyone starts grading

    def rows(self) -> list[GoldLabel]:
        with self._thread_lock, self._file_lock:
            return self._read()

    def save(self, row: GoldLabel) -> list[GoldLabel]:
        """Put `row` in place of the same person's earlier row for the pair; return every row."""
        if (row.query_id, row.doc_id) not in self._position:
            raise BadInputError(f"pair ({row.query_id}, {row.doc_id}) is not in sample {self.sample.sample_id}")
        with self._thread_lock, self._file_lock:
            rows = {key_of(r): r for r in self._read()}
            rows[key_of(row)] = row
            ordered = sorted(rows.values(), key=lambda r: (self._position[r.query_id, r.doc_id],
                                                           r.outcome == "adjudicated", r.annotator))
            with atomic_file(self.path, "w") as handle:
                handle.write("".join(json.dumps(r.model_dump(), ensure_ascii=False) + "\n" for r in ordered))
                handle.flush()
                os.fsync(handle.fileno())  # on disk before it replaces the old file
            return ordered

    def _read(self) -> list[GoldLabel]:
        if not self.path.exists() or not self.path.read_bytes().strip():
            return []
        rows = read_models(self.path, GoldLabel)
        for line, row in rows:
            if row.sample_id != self.sample.sample_id:
                whose = f"sample {row.sample_id}" if row.sample_id else "no sample (not written by labeller annotate)"
                raise BadInputError(f"this gold file holds grades of {whose}, not of the sample being graded "
                                    f"({self.sample.sample_id}); give --gold a new file for this sample",
                                    path=str(self.path), line=line, field="sample_id")
            if (row.query_id, row.doc_id) not in self._position:
                raise BadInputError(f"pair ({row.query_id}, {row.doc_id}) is not in sample {self.sample.sample_id}; "
                                    "expected only pairs of the sample", path=str(self.path), line=line,
                                    field="doc_id")
        return [row for _, row in rows]
