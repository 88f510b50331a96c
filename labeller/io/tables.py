"""Read and write row files (JSONL, CSV, Parquet), chosen by extension.

Every row comes with its line number (JSONL, CSV) or row number (Parquet), so that errors say where.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

from labeller.errors import BadInputError, OutputError
from labeller.io.csvcells import escape_row, unescape_cell
from labeller.io.jsonl import jsonl
from labeller.io.memory import as_source, is_frame, is_mapping
from labeller.io.outputs import refuse_guarded
from labeller.io.parquet_rows import TIMESTAMP_COLUMNS, ParquetRows, typed_frame, write_whole  # noqa: F401 (typed_frame, TIMESTAMP_COLUMNS: their old home)
from labeller.io.staletemp import own_temp

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


_HEADER_WORDS = {"query_id", "query-id", "qid", "queryid", "doc_id", "corpus-id", "docid"}


def is_headed_tsv(path: str | Path) -> bool:
    """A .tsv whose first line names columns (BEIR's qrels/test.tsv: query-id, corpus-id, score), read as a
    table; a headerless .tsv stays a TREC file (whitespace-separated, tabs included)."""
    if is_frame(path) or is_mapping(path):
        return False
    path = Path(path)
    if path.suffix.lower() != ".tsv" or not path.is_file():
        return False
    with path.open("rb") as handle:
        first = handle.readline().decode("utf-8-sig", errors="replace")
    from labeller.io.columns import mapped_sources

    known = _HEADER_WORDS | {name.lower() for name in mapped_sources()}  # --columns query_id=q: "q" is a header
    return any(word.strip().lower() in known for word in first.split("\t"))


def table_format(path: str | Path) -> str:
    if is_frame(path):
        return "memory"
    suffix = Path(path).suffix.lower()
    if suffix == ".tsv" and is_headed_tsv(path):
        return "tsv"
    if suffix not in FORMATS:
        raise BadInputError(
            f"unknown file type '{suffix or '(none)'}'; expected .jsonl, .csv or .parquet", path=str(path)
        )
    return FORMATS[suffix]


def read_rows(path: str | Path, role: str | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, row) for each row; raise BadInputError naming file and line.

    `role` (queries, corpus, pairs, grades, run) renames columns named otherwise (labeller.io.columns).
    """
    from labeller.io.columns import renamed

    return renamed(_read_rows(as_source(path)), role)


def _read_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if is_frame(path):
        yield from path.rows()
        return
    if not path.is_file():
        raise BadInputError("file not found", path=str(path))
    kind = table_format(path)
    if kind == "tsv":
        yield from _read_csv(_decode(path.read_bytes(), path), path, delimiter="\t")
        return
    if kind == "parquet":
        yield from _read_parquet(path)
        return
    if kind == "jsonl":
        yield from _read_jsonl(path)
        return
    raw = path.read_bytes()
    if not raw.strip():
        raise BadInputError("file is empty; expected at least one row", path=str(path))
    yield from _read_csv(_decode(raw, path), path)


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise BadInputError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); expected UTF-8 text", path=str(path), line=line
        ) from None


