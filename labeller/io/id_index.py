"""IdIndex: the ids of a large corpus, each mapped to its number (its row's place in the file), in ~27 bytes an id.

A dict of a million ids to their numbers took ~140 bytes an id (the string, an int object, the dict's slot):
the largest part of what a labelling run held for its whole slice. Here the ids are one UTF-8 blob with where
each ends, and the lookup is a sorted array of the ids' hashes (Python's own str hash: the index lives and dies
in one process) with the number of each: a binary search, then the id itself compared, so two ids of one hash
are told apart. An id is a str again only when it is asked for (IdColumn, iteration).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np


class IdNames(Sequence):
    """The ids in number order, each decoded from the blob when asked."""

    def __init__(self, blob: bytes, ends: array) -> None:
        self.blob, self.ends = blob, ends

    def __getitem__(self, number):  # an int: IdColumn and the index ask for one at a time
        start = self.ends[number - 1] if number else 0
        return self.blob[start:self.ends[number]].decode("utf-8", "surrogatepass")

    def __len__(self) -> int:
        return len(self.ends)


class IdIndex(Mapping):
    """id -> number, for ids appended in number order; freeze() before the first lookup."""

    def __init__(self) -> None:
        self._blob = bytearray()
        self._ends = array("q")
        self._hashes: array | None = array("q")
        self.names: IdNames | None = None

    def append(self, key: str) -> None:
        self._blob += key.encode("utf-8", "surrogatepass")
        self._ends.append(len(self._blob))
        self._hashes.append(hash(key))

    def freeze(self) -> list[tuple[int, int]]:
        """Sort the hashes for lookups. Returns the ids given twice, as (first number, later number) pairs."""
        hashes = np.frombuffer(self._hashes, dtype=np.int64)
        order = np.argsort(hashes, kind="stable")
        self._sorted = array("q", hashes[order].tobytes()) if len(hashes) else array("q")
        self._order = array("i", order.astype(np.int32).tobytes())
        self._hashes = None
        self.names = IdNames(bytes(self._blob), self._ends)
        self._blob = bytearray()
        twice = []
        same = np.flatnonzero(np.frombuffer(self._sorted, dtype=np.int64)[1:]
                              == np.frombuffer(self._sorted, dtype=np.int64)[:-1]) if len(self._sorted) > 1 else ()
        for i in same:  # equal hashes: the same id twice, or (rarely) two ids of one hash
            first, later = sorted((self._order[i], self._order[i + 1]))
            if self.names[first] == self.names[later]:
                twice.append((first, later))
        return sorted(twice, key=lambda pair: pair[1])

    def get(self, key: str, default=None):
        sorted_hashes, order, names = self._sorted, self._order, self.names
        value = hash(key)
        i = bisect_left(sorted_hashes, value)
        while i < len(sorted_hashes) and sorted_hashes[i] == value:
            if names[order[i]] == key:
                return order[i]
            i += 1
        return default

    def numbers(self, keys: list[str]) -> np.ndarray:
        """The number of each key, -1 for a key not here: one vectorized search for many keys."""
        wanted = np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys))
        sorted_hashes = np.frombuffer(self._sorted, dtype=np.int64)
        at = np.searchsorted(sorted_hashes, wanted)
        found = np.frombuffer(self._order, dtype=np.int32)[np.minimum(at, max(len(sorted_hashes) - 1, 0))] \
            if len(sorted_hashes) else np.zeros(len(keys), dtype=np.int32)
        out = found.astype(np.int64)
        names = self.names
        for i, (key, number) in enumerate(zip(keys, out.tolist())):
            if at[i] >= len(sorted_hashes) or names[number] != key:
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
        return len(self._ends)


def index_of(ids: Iterable[str]) -> IdIndex:
    index = IdIndex()
    for key in ids:
        index.append(key)
    index.freeze()
    return index
