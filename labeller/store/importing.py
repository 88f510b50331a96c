"""import_verdicts: the bulk inverse of `cache export`. Verdicts made elsewhere (another team's store, a vLLM
run on a cluster turned into export rows) enter a store in one pass.

The file is read twice: the first pass checks every row (a bad one is an error naming file, line and field)
and writes nothing, so a bad file leaves the store as it was; the second reads it again and writes the
verdicts in chunks. Neither pass holds the whole file. Verdicts the store already holds are left alone (the
first verdict paid for a key stays, as in copy_store), and so is a second row for a key earlier in the file:
an import can be rerun, or resumed after it was interrupted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from labeller.errors import BadInputError
from labeller.io.tables import read_rows, table_format
from labeller.records import Verdict
from labeller.store.base import CachedVerdict
from labeller.store.copy import COPY_CHUNK, copy_new
from labeller.store.registry import open_store

_KEY = re.compile(r"[0-9a-f]{64}")  # labeller.cache_key: a SHA-256 in hex
_TEXT = ("cache_key", "query_id", "doc_id", "judge", "provider", "model", "schema_version", "rubric",
         "rubric_version", "created_at")
_OPTIONAL_TEXT = ("served_model", "system_fingerprint")
_WHOLE = ("input_tokens", "output_tokens", "cached_input_tokens", "attempts", "grade")
_REAL = ("cost_usd", "latency_s")
_OBJECTS = ("settings", "reply")  # JSON text of an object (export writes them so), or an object
_COLUMNS = frozenset(_TEXT + _OPTIONAL_TEXT + _WHOLE + _REAL + _OBJECTS + ("justification",))


class ImportResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str
    target: str  # passwords redacted
    read: int
    imported: int
    already: int  # held by the store, or by an earlier row of the file


def import_verdicts(path: str | Path, store_spec: str | Path | None = None) -> ImportResult:
    """Check every row of `path` (a `cache export` file: JSONL, CSV or Parquet), then store its verdicts."""
    path = Path(path)
    table_format(path)
    read = sum(1 for _ in _verdicts(path))  # every row checked before the store is even opened
    imported = 0
    with open_store(store_spec) as store:
        pending: dict[str, CachedVerdict] = {}
        for record in _verdicts(path):
            pending.setdefault(record.cache_key, record)  # a second row for a key: the first stays
            if len(pending) >= COPY_CHUNK:
                imported += copy_new(list(pending.values()), store)
                pending = {}
        imported += copy_new(list(pending.values()), store)
        return ImportResult(source=str(path), target=store.location, read=read, imported=imported,
                            already=read - imported)


def _verdicts(path: Path) -> Iterator[CachedVerdict]:
    for line, row in read_rows(path):
        yield verdict_of(row, path, line)


def verdict_of(row: dict[str, Any], path: Path | str, line: int) -> CachedVerdict:
    """One export row as the CachedVerdict it was exported from; BadInputError naming the field otherwise."""
    def bad(field: str, message: str) -> BadInputError:
        return BadInputError(message, path=str(path), line=line, field=field)

    if unknown := sorted(set(row) - _COLUMNS):
        raise bad(unknown[0], "unknown column; expected the columns `labeller cache export` writes")
    values = {name: row.get(name) if name == "justification" else _cell(row.get(name)) for name in _COLUMNS}
    for name in _TEXT:
        if not isinstance(values[name], str) or not values[name].strip():
            raise bad(name, f"{'missing' if values[name] is None else 'not a non-empty text'}; expected a non-empty text")
    if not _KEY.fullmatch(values["cache_key"]):
        raise bad("cache_key", "expected a cache key as labeller writes it (64 lowercase hex digits)")
    for name in _OPTIONAL_TEXT:
        if values[name] is not None and not isinstance(values[name], str):
            raise bad(name, "expected a text or nothing")
    for name in _WHOLE:
        values[name] = _number(values[name], int, lambda m, n=name: bad(n, m))
    for name in _REAL:
        values[name] = _number(values[name], float, lambda m, n=name: bad(n, m))
    for name in _OBJECTS:
        values[name] = _object(values[name], lambda m, n=name: bad(n, m))
    values["created_at"] = _timestamp(values["created_at"], lambda m: bad("created_at", m))
    reply, grade, justification = values.pop("reply"), values.pop("grade"), values.pop("justification")
    if reply is not None:
        if grade is not None:
            raise bad("grade", "a row holds a relevance grade or another task's reply, not both")
        verdict: Verdict | dict[str, Any] = reply
    else:
        try:
            verdict = Verdict(grade=grade, justification=justification)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise bad(str(error["loc"][0]), f"{error['msg']}; expected a grade 1-5 and a non-empty justification") from None
    if values["attempts"] is None:
        values["attempts"] = 1
    values["settings"] = values["settings"] or {}
    try:
        return CachedVerdict(verdict=verdict, **values)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise bad(".".join(map(str, error["loc"])), error["msg"]) from None


def _cell(value: Any) -> Any:
    """An empty CSV cell is a missing value, as export wrote it."""
    return None if value == "" else value


def _number(value: Any, kind: type, bad) -> Any:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value) if kind is float or not value.strip().lstrip("+-").isdigit() else int(value)
        except ValueError:
            raise bad(f"'{value}' is not a number; expected {'a whole number' if kind is int else 'a number'}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise bad(f"expected {'a whole number' if kind is int else 'a number'}, got {value!r}")
    if kind is int and isinstance(value, float) and not value.is_integer():  # CSV writes integers with gaps as 12.0
        raise bad(f"expected a whole number, got {value!r}")
    if value < 0:  # tokens, attempts, cost and latency, as a grade (checked as a Verdict), are never negative
        raise bad(f"expected a number of at least 0, got {value!r}")
    return kind(value)


def _object(value: Any, bad) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise bad(f"not valid JSON ({getattr(exc, 'msg', exc)}); expected a JSON object") from None
    if not isinstance(value, dict):
        raise bad(f"expected a JSON object, got {type(value).__name__}")
    return value


def _timestamp(text: str, bad) -> str:
    """The time written as labeller writes times (milliseconds and the offset) when that is the same instant: a
    Parquet export reads back as a timestamp, which pandas writes with microseconds (or none at all when they
    are 0), so a verdict exported to Parquet and imported again is unchanged. Any other time is kept as written."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise bad(f"'{text}' is not an ISO-8601 time; expected e.g. 2026-12-02T10:00:00.000+00:00") from None
    if moment.tzinfo is not None and moment.microsecond % 1000 == 0:
        return moment.isoformat(timespec="milliseconds")
    return text
