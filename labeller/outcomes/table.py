"""The outcomes table: what the downstream task made of each query's retrieval.

One row per query (or per production trace): `query_id` and/or `trace_id` (the agent's own trace
id, which joins a trace read by labeller.traces), and the result as `outcome` (correct/incorrect,
true/false, 1/0, yes/no, pass/fail, success/failure) or as a `score` (a number; the task succeeded
when score >= success_from). For the bookkeeping product: was the transaction categorised
correctly. A column the table has beyond these is refused, never silently dropped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from labeller.errors import BadInputError
from labeller.io.tables import read_rows

COLUMNS = ("query_id", "trace_id", "outcome", "score")
_TRUE = {"correct", "true", "1", "yes", "pass", "passed", "success", "succeeded", "ok"}
_FALSE = {"incorrect", "false", "0", "no", "fail", "failed", "failure", "wrong"}
Key = Literal["query_id", "trace_id"]


class OutcomeRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    query_id: str | None = None
    trace_id: str | None = None
    success: bool
    score: float | None = None  # the score as given (None when the table says correct/incorrect)
    line: int = 0  # where it was read: errors about a join name it


class OutcomeTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str
    rows: list[OutcomeRow]

    def keyed(self, by: Key) -> dict[str, OutcomeRow]:
        """The rows by query id or trace id; every row must have one, and none twice."""
        out: dict[str, OutcomeRow] = {}
        for row in self.rows:
            key = getattr(row, by)
            if key is None:
                raise BadInputError(f"missing; expected a {by} in every row to join on it", path=self.source,
                                    line=row.line, field=by)
            if key in out:
                raise BadInputError(f"{by} '{key}' is listed twice (first on line {out[key].line})",
                                    path=self.source, line=row.line, field=by)
            out[key] = row
        return out

    def by_default_key(self) -> tuple[Key, dict[str, OutcomeRow]]:
        """Keyed by query_id when every row has one, else by trace_id."""
        by: Key = "query_id" if all(r.query_id is not None for r in self.rows) else "trace_id"
        return by, self.keyed(by)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip()
    return text or None


def _success(row: dict[str, Any], success_from: float, source: str, line: int) -> tuple[bool, float | None]:
    outcome, score = row.get("outcome"), row.get("score")
    if outcome is not None and score is not None:
        raise BadInputError("has both outcome and score; expected one of them", path=source, line=line,
                            field="score")
    if outcome is None and score is None:
        raise BadInputError("missing; expected outcome (correct/incorrect, true/false, 1/0) or a numeric score",
                            path=source, line=line, field="outcome")
    if outcome is not None:
        if isinstance(outcome, bool):
            word = str(outcome).lower()
        elif isinstance(outcome, (int, float)) and outcome in (0, 1):
            word = str(int(outcome))
        else:
            word = str(outcome).strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE, None
        raise BadInputError(f"expected correct or incorrect (or true/false, 1/0, yes/no, pass/fail), got {outcome!r}",
                            path=source, line=line, field="outcome")
    try:
        value = float(score) if not isinstance(score, bool) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise BadInputError(f"expected a finite number, got {score!r}", path=source, line=line, field="score")
    return value >= success_from, value


def outcome_rows(rows: Iterable[tuple[int, dict[str, Any]]], source: str, success_from: float = 0.5) -> OutcomeTable:
    """Check and read rows (line, {column: value}) from a file or a DataFrame."""
    out = []
    for line, row in rows:
        unknown = [c for c in row if c not in COLUMNS]
        if unknown:
            raise BadInputError(f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; an outcomes "
                                f"table has {', '.join(COLUMNS)} (outcome or score)", path=source, line=line,
                                field=unknown[0])
        qid, tid = _text(row.get("query_id")), _text(row.get("trace_id"))
        if qid is None and tid is None:
            raise BadInputError("missing; expected a query_id or a trace_id in every row", path=source, line=line,
                                field="query_id")
        success, score = _success(row, success_from, source, line)
        out.append(OutcomeRow(query_id=qid, trace_id=tid, success=success, score=score, line=line))
    if not out:
        raise BadInputError("no rows; expected one row per query with its outcome", path=source)
    table = OutcomeTable(source=source, rows=out)
    table.by_default_key()  # duplicates are reported now, against their line
    return table


def read_outcome_table(path: str | Path, success_from: float = 0.5) -> OutcomeTable:
    """An outcomes file: JSONL, CSV or Parquet (labeller.io.tables)."""
    return outcome_rows(read_rows(path), str(path), success_from)
