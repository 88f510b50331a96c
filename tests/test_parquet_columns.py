"""A Parquet row group's columns gathered on disk and mapped back (labeller.io.parquet_columns): the same
bytes as pyarrow's whole-table write for every column kind, whatever the piece, and the mapped pages let go."""

from __future__ import annotations

import io
import mmap
import os
import tempfile
import time

import pyarrow.parquet as pq
import pytest
from test_flat_outputs import ROWS

import labeller.io.parquet_columns as parquet_columns
import labeller.io.parquet_rows as parquet_rows
from labeller.io.parquet_rows import ParquetRows, whole_table

# every layout DiskGroup knows, and a nested one it keeps in memory: strings with nulls and empty ones,
# a string column with no text at all, bools with nulls, timestamps, whole numbers with gaps, past int64
WIDE = [dict(row, meta={"n": i, "s": f"x{i}"}, empty="", nothing=None if i % 5 else "") for i, row in
        enumerate(ROWS)]


def _written(rows: list[dict], chunk: int) -> tuple[bytes, ParquetRows]:
    handle = io.BytesIO()
    parquet = ParquetRows(handle)
    for lo in range(0, len(rows), chunk):
        parquet.add(rows[lo:lo + chunk])
    parquet.finish()
    return handle.getvalue(), parquet


def _whole(rows: list[dict], group: int | None) -> bytes:
    whole = io.BytesIO()
    pq.write_table(whole_table(rows), whole, compression="snappy", row_group_size=group)
    return whole.getvalue()


@pytest.mark.parametrize("piece", [8, 16, 24, 8192])
@pytest.mark.parametrize("group", [None, 7, 64, 100])
@pytest.mark.parametrize("chunk", [1, 13, 300])
def test_columns_on_disk_give_the_whole_table_write(monkeypatch, piece, group, chunk):
    monkeypatch.setattr(parquet_rows, "PIECE", piece)
    if group:
        monkeypatch.setattr(parquet_rows, "ROW_GROUP", group)
    got, parquet = _written(WIDE, chunk)
    assert not parquet.wrote_whole  # the row groups were written from the mapped columns, not the fallback
    assert got == _whole(WIDE, group)
    table = pq.read_table(io.BytesIO(got))
    assert table.to_pylist()[123]["justification"] == "x" * (123 % 13) and table.column("meta")[3].as_py() == {
        "n": 3, "s": "x3"}  # cross-checked against the rows themselves, not only against pyarrow


def test_a_piece_not_a_whole_byte_of_bits_is_refused_and_the_whole_table_written(monkeypatch):
    """Bits of a piece of 7 rows do not start on a byte: DiskGroup refuses it rather than write wrong nulls,
    and finish() writes the whole table (the same bytes, all in memory)."""
    monkeypatch.setattr(parquet_rows, "PIECE", 7)
    got, parquet = _written(WIDE, 50)
    assert parquet.wrote_whole and got == _whole(WIDE, None)




def _rss_of(path_fd: int) -> int:
    """Rss (kB) of this process's mappings of the file open as `path_fd` (/proc/self/smaps)."""
    inode = os.fstat(path_fd).st_ino
    total, ours = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:  # a mapping's header line: address perms offset dev inode
                ours = fields[4] == str(inode)
            elif ours and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def test_the_sink_drops_the_mapped_pages_it_is_given():
    with tempfile.TemporaryFile() as file:
        file.write(b"\1" * (8 << 20))
        file.flush()
        mapped = mmap.mmap(file.fileno(), 8 << 20, access=mmap.ACCESS_READ)
        assert sum(mapped[i] for i in range(0, 8 << 20, 4096)) == 2048  # every page read: resident
        assert _rss_of(file.fileno()) >= 8 << 10
        sink = parquet_columns.DroppingSink(io.BytesIO())
        sink.maps.append(mapped)
        sink.write(b"x" * (parquet_columns.DROP_EVERY - 1))
        assert _rss_of(file.fileno()) >= 8 << 10  # not yet: fewer than DROP_EVERY bytes written
        sink.write(b"x")
        assert _rss_of(file.fileno()) == 0
        assert mapped[5 << 20] == 1  # the pages come back from the file when read again
        with sink.dropping():
            for _ in range(500):
                if not _rss_of(file.fileno()):
                    break
                time.sleep(0.01)
            assert _rss_of(file.fileno()) == 0  # the thread dropped it, with no byte written
        sink.unmap()
        assert mapped.closed and sink.handle.getvalue() == b"x" * parquet_columns.DROP_EVERY


def test_pieces_that_are_slices_of_a_table_give_the_whole_table_write():
    """Arrays that start inside a byte of bits (slices) are copied whole first: the same file as pyarrow's."""
    import pyarrow as pa

    table = whole_table(WIDE).slice(3)  # every column's bits start at bit 3
    expected = io.BytesIO()
    pq.write_table(table, expected, compression="snappy")
    got = io.BytesIO()
    sink = parquet_columns.DroppingSink(got)
    with pq.ParquetWriter(sink, table.schema, compression="snappy") as writer:
        group = parquet_columns.DiskGroup(table.schema, sink)
        for lo in range(0, len(table), 16):
            group.add(table.slice(lo, 16))
        group.write(writer, 1 << 20)
    assert got.getvalue() == expected.getvalue() and pa.types.is_struct(table.schema.field("meta").type)
