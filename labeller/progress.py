"""A progress bar on stderr: pairs done, cache hits, failures, tokens, cost so far and ETA.

Quiet unless stderr is a terminal (or it is asked for). The engine calls `tick` after every
pair; the bar is only touched a few times a second, so a fast run pays nothing for it.
"""

from __future__ import annotations

import sys
import time
from typing import Any


class ProgressBar:
    MIN_INTERVAL = 0.25  # seconds between updates of the bar

    def __init__(self, total: int, enabled: bool | None = None, description: str = "labelling") -> None:
        self.total = total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.description = description
        self._bar: Any = None
        self._task: Any = None
        self._last = 0.0

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"), TextColumn("ETA"), TimeRemainingColumn(),
                console=Console(stderr=True), refresh_per_second=4, transient=False,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.description, total=self.total, info="")
        return self

    def tick(self, done: int, cached: int, failed: int, tokens: int, cost: float | None, *, force: bool = False) -> None:
        if self._bar is None:
            return
        now = time.monotonic()
        if not force and now - self._last < self.MIN_INTERVAL:
            return
        self._last = now
        money = "cost unknown" if cost is None else f"${cost:.4f}"
        info = f"cached {cached}  failed {failed}  tokens {tokens:,}  {money}"
        self._bar.update(self._task, completed=done, info=info)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None
