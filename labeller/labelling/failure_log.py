"""The failures of a run, kept on disk past the first few thousand: a run stopped by --max-cost early in a
million pairs has a million "not sent" failures, which held as records set the run's peak (~1.5 KB each).

A FailureLog is a read-only sequence of LabelFailure in the order they were added (input order): its first
KEPT failures in memory, the rest as JSON lines in an unlinked temporary file, read back (and rebuilt) as
they are iterated. It stands wherever a list of failures is read (len, iteration, an index or a slice, ==),
and a LabelRun holds it as it is (it is not copied into a list when the run is built).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from labeller.records import LabelFailure

KEPT = 2_000  # failures held as records; the rest are read back from the file


class FailureLog(Sequence):
    def __init__(self, kept: int | None = None) -> None:
        self.head: list[LabelFailure] = []
        self.kept = KEPT if kept is None else kept
        self.file: Any = None
        self.spilled = 0

    def append(self, failure: LabelFailure) -> None:
        if len(self.head) < self.kept:
            self.head.append(failure)
            return
        if self.file is None:
            self.file = tempfile.TemporaryFile(prefix="labeller-failures-")
        self.file.seek(0, 2)
        self.file.write(failure.model_dump_json().encode("utf-8") + b"\n")
        self.spilled += 1

    def __len__(self) -> int:
        return len(self.head) + self.spilled

    def __iter__(self) -> Iterator[LabelFailure]:
        yield from self.head
        if self.file is not None:
            self.file.flush()
            self.file.seek(0)
            for line in itertools.islice(self.file, self.spilled):
                yield LabelFailure.model_validate_json(line)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return list(itertools.islice(self, *index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("failure index out of range")
        return self.head[index] if index < len(self.head) else next(itertools.islice(self, index, None))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, FailureLog)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __add__(self, other: Sequence[LabelFailure]) -> list[LabelFailure]:
        return [*self, *other]

    def __radd__(self, other: Sequence[LabelFailure]) -> list[LabelFailure]:
        return [*other, *self]

    def __repr__(self) -> str:
        return f"FailureLog({len(self)} failures, {self.spilled} on disk)"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """In a pydantic model: taken as it is (no copy), and written out as a list of failures."""
        from pydantic_core import core_schema

        return core_schema.is_instance_schema(cls, serialization=core_schema.plain_serializer_function_ser_schema(
            lambda log: [failure.model_dump() for failure in log]))
