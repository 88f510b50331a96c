"""Progress on stderr: pairs done, pairs per second, cache hits, failures, tokens, cost so far and ETA.

On a terminal, a bar redrawn a few times a second. Elsewhere (a CI log, a file, a notebook) a
plain line every LABELLER_PROGRESS_SECONDS seconds (default 30), so a long job shows it is alive
without filling the log with bar redraws; a run shorter than that prints no progress line at all.
`enabled=False` turns both off, `enabled=True` asks for the bar. The engine calls `tick` after
every pair; the output is only touched when due, so a fast run pays nothing for it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

PLAIN_SECONDS = 30.0


def _plain_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("LABELLER_PROGRESS_SECONDS", PLAIN_SECONDS)))
    except ValueError:
        return PLAIN_SECONDS


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class ProgressBar:
    MIN_INTERVAL = 0.25  # seconds between updates of the bar

    def __init__(self, total: int, enabled: bool | None = None, description: str = "labelling") -> None:
        self.total = total
        self.mode = ("bar" if enabled or (enabled is None and sys.stderr.isatty()) else
                     "plain" if enabled is None else "off")
        self.enabled = self.mode == "bar"
        self.description = description
        self.interval = self.MIN_INTERVAL if self.mode == "bar" else _plain_seconds()
        self._bar: Any = None
        self._task: Any = None
        self._started = time.monotonic()
        self._last = self._started
        self._first_done: int | None = None

    def __enter__(self) -> ProgressBar:
        self._started = self._last = time.monotonic()
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"), TextColumn("{task.fields[info]}"), TextColumn("ETA"),
                TimeRemainingColumn(), console=Console(stderr=True), refresh_per_second=4, transient=False,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.description, total=self.total, info="", rate="")
        return self

    def rate(self, done: int, now: float) -> float | None:
        """Pairs per second since the first tick (pairs already in the cache at the start are not a rate)."""
        if self._first_done is None:
            self._first_done = done
        elapsed = now - self._started
        return (done - self._first_done) / elapsed if elapsed > 0 else None

    def tick(self, done: int, cached: int, failed: int, tokens: int, cost: float | None, *, force: bool = False) -> None:
        if self.mode == "off":
            return
        now = time.monotonic()
        rate = self.rate(done, now)
        if now - self._last < self.interval and not (force and self._bar is not None):
            return
        self._last = now
        money = "cost unknown" if cost is None else f"${cost:.4f}"
        speed = "" if rate is None else f"{rate:.1f} pairs/s"
        info = f"cached {cached}  failed {failed}  tokens {tokens:,}  {money}"
        if self._bar is not None:
            self._bar.update(self._task, completed=done, info=info, rate=speed)
            return
        left = self.total - done
        eta = f", ETA {_duration(left / rate)}" if rate and left else ""
        share = f" ({100 * done / self.total:.0f}%)" if self.total else ""
        print(f"labeller: {self.description} {done}/{self.total} pairs{share}, {speed or '0.0 pairs/s'}, "
              f"cached {cached}, failed {failed}, tokens {tokens:,}, {money}, elapsed {_duration(now - self._started)}"
              f"{eta}", file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None
