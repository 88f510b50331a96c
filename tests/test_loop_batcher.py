"""batch.LoopBatcher: the verdicts of one event-loop pass in one write, each worker resumed only after it."""

from __future__ import annotations

import asyncio

import pytest

from labeller.labelling.batch import LoopBatcher


def test_one_write_per_pass_and_no_worker_goes_on_before_it():
    writes: list[list[int]] = []
    seen_after: dict[int, int] = {}  # item -> how many writes had happened when its worker went on

    async def worker(batcher: LoopBatcher[int], item: int) -> None:
        await batcher.submit(item)
        seen_after[item] = len(writes)
        assert any(item in batch for batch in writes), "a worker went on before its item was written"

    async def main() -> None:
        batcher: LoopBatcher[int] = LoopBatcher(lambda items: writes.append(list(items)))
        await asyncio.gather(*(worker(batcher, i) for i in range(50)))  # all submit in the same pass
        await asyncio.gather(*(worker(batcher, i) for i in range(50, 60)))

    asyncio.run(main())
    assert writes == [list(range(50)), list(range(50, 60))]
    assert all(seen_after[i] == 1 for i in range(50)) and all(seen_after[i] == 2 for i in range(50, 60))


def test_a_failed_write_reaches_every_worker_of_its_pass_and_only_them():
    calls = []

    def write(items: list[str]) -> None:
        calls.append(list(items))
        if "bad" in items:
            raise OSError("disk full")

    async def main() -> list[object]:
        batcher: LoopBatcher[str] = LoopBatcher(write)
        first = await asyncio.gather(batcher.submit("a"), batcher.submit("bad"), return_exceptions=True)
        second = await asyncio.gather(batcher.submit("c"), return_exceptions=True)
        return [*first, *second]

    results = asyncio.run(main())
    assert [type(r).__name__ for r in results] == ["OSError", "OSError", "NoneType"]
    assert calls == [["a", "bad"], ["c"]]


def test_a_cancelled_worker_does_not_lose_the_items_of_its_pass():
    writes: list[list[int]] = []

    async def main() -> None:
        batcher: LoopBatcher[int] = LoopBatcher(lambda items: writes.append(list(items)))
        tasks = [asyncio.create_task(batcher.submit(i)) for i in range(3)]
        await asyncio.sleep(0)  # every task has submitted and yielded
        tasks[0].cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(results[0], asyncio.CancelledError) or results[0] is None

    asyncio.run(main())
    assert writes == [[0, 1, 2]]


@pytest.mark.parametrize("n", [1, 2, 200])
def test_every_item_is_written_exactly_once(n: int):
    written: list[int] = []

    async def main() -> None:
        batcher: LoopBatcher[int] = LoopBatcher(written.extend)

        async def worker(start: int) -> None:
            for i in range(start, start + 5):
                await batcher.submit(i)

        await asyncio.gather(*(worker(k * 5) for k in range(n)))

    asyncio.run(main())
    assert sorted(written) == list(range(n * 5))
