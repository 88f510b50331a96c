"""A Parquet row group's columns gathered on disk and mapped back, each one whole (io.parquet_rows).

pyarrow's write_table puts a column's pages where a whole-table write puts them only when the column is one
contiguous array, and a row group is 1,048,576 rows: for labels (cache keys, justifications, ids, a dozen
columns more) ~280 MB of Arrow data in memory, whatever the chunk. So DiskGroup appends each piece's Arrow
buffers to temporary files, a column at a time (validity bits, offsets rebased onto what came before,
values), and write() maps the files and builds every column as one array over its mapping: the same arrays
and so the same file, byte for byte. Pages read through a mapping count in the process's resident memory
while they stay mapped, so the writer's sink (DroppingSink) drops them (MADV_DONTNEED: they stay in the page
cache and come back on the next read) each time the writer has written DROP_EVERY bytes, and a thread drops them
every DROP_SECONDS while a group is written (a column of few values is read whole before a byte of it is
written): what stays resident is a few megabytes of each column. Pieces must be whole bytes of bits (a multiple of 8 rows) but the group's
last. Columns of nested types (lists, structs) are kept in memory and joined as before: they are rare.
"""

from __future__ import annotations

import mmap
import tempfile
import threading
from contextlib import contextmanager
from typing import IO, Any

DROP_EVERY = 1 << 20  # bytes written between two drops of the mapped pages
DROP_SECONDS = 0.02  # and seconds between two drops by the thread
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)  # none on Windows: the pages then stay until unmapped
_FILES = {"null": 0, "bits": 2, "fixed": 2, "offsets32": 3, "offsets64": 3}  # validity, values, string data
_EMPTY = b""


class DroppingSink:
    """The file the ParquetWriter writes to: every DROP_EVERY bytes, the mapped columns' pages are dropped."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.maps: list[mmap.mmap] = []
        self.since = 0
        self.lock = threading.Lock()  # the maps are dropped by two threads and closed by one

    def write(self, data) -> int:
        written = self.handle.write(data)
        self.since += len(data)
        if self.since >= DROP_EVERY:
            self.drop()
        return written

    def drop(self) -> None:
        self.since = 0
        with self.lock:
            for mapped in self.maps if _DONTNEED is not None else ():
                mapped.madvise(_DONTNEED)

    @contextmanager
    def dropping(self):
        """Drop the mapped pages every DROP_SECONDS in a thread (write_table runs without the GIL) meanwhile."""
        done = threading.Event()
        thread = threading.Thread(target=self._drop_until, args=(done,), daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def _drop_until(self, done: threading.Event) -> None:
        while not done.wait(DROP_SECONDS):
            self.drop()

    def unmap(self) -> None:
        with self.lock:
            for mapped in self.maps:
                try:
                    mapped.close()
                except BufferError:  # an array over it still held somewhere: it goes when that does
                    pass
            self.maps.clear()

    def tell(self) -> int:
        return self.handle.tell()

    def flush(self) -> None:
        self.handle.flush()

    @property
    def closed(self) -> bool:
        return self.handle.closed

    def close(self) -> None:  # the handle is the caller's to close
        pass


def _kind(field_type) -> str | None:
    """How a column of this Arrow type is laid out on disk; None: kept in memory."""
    import pyarrow.types as t

    if t.is_null(field_type):
        return "null"
    if t.is_boolean(field_type):
        return "bits"
    if t.is_primitive(field_type):
        return "fixed"
    if t.is_string(field_type) or t.is_binary(field_type):
        return "offsets32"
    if t.is_large_string(field_type) or t.is_large_binary(field_type):
        return "offsets64"
    return None


class _DiskColumn:
    """One column of a row group: its validity bits, values (or offsets) and string data, in temporary files."""

    def __init__(self, field_type, kind: str) -> None:
        self.type, self.kind = field_type, kind
        self.files = [tempfile.TemporaryFile(prefix="labeller-parquet-column-") for _ in range(_FILES[kind])]
        self.rows = self.nulls = self.base = 0
        if kind.startswith("offsets"):
            self.width = 4 if kind == "offsets32" else 8
            self.files[1].write(bytes(self.width))  # the first offset: 0
        elif kind == "fixed":
            self.width = field_type.bit_width // 8

    def add(self, array) -> None:
        import numpy as np

        n = len(array)
        if self.rows % 8:  # the bits of this piece would not start on a byte
            raise ValueError("only a row group's last piece may be a part of a byte of bits")
        if array.offset:  # a slice: its bits may not start on a byte
            import pyarrow as pa

            array = pa.concat_arrays([array])
        validity, *buffers = array.buffers()
        bits = -(-n // 8)
        if self.kind != "null":
            self.files[0].write(memoryview(validity)[:bits] if validity is not None else b"\xff" * bits)
        if self.kind == "bits":
            self.files[1].write(memoryview(buffers[0])[:bits])
        elif self.kind == "fixed":
            self.files[1].write(memoryview(buffers[0])[:n * self.width])
        elif self.kind != "null":
            offsets = np.frombuffer(buffers[0], dtype=np.int32 if self.width == 4 else np.int64, count=n + 1)
            start, end = int(offsets[0]), int(offsets[n])
            if self.width == 4 and self.base + end - start > (1 << 31) - 1:
                raise OverflowError("a string column's row group past 2 GB")  # finish() writes the whole table
            self.files[1].write((offsets[1:] - start + self.base).tobytes())
            if buffers[1] is not None:
                self.files[2].write(memoryview(buffers[1])[start:end])
            self.base += end - start
        self.rows += n
        self.nulls += array.null_count

    def array(self, maps: list[mmap.mmap]):
        import pyarrow as pa

        if self.kind == "null":
            return pa.nulls(self.rows, self.type)
        buffers = []
        for file in self.files:
            file.flush()
            size = file.seek(0, 2)
            if size:
                maps.append(mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ))
                buffers.append(pa.py_buffer(maps[-1]))
            else:
                buffers.append(pa.py_buffer(_EMPTY))
        if not self.nulls:
            buffers[0] = None
        return pa.Array.from_buffers(self.type, self.rows, buffers, null_count=self.nulls)

    def close(self) -> None:
        for file in self.files:
            file.close()


class DiskGroup:
    """The rows of one row group, each flat column on disk (see the module's docstring)."""

    def __init__(self, schema, sink: DroppingSink) -> None:
        self.schema, self.sink = schema, sink
        self.rows = 0
        self._start()

    def _start(self) -> None:
        self.columns: list[Any] = []
        for field in self.schema:
            kind = _kind(field.type)
            self.columns.append(_DiskColumn(field.type, kind) if kind else [])

    def add(self, table) -> None:
        for column, chunks in zip(self.columns, table.columns):
            array = chunks.combine_chunks() if chunks.num_chunks != 1 else chunks.chunk(0)
            if isinstance(column, list):
                column.append(array)
            else:
                column.add(array)
        self.rows += len(table)

    def write(self, writer, row_group_size: int) -> None:
        """Write the group as one row group of `writer`, then let its files and mappings go."""
        import pyarrow as pa

        maps = self.sink.maps
        try:
            arrays = [pa.concat_arrays(c) if isinstance(c, list) else c.array(maps) for c in self.columns]
            table = pa.Table.from_arrays(arrays, schema=self.schema)
            del arrays
            with self.sink.dropping():
                writer.write_table(table, row_group_size=row_group_size)
            del table
        finally:
            self.close()
        self.rows = 0
        self._start()

    def close(self) -> None:
        self.sink.unmap()
        for column in self.columns:
            if not isinstance(column, list):
                column.close()
