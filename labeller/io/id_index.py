"""IdIndex: the ids of a large corpus, each mapped to its number (its row's place in the file), in ~27 bytes an id.

A dict of a million ids to their numbers took ~140 bytes an id (the string, an int object, the dict's slot):
the largest part of what a labelling run held for its whole slice. Here the ids are one UTF-8 blob with where
each ends, and the lookup is a sorted array of the ids' hashes (Python's own str hash: the index lives and dies
in one process) with the number of each: a binary search, then the id itself compared, so two ids of one hash
are told apart. An id is a str again only when it is asked for (IdColumn, iteration). A large index's arrays
(~28 bytes an id) live in temporary files, read through maps let go as they are read (io.spill): what a run
holds of them follows what it reads lately, not the corpus's length.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from labeller.io.spill import PAGE, Mapped, Spill, bucket_sorted


class IdNames(Sequence):
    """The ids in number order, each decoded from the blob when asked."""

    def __init__(self, blob: Mapped, ends: Mapped) -> None:
        self.blob, self.ends = blob, ends

    def __getitem__(self, number):  # an int: IdColumn and the index ask for one at a time
        start = self.ends[number - 1] if number else 0
        return self.blob.bytes_at(start, self.ends[number]).decode("utf-8", "surrogatepass")

    def __len__(self) -> int:
        return len(self.ends)

    def many(self, numbers: Sequence[int]) -> list[str]:
        """The ids of many numbers (a chunk's pairs): where each ends read at once, each decoded from the blob."""
        at = np.asarray(numbers, dtype=np.int64)
        ends = self.ends.numpy()
        stops, starts = ends[at].tolist(), np.where(at > 0, ends[np.maximum(at - 1, 0)], 0).tolist()
        blob = memoryview(self.blob.data)
        out = [str(blob[start:stop], "utf-8", "surrogatepass") for start, stop in zip(starts, stops)]
        self.ends.release()
        self.blob.release()
        return out


class IdIndex(Mapping):
    """id -> number, for ids appended in number order; freeze() before the first lookup."""

    def __init__(self) -> None:
        self._blob, self._ends, self._hashes = Spill("B"), Spill("q"), Spill("q")
        self._length = 0
        self.names: IdNames | None = None

    def append(self, key: str) -> None:
        encoded = key.encode("utf-8", "surrogatepass")
        self._blob.extend(encoded)
        self._length += len(encoded)
        self._ends.append(self._length)
        self._hashes.append(hash(key))

    def freeze(self) -> list[tuple[int, int]]:
        """Sort the hashes for lookups (a bucket at a time: io.spill). Returns the ids given twice, as (first
        number, later number) pairs."""
        self.names = names = IdNames(self._blob.freeze(), self._ends.freeze())
        hashes, self._hashes = self._hashes.freeze(), None
        in_order, numbers = Spill("q"), Spill("i")
        twice = []
        for values, positions in bucket_sorted(hashes):
            for i in np.flatnonzero(values[1:] == values[:-1]):  # the same id twice, or (rarely) two ids of one hash
                first, later = int(positions[i]), int(positions[i + 1])  # in number order (a stable sort)
                if names[first] == names[later]:
                    twice.append((first, later))
            in_order.extend(values)
            numbers.extend(positions)
        self._sorted, self._order = in_order.freeze(), numbers.freeze()
        return sorted(twice, key=lambda pair: pair[1])

    def get(self, key: str, default=None):
        sorted_hashes, order, names = self._sorted, self._order, self.names
        value = hash(key)
        i = bisect_left(sorted_hashes.view, value)
        sorted_hashes.touch(PAGE * 4)  # the binary search's last steps, each perhaps a page of its own
        while i < len(sorted_hashes) and sorted_hashes[i] == value:
            if names[order[i]] == key:
                return order[i]
            i += 1
        return default

    def numbers(self, keys: list[str]) -> np.ndarray:
        """The number of each key, -1 for a key not here: one vectorized search for many keys."""
        wanted = np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys))
        sorted_hashes = self._sorted.numpy()
        at = np.searchsorted(sorted_hashes, wanted)
        found = self._order.numpy()[np.minimum(at, max(len(sorted_hashes) - 1, 0))] \
            if len(sorted_hashes) else np.zeros(len(keys), dtype=np.int32)
        self._sorted.release()
        self._order.release()
        out = found.astype(np.int64)
        inside = (at < len(sorted_hashes)).tolist()
        for i, (key, name) in enumerate(zip(keys, self.names.many(out) if len(sorted_hashes) else [None] * len(keys))):
            if not inside[i] or name != key:
                out[i] = self.get(key, -1)  # another id of the same hash, or not here at all
        return out

    def __getitem__(self, key: str) -> int:
        number = self.get(key)
        if number is None:
            raise KeyError(key)
        return number

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names) if self.names is not None else len(self._ends)


def index_of(ids: Iterable[str]) -> IdIndex:
    index = IdIndex()
    for key in ids:
        index.append(key)
    index.freeze()
    return index
