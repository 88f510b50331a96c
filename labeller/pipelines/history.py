"""The history of scheduled regression runs: `history.parquet` (one row per run and metric) and the
runs themselves under `history/runs/`, so that every stored run can be scored again.

Why the runs are kept: a run is scored only on the pairs someone labelled, and each regression
job labels the pool of its own top k and the baseline's. A pool-dependent figure (recall's
denominator, NDCG's ideal DCG) of the same baseline therefore differs from one day to the next
(recall@10 0.770 beside bm25, 0.977 beside random). Each row keeps the value as recorded (what
that day's gate saw) and the value rescored on the current labels, which is what a trend can
compare; `labeller.pipelines.rescore` fills the rescored columns.

Rows are appended by rewriting the file atomically, so a killed run never leaves half a file;
the history of a scheduled job stays small (runs x metrics), so rewriting is cheap. A history
that cannot be read stops the job before anything is paid for, and is never overwritten.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from labeller.errors import BadInputError
from labeller.io.tables import frame_rows
from labeller.io.validation import validation_error
from labeller.io.writing import write_rows, write_text

RUNS_DIR = Path("history") / "runs"  # under the output dir; row paths are relative to it


class HistoryRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    run_at: str  # ISO timestamp of the run
    retriever: str
    metric: str
    value: float | None  # as recorded: on that day's labels (None: nothing to average)
    baseline_value: float | None = None
    judge: str
    rubric_version: str
    regression: bool = False  # the run failed its gate
    # Added with the stored runs; None in rows written before them.
    run_file: str | None = None  # the run, relative to the output dir (history/runs/...)
    baseline_file: str | None = None
    judged: float | None = None  # judged@k of the run as recorded (k: the metric's cutoff)
    baseline_judged: float | None = None
    rescored_value: float | None = None  # on the labels of `rescored_labels`
    rescored_baseline_value: float | None = None
    rescored_judged: float | None = None
    rescored_baseline_judged: float | None = None
    rescored_labels: str | None = None  # digest of the labels the rescored columns are computed on
    # Judge drift (labeller.pipelines.drift), apart from `regression`: None when the judge did not change.
    judge_drift: bool | None = None
    drift_kappa: float | None = None  # quadratic kappa of the old and new judge's verdicts on the drift sample
    # Downstream outcomes ([outcomes]): None without them. The task success rate in outcomes.file (the baseline's
    # retrieval), and the rate the outcome model predicts for this run's retrieval.
    outcome_rate: float | None = None
    predicted_outcome_rate: float | None = None


def history_path(out: Path) -> Path:
    return out / "history.parquet"


def read_history(path: str | Path) -> list[HistoryRow]:
    path = Path(path)
    if not path.exists():
        return []
    if not path.is_file():
        raise BadInputError("the regression history is not a file; expected a Parquet file written by "
                            "`labeller run`", path=str(path))
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises its own error types for every kind of damage
        raise BadInputError(f"the regression history cannot be read ({type(exc).__name__}: {str(exc)[:120]}); "
                            "expected a Parquet file written by `labeller run`. Move it away to start a new "
                            "history", path=str(path)) from None
    rows = []
    for n, row in frame_rows(frame):  # missing cells as None, numpy values as Python's
        try:
            rows.append(HistoryRow.model_validate(row))
        except ValidationError as exc:
            raise validation_error(exc, path=str(path), line=n, expected="a history row written by `labeller run`") \
                from None
    return rows


def write_history(path: str | Path, rows: list[HistoryRow]) -> list[HistoryRow]:
    write_rows(path, [row.model_dump() for row in rows])
    return rows


def store_run(out: Path, text: str, name: str) -> str:
    """Keep a run's text under history/runs/ as `<name>-<digest>.trec` and return its relative path.
    Named by content, so the baseline shared by many runs is stored once and a promoted one anew."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    relative = RUNS_DIR / f"{name}-{digest}.trec"
    if not (out / relative).is_file():
        write_text(out / relative, text)
    return relative.as_posix()
