"""An input handed over from Python (a DataFrame, a list of row dicts, a {query_id: {doc_id: value}} mapping)
read where a file would be: the readers take it as they take a path (io.tables.read_rows, io.trec.ranx_json), so a
frame meets exactly a file's checks and figures, with no copy of it written anywhere.

A table's rows are numbered from 1 as a Parquet file's are, so an error names "labels DataFrame:3: field 'grade'"
for the frame's third row; a mapping's entries are numbered in its order, as a ranx JSON file's. Places that need
the bytes of a file (TREC text, the columnar fast paths, hashing a file for a cache key) never see one: an
in-memory table is a table, a mapping is ranx's shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union


class InMemory:
    """One in-memory input. `label` is how errors and results name it ("run 'bm25' DataFrame"), `name` what a
    file's stem would be (a run's name); exactly one of `frame` (a pandas DataFrame) and `mapping` is set."""

    suffix = ""  # no file type: callers that go by a file's suffix ask is_table / is_ranx_json instead

    def __init__(self, label: str, name: str, frame: Any = None, mapping: dict | None = None):
        self.label, self.name, self.frame, self.mapping = label, name, frame, mapping

    @property
    def stem(self) -> str:
        return self.name

    def is_file(self) -> bool:  # it exists, as the file it stands in for would
        return True

    def __str__(self) -> str:
        return self.label

    def __repr__(self) -> str:
        return f"InMemory({self.label!r})"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return other is self

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """A field typed `Path | InMemory` (io.memory.Input) holds one as it is."""
        from pydantic_core import core_schema

        return core_schema.is_instance_schema(cls)

    def rows(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(row number from 1, row) with plain Python values, as io.tables reads a Parquet file's."""
        from labeller.io.tables import frame_rows

        return frame_rows(self.frame)

    def entries(self) -> Iterator[tuple[str, str, object]]:
        """A mapping's (query_id, doc_id, value), as io.trec.ranx_json reads a ranx JSON file's."""
        return ((str(q), str(d), value) for q, docs in self.mapping.items() for d, value in docs.items())


Input = Union[Path, InMemory]  # what an options model's input field holds: a file, or a frame or mapping as it is


def as_source(path: str | Path | InMemory) -> Path | InMemory:
    """Path(path), except that an in-memory input stays itself."""
    return path if isinstance(path, InMemory) else Path(path)


def is_frame(source: object) -> bool:
    return isinstance(source, InMemory) and source.frame is not None


def is_mapping(source: object) -> bool:
    return isinstance(source, InMemory) and source.mapping is not None
