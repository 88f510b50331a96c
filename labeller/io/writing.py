"""Write row files (JSONL, CSV, Parquet, by extension) and text files atomically: a reader sees the old file or the
whole new one, never half, and a failed or interrupted write leaves no output (io.tables reads them back).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

from labeller.errors import BadInputError, OutputError
from labeller.io.csvcells import escape_row
from labeller.io.jsonl import jsonl
from labeller.io.outputs import refuse_guarded
from labeller.io.parquet_rows import ParquetRows, write_whole
from labeller.io.staletemp import own_temp
from labeller.io.tables import table_format


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