def _read_jsonl(path: Path, span: list[int] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Line by line from the file, never the whole text in memory (a corpus may be gigabytes). Lines end
    at b"\\n" only: splitlines() would also break at U+2028, U+0085 and friends, which JSON allows
    unescaped inside strings (json.dumps(ensure_ascii=False) writes them raw). Given `span`, it holds the
    [start, end) byte offsets of the line of each row as it is yielded (io.corpus_index reads rows again)."""
    blank = True
    plain = _PLAIN_VALUES.issuperset
    end = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if span is not None:
                span[0] = end
                end += len(raw)
                span[1] = end
            try:  # the usual line: a JSON object of strings, read by orjson straight from the bytes
                row = orjson.loads(raw)
            except orjson.JSONDecodeError:
                row = None  # a blank line, a byte-order mark, bad UTF-8 or bad JSON: the full reading below
            if type(row) is dict and plain(map(type, row.values())):
                blank = False
                yield number, row
                continue
            if blank and raw.strip():
                blank = False
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise BadInputError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); expected UTF-8 text",
                                    path=str(path), line=number) from None
            if not line.strip():
                continue
            try:
                row = loads(line)
            except ValueError as exc:
                raise BadInputError(f"not valid JSON ({getattr(exc, 'msg', exc)}); expected one JSON object per line",
                                    path=str(path), line=number) from None
            if not isinstance(row, dict):
                raise BadInputError(f"expected a JSON object, got {type(row).__name__}", path=str(path), line=number)
            yield number, row
    if blank:
        raise BadInputError("file is empty; expected at least one row", path=str(path))


def loads(text: str | bytes) -> Any:
    """json.loads, by orjson where it gives the same values (3-4x faster on the rows of a large corpus).
    orjson reads an integer past 64 bits as a float: a row holding any float, list or object is read
    again by json, which is rare in inputs (ids and texts are strings). Anything orjson refuses (NaN,
    1e400, lone surrogates, bad JSON) goes to json too, so the values and error messages are json's own."""
    try:
        row = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
    if type(row) is not dict or any(type(v) in _MAYBE_CHANGED for v in row.values()):
        return json.loads(text)
    return row


_MAYBE_CHANGED = (float, list, dict)
_PLAIN_VALUES = frozenset({str, int, bool, type(None)})  # values orjson reads exactly as json does (see loads)


def load_own(text: str | bytes) -> Any:
    """A record labeller wrote itself (pydantic's JSON: no integer past 64 bits, no NaN): orjson alone."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _read_csv(text: str, path: Path, delimiter: str = ",") -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    if not reader.fieldnames:
        raise BadInputError("no header row; expected column names on line 1", path=str(path), line=1)
    refuse_repeated_columns(reader.fieldnames, str(path), "header", line=1)
    rows = 0
    for row in reader:
        if None in row:
            raise BadInputError("more values than header columns", path=str(path), line=reader.line_num)
        rows += 1
        yield reader.line_num, {k: unescape_cell(v) for k, v in row.items() if k is not None}
    if not rows:  # as empty as an empty JSONL file: nothing to label, score or compare
        raise BadInputError("file has a header but no rows; expected at least one row", path=str(path))


def refuse_repeated_columns(columns: Iterable[Any], where: str, what: str, line: int | None = None) -> None:
    """A column named twice is ambiguous (csv.DictReader keeps the last value, silently): refuse it by name."""
    seen: set[str] = set()
    for column in map(str, columns):
        if column in seen:
            raise BadInputError(f"column '{column}' appears twice in the {what}; expected each column once (which of "
                                "the two is meant cannot be told)",
                                path=where, line=line, field=column)
        seen.add(column)


def _read_parquet(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for a broken file
        raise BadInputError(f"cannot read Parquet ({type(exc).__name__}); expected a Parquet file", path=str(path)) from None
    if frame.empty:
        raise BadInputError("file is empty; expected at least one row", path=str(path))
    for number, row in enumerate(frame.to_dict(orient="records"), start=1):
        yield number, {k: _plain(v) for k, v in row.items()}


def _plain(value: Any) -> Any:
    """A numpy/pandas cell as a plain Python value (lists and structs included); missing → None."""
    import numpy as np
    import pandas as pd

    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "isoformat"):  # timestamps and dates
        return value.isoformat()
    return value


def require(row: dict[str, Any], field: str, path: Path | str, line: int, *, kind: str = "string") -> str:
    """Return row[field] as a non-empty string, or raise naming file, line and field."""
    value = row.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        state = "missing" if field not in row else "empty"
        if field not in row:
            from labeller.io.columns import missing_hint

            state += missing_hint(field, list(row))
        raise BadInputError(f"{state}; expected a non-empty {kind}", path=str(path), line=line, field=field)
    if isinstance(value, (list, tuple, dict)):  # a JSON array or object, a Parquet list or struct column
        if kind == "text" and value:
            return json.dumps(value, ensure_ascii=False, default=str)  # as the judge is shown other fields, no repr
        raise BadInputError(f"{type(value).__name__}; expected a non-empty {kind}", path=str(path), line=line, field=field)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# mkstemp creates files readable by their owner only; outputs get the usual permissions instead.
_FILE_MODE = 0o666 & ~_umask()


@contextmanager
def atomic_file(path: str | Path, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file beside `path` and move it into place only if the block completes,
    so a reader sees the old file or the whole new one, never half."""
    path = Path(path)
    refuse_guarded(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            own_temp(fd, path, tmp)  # held until moved into place; a killed run's temporary files removed
            yield handle
            if not handle.closed:
                handle.flush()
            os.chmod(tmp, _FILE_MODE)
            os.replace(tmp, path)
    except OSError as exc:  # a full disk or a directory in the way: one line, and the old file is kept
        Path(tmp).unlink(missing_ok=True)
        raise _cannot_write(path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cannot_write(path: Path, exc: OSError) -> OutputError:
    return OutputError(f"cannot write this file ({exc.strerror or exc}); nothing was written to it", path=str(path))


def write_rows(path: str | Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write rows (JSONL, CSV or Parquet by extension) atomically."""
    path = Path(path)
    kind = table_format(path)
    if kind == "tsv":
        raise BadInputError("writing .tsv is not supported; expected .jsonl, .csv or .parquet", path=str(path))
    rows = list(rows)
    with atomic_file(path) as handle:
        if kind == "jsonl":
            for lo in range(0, len(rows), _WRITE_ROWS):
                handle.write(jsonl(rows[lo:lo + _WRITE_ROWS]))
        else:
            import pandas as pd

            if kind == "csv":  # read by people in spreadsheets too: no cell may run as a formula
                frame = pd.DataFrame([escape_row(_json_cells(row)) for row in rows])
                handle.write(frame.to_csv(index=False).encode("utf-8"))
            else:
                write_whole(handle, rows)
    return path


def _json_cells(row: dict[str, Any]) -> dict[str, Any]:
    """A list or dict cell (a label's sample_grades) as JSON text: CSV has no list type."""
    return {k: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v for k, v in row.items()}
_WRITE_ROWS = 512  # JSONL rows encoded and written at a time


class RowWriter:
    """write_rows a chunk at a time: JSONL and CSV rows go to the temporary file as they come (the same
    bytes write_rows writes, except that a CSV column of whole numbers with gaps keeps "12" rather than
    pandas' "12.0"), and the file is moved into place by close(); abort() (or an error in the with block)
    leaves no output, as write_rows does. Parquet has one schema for the whole file: its rows go to a
    temporary file as they come and are written a row group at a time at close() (io.parquet_rows), the
    same bytes as write_rows."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.kind = table_format(self.path)
        if self.kind == "tsv":
            raise BadInputError("writing .tsv is not supported; expected .jsonl, .csv or .parquet", path=str(path))
        self.columns: list[str] | None = None
        self.rows = 0
        self._atomic = atomic_file(self.path)
        self._handle = self._atomic.__enter__()
        self._parquet = ParquetRows(self._handle) if self.kind == "parquet" else None

    def write(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        self.rows += len(rows)
        try:
            if self.kind == "jsonl":
                for lo in range(0, len(rows), _WRITE_ROWS):  # buffers small enough to be reused, not mapped anew
                    self._handle.write(jsonl(rows[lo:lo + _WRITE_ROWS]))
                return
            rows = [orjson.loads(row) if type(row) is bytes else row for row in rows]  # JSONL lines: as dicts
            if self.kind == "csv":
                import pandas as pd

                frame = pd.DataFrame([escape_row(_json_cells(row)) for row in rows], columns=self.columns,
                                     dtype=object)
                self._handle.write(frame.to_csv(index=False, header=self.columns is None).encode("utf-8"))
                self.columns = list(frame.columns)
            else:
                self._parquet.add(rows)
        except OSError as exc:
            self.abort()
            raise _cannot_write(self.path, exc) from None

    def close(self) -> Path:
        if not self.rows:  # nothing came: exactly what write_rows writes for no rows
            self.abort()
            return write_rows(self.path, [])
        try:
            if self._parquet is not None:
                self._parquet.finish()
        except OSError as exc:
            self.abort()
            raise _cannot_write(self.path, exc) from None
        except BaseException:
            self.abort()
            raise
        atomic, self._atomic = self._atomic, None
        atomic.__exit__(None, None, None)
        return self.path

    def abort(self) -> None:
        if self._atomic is not None:
            atomic, self._atomic = self._atomic, None
            atomic.__exit__(_Aborted, _Aborted(), None)  # atomic_file removes its temporary file
        if self._parquet is not None:
            self._parquet.spill.close()

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is not None:
            self.abort()


class _Aborted(Exception):
    """Thrown into atomic_file's generator: remove the temporary file, move nothing into place."""


def write_text(path: str | Path, text: str) -> Path:
    """Write a text file atomically."""
    with atomic_file(path, "w") as handle:
        handle.write(text)
    return Path(path)
