"""Labelling stopped by Ctrl-C or by a cache that cannot be written: one line that says what is safe.

Every verdict is on disk a moment after it arrives (see batch.py), so an interrupted run loses
nothing paid for; the user needs to hear that, and how to go on, instead of a bare exit 130. A full
disk or a read-only cache found mid-run (the early check in io/outputs.py catches most before any
request) keeps every verdict committed before it, and must read as such, not as a sqlite3 traceback.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from labeller.errors import Interrupted, OutputError

T = TypeVar("T")


def run_labelling(main: Coroutine[Any, Any, T], cache_dir: str | Path) -> T:
    """asyncio.run(main), turning Ctrl-C into an Interrupted error that counts the cached verdicts, and
    a cache write that fails (full disk, read-only) into an OutputError naming the cache."""
    try:
        return asyncio.run(main)
    except KeyboardInterrupt:
        raise Interrupted(interrupted_message(cache_dir)) from None
    except (sqlite3.Error, OSError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise OutputError(f"the verdict cache could not be written ({reason}); every verdict stored before this "
                          "is kept: free some space or fix the path, then rerun the same command",
                          path=str(cache_dir)) from None


@contextmanager
def verdicts_kept(cache_dir: str | Path) -> Iterator[None]:
    """An output that fails to write after labelling says that every verdict is in the cache."""
    try:
        yield
    except OutputError as exc:
        raise OutputError(f"{exc.detail}; every verdict is in the cache at {cache_dir}: fix the path and rerun "
                          "the same command, nothing is paid again", path=exc.path) from None


def interrupted_message(cache_dir: str | Path) -> str:
    from labeller.cache import VerdictCache

    try:
        with VerdictCache(cache_dir, create=False) as cache:
            count = cache.stats().entries
    except Exception:  # noqa: BLE001 - the run is over; a count we cannot take must not hide the message
        return (f"interrupted; every verdict received so far is in the cache at {cache_dir}; "
                "rerun the same command to continue")
    noun = "verdict is" if count == 1 else "verdicts are"
    return f"interrupted; {count:,} {noun} safe in the cache at {cache_dir}; rerun the same command to continue"
