"""Read row files (JSONL, CSV, Parquet, a frame or mapping in memory), chosen by extension (io.writing writes them).

Every row comes with its line number (JSONL, CSV) or row number (Parquet), so that errors say where.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from labeller.errors import BadInputError
from labeller.io.csvcells import unescape_cell
from labeller.io.memory import as_source, is_frame, is_mapping

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


_KEY_END = re.compile(rb'"[ \t\r\n]*:')  # how every key of a JSON object ends


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


def _read_jsonl(path: Path, span: list[int] | None = None,
                check_keys: bool = True) -> Iterator[tuple[int, dict[str, Any]]]:
    """Line by line from the file, never the whole text in memory (a corpus may be gigabytes). Lines end
    at b"\\n" only: splitlines() would also break at U+2028, U+0085 and friends, which JSON allows
    unescaped inside strings (json.dumps(ensure_ascii=False) writes them raw). Given `span`, it holds the
    [start, end) byte offsets of the line of each row as it is yielded (io.corpus_index reads rows again).
    A line that gives a key twice is refused (_refuse_repeated_keys), a corpus's too. `check_keys` is off only to
    measure what that costs (benchmarks/jsonl_repeated_keys.py): 1.43-1.44 times the reading of 200,000 passages of 60
    words, a colon in one of five (22% of LLMJudge's MS MARCO passages hold one), 1.24 times that of label rows."""
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
                # every key is followed by a colon: a line with no more colons than its object has keys names
                # none twice, and is not scanned again (most corpus passages hold no colon)
                if check_keys and raw.count(b":") != len(row):
                    _refuse_repeated_keys(raw, row, path, number)
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
            if check_keys:
                _refuse_repeated_keys(raw, row, path, number)
            yield number, row
    if blank:
        raise BadInputError("file is empty; expected at least one row", path=str(path))


def _refuse_repeated_keys(raw: bytes, row: dict[str, Any], path: Path, number: int) -> None:
    """A line that names a field twice ({"grade": 1, ..., "grade": 4}): JSON parsers keep the last, silently, and
    which grade was meant is not ours to guess. Every key is a quote then a colon (spaces between allowed): a line
    with no more of those than its objects have keys, nested ones included (a BEIR corpus's "metadata"), repeats
    none; any other (a quote and colon inside a text) is parsed again pair by pair."""
    ends = len(_KEY_END.findall(raw))
    if ends == len(row) or ends == _keys_in(row):
        return
    repeated: list[tuple[str, int]] = []  # the first key given twice, and which object (in closing order) gave it
    objects = 0

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal objects
        keys = [key for key, _ in items]
        if not repeated and len(set(keys)) < len(keys):
            repeated.append((next(key for i, key in enumerate(keys) if key in keys[:i]), objects))
        objects += 1
        return dict(items)

    json.loads(raw, object_pairs_hook=pairs)
    if repeated:
        key, closed = repeated[0]
        where = "this line's object" if closed == objects - 1 else "an object inside this line"  # the line's is last
        raise BadInputError(f"field '{key}' is given twice in {where}; expected each field once",
                            path=str(path), line=number, field=key)


def _keys_in(value: Any) -> int:
    """How many keys the objects in a parsed JSON value hold, nested ones included."""
    if type(value) is dict:
        return len(value) + sum(_keys_in(item) for item in value.values() if type(item) in (dict, list))
    if type(value) is list:
        return sum(_keys_in(item) for item in value if type(item) in (dict, list))
    return 0


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
    yield from frame_rows(frame)


def frame_rows(frame: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number from 1, row) of a pandas frame (an in-memory input, a Parquet file), each cell as _plain makes
    it, built a column at a time (_plain_column)."""
    names = [str(c) for c in frame.columns]
    columns = [_plain_column(frame.iloc[:, i]) for i in range(len(names))]
    for number, values in enumerate(zip(*columns), start=1):
        yield number, dict(zip(names, values))


def _plain_column(column: Any) -> list[Any]:
    """A frame's column as io.tables._plain makes each of its cells, a column at a time where the dtype says what
    every cell is (whole numbers, booleans, floats with NaN for missing, strings only): a 200,000-row labels table
    reads in 0.13-0.14 of the time a cell at a time took (benchmarks/frame_rows.py). Any other column (dates,
    lists, nullable or mixed values) goes cell by cell."""
    import pandas as pd

    kind = column.dtype.kind
    if kind in "iub" and not isinstance(column.dtype, pd.api.extensions.ExtensionDtype):
        return column.tolist()
    if kind == "f" and not isinstance(column.dtype, pd.api.extensions.ExtensionDtype):
        return [None if v != v else v for v in column.tolist()]  # NaN is the only value not equal to itself
    if pd.api.types.infer_dtype(column, skipna=False) == "string" and not column.isna().any():
        return column.tolist()  # strings only (pandas 3's str dtype says "string" with missing cells too)
    return [_plain(v) for v in column.tolist()]


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
