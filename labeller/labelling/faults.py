"""Labelling stopped by Ctrl-C or by a cache that cannot be written: one line that says what is safe.

Every verdict is on disk a moment after it arrives (see batch.py), so an interrupted run loses
nothing paid for; the user needs to hear that, and how to go on, instead of a bare exit 130.

The first Ctrl-C stops sending new requests and waits for the ones in flight, whose answers are
paid for and are stored like any other: nothing is paid twice by the rerun. A second Ctrl-C stops
at once (the requests then in flight, at most --concurrency, are not kept).

A full disk or a read-only cache found mid-run (the early check in io/outputs.py catches most before
any request) keeps every verdict committed before it, and must read as such, not as a sqlite3 traceback.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from labeller.errors import Interrupted, JudgeError, OutputError, StoreError
from labeller.judges.base import Judge, JudgeReply
from labeller.rubric import JudgePrompt
from labeller.store.registry import redact_url

T = TypeVar("T")


class StopRequested(JudgeError):
    """Raised for a request the user's Ctrl-C came before: a JudgeError, so the engine sends nothing more."""


class StoppableJudge(Judge):
    """The run's judge, which refuses new requests once `stopping` is set; requests already sent finish."""

    def __init__(self, inner: Judge) -> None:
        self.inner, self.stopping = inner, False
        self.provider, self.model, self.base_url = inner.provider, inner.model, inner.base_url

    def __getattr__(self, name: str) -> Any:  # anything else a judge offers (only called for missing attributes)
        return getattr(self.inner, name)

    def decoding_settings(self) -> dict[str, Any]:
        return self.inner.decoding_settings()

    async def generate(self, prompt: JudgePrompt) -> JudgeReply:
        if self.stopping:
            raise StopRequested("interrupted (Ctrl-C)")
        return await self.inner.generate(prompt)

    async def served_identity(self) -> str | None:
        return await self.inner.served_identity()

    async def aclose(self) -> None:
        await self.inner.aclose()


def run_labelling(main: Callable[[Judge], Coroutine[Any, Any, T]], judge: Judge, cache_dir: str | Path) -> T:
    """Run `main(judge)` on a new event loop, with Ctrl-C handled as above (ending in an Interrupted error
    that counts the cached verdicts), and a cache write that fails (full disk, read-only) turned into an
    OutputError naming the cache."""
    stoppable = StoppableJudge(judge)

    async def supervised() -> T:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()

        def on_ctrl_c() -> None:
            if stoppable.stopping and task is not None:
                task.cancel()
                return
            stoppable.stopping = True
            print("labeller: stopping: waiting for the requests in flight to be answered and stored "
                  "(Ctrl-C again to stop at once)", file=sys.stderr, flush=True)

        try:
            loop.add_signal_handler(signal.SIGINT, on_ctrl_c)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals here
            return await main(stoppable)
        try:
            return await main(stoppable)
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    results: list[T] = []

    async def keep_result() -> None:  # not returned through the task: Python 3.11's asyncio.run formats
        results.append(await supervised())  # the main task twice on exit, and its repr holds the result

    try:
        asyncio.run(keep_result())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise Interrupted(interrupted_message(cache_dir)) from None
    except StoreError as exc:  # the store's own message names it, credentials redacted
        raise OutputError(f"{exc}: the verdict cache could not be written; every verdict stored before this is "
                          "kept: free some space, fix the path or bring the database back, then rerun the same "
                          "command") from None
    except (sqlite3.Error, OSError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise OutputError(f"the verdict cache could not be written ({reason}); every verdict stored before this "
                          "is kept: free some space or fix the path, then rerun the same command",
                          path=redact_url(cache_dir)) from None
    result = results[0]
    if stoppable.stopping:
        raise Interrupted(interrupted_message(cache_dir))
    return result


@contextmanager
def verdicts_kept(cache_dir: str | Path) -> Iterator[None]:
    """An output that fails to write after labelling says that every verdict is in the cache."""
    try:
        yield
    except OutputError as exc:
        raise OutputError(f"{exc.detail}; every verdict is in the cache at {redact_url(cache_dir)}: fix the path "
                          "and rerun the same command, nothing is paid again", path=exc.path) from None


def interrupted_message(cache_dir: str | Path) -> str:
    from labeller.store import open_store

    shown = redact_url(cache_dir)
    try:
        with open_store(cache_dir, create=False) as cache:
            count = cache.stats().entries
    except Exception:  # noqa: BLE001 - the run is over; a count we cannot take must not hide the message
        return (f"interrupted; every verdict received so far is in the cache at {shown}; "
                "rerun the same command to continue")
    noun = "verdict is" if count == 1 else "verdicts are"
    return f"interrupted; {count:,} {noun} safe in the cache at {shown}; rerun the same command to continue"
