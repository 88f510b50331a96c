"""Group the verdict writes of one event-loop pass into one transaction, for one pass of waiting.

Replies tend to arrive together (one epoll wake-up delivers several), and each SQLite commit costs
far more than the rows in it. The first verdict of a pass schedules the write (call_soon); every
worker of that pass then yields once. asyncio runs callbacks first in, first out, so the write runs
at the head of the next pass, before any of those workers resumes: each finds its verdict committed
(or the write's error raised to it) and only then sends its next request. A verdict is therefore on
disk before its worker moves on, and a killed run loses only what was in flight.

Why one yield and not a future per verdict: a future set by the write wakes its waiters a pass
later still, and on a busy loop a pass is tens of milliseconds of replies being parsed; two passes
around every request (one more for the lease) left about half of --concurrency in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Batch(Generic[T]):
    __slots__ = ("items", "written", "error")

    def __init__(self) -> None:
        self.items: list[T] = []
        self.written = False
        self.error: BaseException | None = None


class LoopBatcher(Generic[T]):
    def __init__(self, write: Callable[[list[T]], object]) -> None:
        self.write = write
        self.open: _Batch[T] | None = None  # the batch of this pass, not written yet

    async def submit(self, item: T) -> None:
        """Return once `item` is written (with the others of its pass); raise the write's error if it failed."""
        batch = self.open
        if batch is None:
            batch = self.open = _Batch()
            asyncio.get_running_loop().call_soon(self.flush, batch)
        batch.items.append(item)
        await asyncio.sleep(0)
        if not batch.written:  # cannot happen in asyncio's FIFO order; written here rather than assumed
            self.flush(batch)
        if batch.error is not None:
            raise batch.error

    def flush(self, batch: _Batch[T]) -> None:
        """Write a batch once; its error is kept for each of its workers."""
        if batch.written:
            return
        batch.written = True
        if self.open is batch:
            self.open = None
        try:
            self.write(batch.items)
        except Exception as exc:  # every worker of the batch sees the failure; nothing is silently dropped
            batch.error = exc
