"""Peak memory against pairs done, inside one first-labelling run (memory_slope.py's `first` runs).

Every `every` seconds: the labeller process's peak RSS so far (VmHWM in /proc/<pid>/status, the process found by
a string only its command line holds, e.g. its store's path) and the pairs done: those the fake server has answered
(tests/leanapi.py's GET /stats: `answered`), or, for a judge with no server (offline:lexical, in-process), the rows
written so far (`LinesWritten`). One large run then shows whether the peak grows while pairs are judged, without
a run of every size: on two shared cores a judge over HTTP labels a few hundred pairs a second at best.
Each sample is printed as it is taken: a run stopped early still leaves its trace.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path

WARM_PAIRS = 40_000  # two planning chunks (engine.PLAN_CHUNK): the peak's start-up climb is over by then


def _pid_of(marker: str) -> int | None:
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in args and b"labeller" in args and not args[0].endswith(b"time"):
            return int(proc.name)
    return None


def _peak_kib(pid: int) -> int | None:
    try:
        return next(int(line.split()[1]) for line in open(f"/proc/{pid}/status") if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return None


def answered(url: str) -> Callable[[], int]:
    """Pairs the lean fake server at `url` has answered since this call (it may have answered earlier runs)."""
    def total() -> int:
        with urllib.request.urlopen(url + "/stats") as reply:
            return json.load(reply)["total"]

    base = total()
    return lambda: total() - base


class LinesWritten:
    """Rows a `labeller label --out OUT` still running has written: the newlines of its temporary file (written as
    it goes, moved into place at the end: writing.atomic_file's .<name>.*.tmp beside OUT), each call reading on from
    where the last stopped. A .jsonl output only (a row a line)."""

    def __init__(self, out: Path) -> None:
        self.out, self.count, self._handle = out, 0, None

    def __call__(self) -> int:
        if self._handle is None:
            temps = sorted(self.out.parent.glob(f".{self.out.name}.*.tmp"), key=lambda p: p.stat().st_mtime)
            if not temps:
                return self.count
            self._handle = open(temps[-1], "rb")  # noqa: SIM115 - kept open across calls; closed by close()
        while chunk := self._handle.read(1 << 24):
            self.count += chunk.count(b"\n")
        return self.count

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


class PeakTrace:
    """`with PeakTrace(marker, done) as trace:` ... trace.points: [(pairs done, peak MB so far)]; `done()` counts
    the pairs done so far (answered, LinesWritten)."""

    def __init__(self, marker: str, done: Callable[[], int], every: float = 10.0) -> None:
        self.marker, self.done, self.every = marker, done, every
        self.points: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakTrace:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        pid = None
        while not self._stop.wait(self.every):
            pid = pid or _pid_of(self.marker)
            peak = _peak_kib(pid) if pid else None
            if peak is None:
                continue
            done = self.done()
            self.points.append((done, peak / 1024))
            print(f"  trace: {done:,} pairs done, peak so far {peak / 1024:.0f} MB", flush=True)

    def slope(self) -> float | None:
        """MB per million pairs: the least-squares slope of the peak so far against pairs done, past WARM_PAIRS."""
        return least_squares([(done / 1e6, mb) for done, mb in self.points if done >= WARM_PAIRS])


def least_squares(points: list[tuple[float, float]]) -> float | None:
    """The least-squares slope of y against x; None without two distinct x."""
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else None
