"""The metrics history of scheduled regression runs: one Parquet file, one row per run and metric.

Rows are appended by rewriting the file atomically, so a killed run never leaves half a file;
the history of a scheduled job stays small (runs x metrics), so rewriting is cheap.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from labeller.io.tables import write_rows


class HistoryRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    run_at: str  # ISO timestamp of the run
    retriever: str
    metric: str
    value: float
    baseline_value: float | None = None
    judge: str
    rubric_version: str
    regression: bool = False


def read_history(path: str | Path) -> list[HistoryRow]:
    path = Path(path)
    if not path.is_file():
        return []
    import pandas as pd

    frame = pd.read_parquet(path)
    return [HistoryRow.model_validate({k: (None if v != v else v) for k, v in row.items()})
            for row in frame.to_dict(orient="records")]


def append_history(path: str | Path, rows: list[HistoryRow]) -> list[HistoryRow]:
    """Append rows and return the whole history."""
    history = read_history(path) + rows
    write_rows(path, [row.model_dump() for row in history])
    return history


class Trend(BaseModel):
    """The history arranged for the trend plot: one point per run, one series per metric."""

    model_config = ConfigDict(extra="forbid")
    run_at: list[str]
    retrievers: list[str]
    regression: list[bool]
    series: dict[str, list[float | None]]


def trend(history: list[HistoryRow]) -> Trend:
    times = sorted({r.run_at for r in history})
    first = {}
    for r in history:
        first.setdefault(r.run_at, r)
    series = {}
    for metric in sorted({r.metric for r in history}):
        by_time = {r.run_at: r.value for r in history if r.metric == metric}
        series[metric] = [by_time.get(t) for t in times]
    return Trend(run_at=times, retrievers=[first[t].retriever for t in times],
                 regression=[first[t].regression for t in times], series=series)
