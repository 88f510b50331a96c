"""Parquet output written a row group at a time, with the bytes of one whole-table write.

A Parquet file has one schema, and labeller's is what pandas and pyarrow infer from every row at once
(write_rows: a column of whole numbers with gaps is float, a column with no value at all is null, ...),
so the first row group cannot be written before the last row is seen. ParquetRows keeps the rows in an
unlinked temporary file as they come (marshalled a chunk at a time: the exact Python values), and from each
chunk only its *witnesses*: for every column, the first row holding each kind of value (its type; for
whole numbers the smallest and largest; for a time column each string length; for lists and dicts the
kinds inside). pandas and pyarrow infer a column's type from the kinds of value it holds, not from how
many of each, so the witness rows alone give the schema of the whole table. finish() then reads the
chunks back, converts them to that schema PIECE rows at a time and writes row groups of ROW_GROUP rows, as
pyarrow's write_table does for a whole table: the same file, byte for byte. A row group's columns are
gathered on disk and mapped back whole as it is written (io.parquet_columns), so what stays in memory is a
piece and a few megabytes of each column, not the row group (~280 MB of labels a million rows). A chunk that does not convert to the witnesses' schema (a case
the witnesses miss: a time string that does not parse) makes finish() write the whole table the old way.
"""

from __future__ import annotations

import marshal
import math
import pickle
import tempfile
from typing import IO, Any

from labeller.io.parquet_columns import DiskGroup, DroppingSink

ROW_GROUP = 1 << 20  # rows a row group: pyarrow's default for write_table (so the bytes stay the same)
PIECE = 8192  # rows converted to Arrow at a time (a multiple of 8: see parquet_columns)
TIMESTAMP_COLUMNS = ("created_at",)  # labels, failures and cache exports
_I64 = (1 << 63) - 1


def typed_frame(frame):
    """Real dtypes for Parquet: a column of whole numbers with gaps (token counts of a cached or
    unpriced verdict) stays integer (nullable Int64) instead of float NaN, and ISO-8601 time columns
    become UTC timestamps. Reading back (read_rows) gives the same plain values as before."""
    import pandas as pd

    frame = frame.copy()
    for column in frame.columns:
        values = frame[column].dropna()
        if column in TIMESTAMP_COLUMNS and len(values) and all(isinstance(v, str) for v in values):
            try:
                frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
            except (ValueError, TypeError):
                pass  # not all ISO-8601: kept as written
        elif str(column).endswith("_tokens") or (frame[column].dtype == object and len(values) and all(
                isinstance(v, int) and not isinstance(v, bool) for v in values)):
            try:
                frame[column] = frame[column].astype("Int64")
            except (TypeError, ValueError):
                pass  # not whole numbers after all: kept as they are
    return frame


def whole_table(rows: list[dict[str, Any]]):
    """The pyarrow table of these rows, as write_rows has always written them (pandas to_parquet)."""
    import pandas as pd
    import pyarrow as pa

    return pa.Table.from_pandas(typed_frame(pd.DataFrame(rows)), preserve_index=False)


def kind_of(column: str, value: Any) -> Any:
    """What the type inference of pandas and pyarrow sees of a value (whole numbers aside: see _Witnesses)."""
    kind = type(value)
    if kind is float:
        return float, math.isnan(value)
    if kind is str and column in TIMESTAMP_COLUMNS:
        return str, len(value)
    if kind is list or kind is tuple:
        return kind, frozenset(kind_of("", v) if type(v) is not int else (int, _int_class(v)) for v in value)
    if kind is dict:
        return dict, tuple((k, kind_of("", v) if type(v) is not int else (int, _int_class(v)))
                           for k, v in value.items())
    return kind


def _int_class(value: int) -> int:
    return (value < 0) + 2 * (value > _I64) + 4 * (value > 2 * _I64 + 1)


