"""Arrays that grow with a slice, kept in an unlinked temporary file and read back through a memory map.

A large slice's indexes (a corpus's ids and where each row is, the pairs' ids as numbers) grow with the
slice: held in memory they set a run's peak (~100 MB a million pairs). A Spill gathers its values in a small
buffer and writes them out as it goes; frozen, it is read through a map whose pages are let go every
RELEASE_BYTES read (mapped pages count as the process's memory until they are), so what is resident follows
what was read lately, not the length. An array that never outgrows its buffer stays in memory: no file at all.

Sorting (an index's lookup order, finding a pair given twice) goes a bucket at a time (bucket_sorted): the
values are scattered by their top bits into spills of about BUCKET values, and each is sorted alone.
"""

from __future__ import annotations

import mmap
import tempfile
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

SPILL_BUFFER = 1 << 20  # bytes gathered before they are written out (and the largest array kept in memory)
BUCKET_BUFFER = 1 << 16  # the same for each bucket of a sort: a few hundred buckets stay small together
RELEASE_BYTES = 16 << 20  # mapped bytes read between two releases of the map's pages
BUCKET = 1 << 20  # values sorted in memory at a time
PAGE = 4096  # what one value read alone may bring in
_RELEASE = getattr(mmap, "MADV_DONTNEED", None)  # not on Windows: the pages stay until the map is closed
_SIGN = np.uint64(1 << 63)
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads values that differ only in low bits


class Spill:
    """An append-only array of one typecode ("q", "i", "B"), written out a buffer at a time."""

    def __init__(self, typecode: str, buffer_bytes: int | None = None) -> None:
        self.typecode = typecode
        self.buffer = array(typecode)
        self.limit = max(1, (buffer_bytes or SPILL_BUFFER) // self.buffer.itemsize)
        self.file: Any = None
        self.written = 0

    def append(self, value: int) -> None:
        self.buffer.append(value)
        if len(self.buffer) >= self.limit:
            self._write()

    def extend(self, values: np.ndarray | bytes) -> None:
        self.buffer.frombytes(values if isinstance(values, bytes) else
                              np.ascontiguousarray(values, dtype=self.buffer.typecode).tobytes())
        if len(self.buffer) >= self.limit:
            self._write()

    def __len__(self) -> int:
        return self.written + len(self.buffer)

    def _write(self) -> None:
        if self.file is None:
            self.file = tempfile.TemporaryFile(prefix="labeller-spill-")
        self.file.write(self.buffer)
        self.written += len(self.buffer)
        self.buffer = array(self.typecode)

    def freeze(self) -> Mapped:
        if self.file is None:  # never outgrew its buffer: kept as it is
            return Mapped(self.buffer, self.typecode)
        self._write()
        self.file.flush()
        mapped = mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ)  # the map keeps the file open
        self.file.close()
        self.file = None
        return Mapped(mapped, self.typecode)


class Mapped(Sequence):
    """A frozen Spill: an index gives a value, a slice a sequence of them (an array's or a memoryview's)."""

    def __init__(self, data: array | mmap.mmap, typecode: str) -> None:
        self.data, self.typecode = data, typecode
        self.mapped = isinstance(data, mmap.mmap)
        self.view = memoryview(data).cast(typecode) if self.mapped else data
        self.itemsize = self.view.itemsize
        self.read = 0

    def __len__(self) -> int:
        return len(self.view)

    def __getitem__(self, index):
        if self.mapped:
            self.touch(PAGE if not isinstance(index, slice) else len(range(*index.indices(len(self.view))))
                       * self.itemsize)
        return self.view[index]

    def __iter__(self) -> Iterator[int]:
        for lo in range(0, len(self.view), BUCKET):
            yield from self[lo:lo + BUCKET]

    def bytes_at(self, start: int, end: int) -> bytes:
        if self.mapped:
            self.touch(end - start + PAGE)
            return self.data[start:end]
        return self.data[start:end].tobytes()

    def numpy(self) -> np.ndarray:
        """The values as a numpy array over the same memory (release() once done with a large part of it)."""
        return np.frombuffer(self.data, dtype=np.dtype(self.typecode)) if len(self.view) else \
            np.zeros(0, dtype=np.dtype(self.typecode))

    def touch(self, size: int) -> None:
        self.read += size
        if self.read >= RELEASE_BYTES:
            self.release()

    def release(self) -> None:
        """Let the mapped pages go: they are read from the file again if asked for."""
        self.read = 0
        if self.mapped and _RELEASE is not None:
            self.data.madvise(_RELEASE)


def bucket_sorted(values: Mapped, mixed: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The int64 values and their positions, a bucket of about BUCKET values at a time, each sorted by value
    (equal values in position order). Unmixed, a value's bucket is its top bits: the buckets come in value
    order, together the whole array sorted. Mixed, it is a hash's: values crowded into a few top bits (two
    numbers side by side) still spread, and equal values still meet, but the buckets come in no order."""
    n = len(values)
    bits = (n // BUCKET).bit_length()
    if not bits:
        whole = values.numpy()
        order = np.argsort(whole, kind="stable")
        yield whole[order], order
        values.release()
        return
    shift = np.uint64(64 - bits)
    spills = [(Spill("q", BUCKET_BUFFER), Spill("q", BUCKET_BUFFER)) for _ in range(1 << bits)]
    for lo in range(0, n, BUCKET):
        block = values.numpy()[lo:lo + BUCKET]
        spread = block.view(np.uint64) * _MIX if mixed else block.view(np.uint64) ^ _SIGN
        bucket = (spread >> shift).astype(np.int64)
        order = np.argsort(bucket, kind="stable")  # stable: each bucket's positions stay in order
        ends = np.cumsum(np.bincount(bucket, minlength=1 << bits))
        block, positions = block[order], order + lo
        values.release()
        for (kept, where), start, end in zip(spills, np.concatenate(([0], ends[:-1])), ends):
            if end > start:
                kept.extend(block[start:end])
                where.extend(positions[start:end])
    for kept, where in spills:
        if len(kept):
            these, at = np.array(kept.freeze().numpy()), np.array(where.freeze().numpy())
            order = np.argsort(these, kind="stable")
            yield these[order], at[order]


def later_twins(values: Mapped) -> np.ndarray:
    """The positions of values equal to one earlier in the array, in order."""
    found = [at[1:][these[1:] == these[:-1]] for these, at in bucket_sorted(values, mixed=True)]
    return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)


def without(values: Mapped, dropped: np.ndarray) -> Mapped:
    """The values but those at the (sorted) positions dropped, a block at a time."""
    if not len(dropped):
        return values
    kept = Spill(values.typecode)
    for lo in range(0, len(values), BUCKET):
        block = np.array(values.numpy()[lo:lo + BUCKET])
        values.release()
        mask = np.ones(len(block), dtype=bool)
        mask[dropped[np.searchsorted(dropped, lo):np.searchsorted(dropped, lo + len(block))] - lo] = False
        kept.extend(block[mask])
    return kept.freeze()


def spilled(typecode: str, values: Sequence[int] | np.ndarray) -> Mapped:
    """A Mapped array of these values (tests, and arrays built whole)."""
    spill = Spill(typecode)
    spill.extend(np.asarray(values))
    return spill.freeze()
