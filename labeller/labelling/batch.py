"""Group the cache writes of one event-loop pass into one transaction.

Replies tend to arrive together (one epoll wake-up delivers several), and each SQLite commit costs
far more than the rows in it. The first caller of a pass yields once, so every worker resumed in
the same pass can add its item, then writes them all in one call; each caller gets its own result
only once the write is done. A verdict is therefore on disk before its worker moves on, a few
microseconds after it arrived.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class LoopBatcher(Generic[T, R]):
    def __init__(self, write: Callable[[list[T]], list[R] | None]) -> None:
        self.write = write
        self.pending: list[tuple[T, asyncio.Future]] = []

    async def submit(self, item: T) -> R | None:
        future = asyncio.get_running_loop().create_future()
        self.pending.append((item, future))
        if len(self.pending) == 1:  # the first of this pass writes for everyone
            try:
                await asyncio.sleep(0)
            finally:
                self.flush()
        return await future

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        try:
            results = self.write([item for item, _ in batch])
        except Exception as exc:  # every caller sees the failure; nothing is silently dropped
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for i, (_, future) in enumerate(batch):
            if not future.done():
                future.set_result(None if results is None else results[i])