class _Witnesses:
    """The rows that show every kind of value of every column, in input order."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.seen: set[tuple[str, Any]] = set()
        self.columns: dict[str, None] = {}  # in order of first appearance, as pandas orders them
        self.low: dict[str, int] = {}
        self.high: dict[str, int] = {}

    def add(self, rows: list[dict[str, Any]]) -> None:
        picked: set[int] = set()
        keys = rows[0].keys()
        if all(row.keys() == keys for row in rows) and all(c in keys for c in self.columns):
            if len(keys) != len(self.columns):
                picked.add(0)  # a column appears: its first row fixes where pandas puts it
            self.columns.update(dict.fromkeys(keys))
            for column in keys:
                self._column(column, [row[column] for row in rows], picked)
        else:  # rows of several shapes: a column missing from a row is a kind of its own (NaN to pandas)
            for i, row in enumerate(rows):
                if any(c not in self.columns for c in row):
                    picked.add(i)
                    self.columns.update(dict.fromkeys(row))
                for column in self.columns:
                    if column not in row and (column, "missing") not in self.seen:
                        self.seen.add((column, "missing"))
                        picked.add(i)
            for column in self.columns:
                present = [i for i, row in enumerate(rows) if column in row]
                self._column(column, [rows[i][column] for i in present], picked, present)
        self.rows.extend(rows[i] for i in sorted(picked))

    def _column(self, column: str, values: list[Any], picked: set[int], at: list[int] | None = None) -> None:
        seen = self.seen
        for kind in {type(v) for v in values}:  # the kinds new to this column; most chunks add none
            if kind is int:  # whole numbers: their range sets int64, uint64 or object
                whole = [(v, i) for i, v in enumerate(values) if type(v) is int]
                for (value, i), bound, better in ((min(whole), self.low, int.__lt__),
                                                  (max(whole), self.high, int.__gt__)):
                    if column not in bound or better(value, bound[column]):
                        bound[column] = value
                        picked.add(i if at is None else at[i])
                continue
            if kind is float:
                floats = [v for v in values if type(v) is float]
                kinds = {(float, True)} if all(v != v for v in floats) else {(float, False)} \
                    if all(v == v for v in floats) else {(float, True), (float, False)}
            elif kind is str and column in TIMESTAMP_COLUMNS:
                kinds = {(str, n) for n in {len(v) for v in values if type(v) is str}}
            elif kind is list or kind is tuple or kind is dict:
                kinds = {kind_of(column, v) for v in values if type(v) is kind}
            else:
                kinds = {kind}
            for new in kinds - {k for c, k in seen if c == column}:
                i = next(i for i, v in enumerate(values) if type(v) is kind and kind_of(column, v) == new)
                seen.add((column, new))
                picked.add(i if at is None else at[i])

    def schema(self):
        import pyarrow as pa

        return whole_table(self.rows).schema if self.rows else pa.schema([])


class ParquetRows:
    """Rows added a chunk at a time; finish() writes the Parquet file to `handle` (see the module's docstring)."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.spill = tempfile.TemporaryFile(prefix="labeller-parquet-")
        self.chunks = 0
        self.witnesses = _Witnesses()
        self.wrote_whole = False  # finish() fell back to the whole-table write

    def add(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.witnesses.add(rows)
            try:  # marshal: several times faster than pickle both ways, for the plain values labels hold
                data = b"m" + marshal.dumps(rows)
            except ValueError:  # a value marshal does not know
                data = b"p" + pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)
            self.spill.write(len(data).to_bytes(8, "little") + data)
            self.chunks += 1

    def _chunks(self):
        self.spill.seek(0)
        for _ in range(self.chunks):
            data = self.spill.read(int.from_bytes(self.spill.read(8), "little"))
            yield marshal.loads(data[1:]) if data[:1] == b"m" else pickle.loads(data[1:])

    def finish(self) -> None:
        try:
            self._write_groups()
        except Exception:  # pyarrow and pandas raise many types: the whole table tells which, as it always did
            self.handle.seek(0)
            self.handle.truncate()
            self.wrote_whole = True
            write_whole(self.handle, [row for rows in self._chunks() for row in rows])
        finally:
            self.spill.close()

    def _pieces(self):
        """The rows again, in pieces of PIECE rows cut at every row group's end (DiskGroup's whole bytes of bits)."""
        pending: list[dict[str, Any]] = []
        grouped = 0  # rows of the current row group given out
        for rows in self._chunks():
            pending += rows
            at = 0
            while len(pending) - at >= (size := min(PIECE, ROW_GROUP - grouped)):
                yield pending[at:at + size]
                at, grouped = at + size, (grouped + size) % ROW_GROUP
            del pending[:at]
        if pending:
            yield pending

    def _write_groups(self) -> None:
        import pandas as pd
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = self.witnesses.schema()
        columns = list(self.witnesses.columns)
        sink = DroppingSink(self.handle)
        with pq.ParquetWriter(sink, schema, compression="snappy") as writer:
            group = DiskGroup(schema, sink)
            try:
                for rows in self._pieces():
                    frame = typed_frame(pd.DataFrame(rows, columns=columns))
                    group.add(pa.Table.from_pandas(frame, schema=schema, preserve_index=False))
                    if group.rows == ROW_GROUP:
                        group.write(writer, ROW_GROUP)
                if group.rows:
                    group.write(writer, ROW_GROUP)
            finally:
                group.close()


def write_whole(handle: IO[bytes], rows: list[dict[str, Any]]) -> None:
    """All the rows at once, in memory: how write_rows writes a Parquet file."""
    import pandas as pd

    typed_frame(pd.DataFrame(rows)).to_parquet(handle, index=False)
