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
        names = [str(c) for c in self.frame.columns]
        columns = [plain_column(self.frame.iloc[:, i]) for i in range(len(names))]
        for number, values in enumerate(zip(*columns), start=1):
            yield number, dict(zip(names, values))

    def entries(self) -> Iterator[tuple[str, str, object]]:
        """A mapping's (query_id, doc_id, value), as io.trec.ranx_json reads a ranx JSON file's."""
        return ((str(q), str(d), value) for q, docs in self.mapping.items() for d, value in docs.items())


def plain_column(column: Any) -> list[Any]:
    """A frame's column as io.tables._plain makes each of its cells, a column at a time where the dtype says what
    every cell is (whole numbers, booleans, floats with NaN for missing, strings only): 3x faster than a cell at a
    time on a 13,000-row qrels frame. Any other column (dates, lists, nullable or mixed values) goes cell by cell."""
    import pandas as pd

    from labeller.io.tables import _plain

    kind = column.dtype.kind
    if kind in "iub" and not isinstance(column.dtype, pd.api.extensions.ExtensionDtype):
        return column.tolist()
    if kind == "f" and not isinstance(column.dtype, pd.api.extensions.ExtensionDtype):
        return [None if v != v else v for v in column.tolist()]  # NaN is the only value not equal to itself
    if pd.api.types.infer_dtype(column, skipna=False) == "string" and not column.isna().any():
        return column.tolist()  # strings only (pandas 3's str dtype says "string" with missing cells too)
    return [_plain(v) for v in column.tolist()]


Input = Union[Path, InMemory]  # what an options model's input field holds: a file, or a frame or mapping as it is


def as_source(path: str | Path | InMemory) -> Path | InMemory:
    """Path(path), except that an in-memory input stays itself."""
    return path if isinstance(path, InMemory) else Path(path)


def is_frame(source: object) -> bool:
    return isinstance(source, InMemory) and source.frame is not None


def is_mapping(source: object) -> bool:
    return isinstance(source, InMemory) and source.mapping is not None
