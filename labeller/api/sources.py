"""What a notebook hands the API (DataFrames, lists of rows, ranx-style dicts, paths) as inputs the
ordinary readers read, so a DataFrame meets exactly the checks and figures a file does.

A frame, list of rows or {query: {doc: value}} dict is handed to the readers in memory (io.memory.InMemory:
nothing is written); errors and results name it as the caller knows it ("labels DataFrame:3: field 'grade':
...", row 3 being the third row). A path is read where it is; a name the caller gives a run goes beside it
(EvaluateOptions.run_names), so nothing is linked, copied or written (a label call given no `out` only returns its
labels). The library's messages speak of command-line flags ("--from-scale labels=0-3"); called from Python they
name the parameter instead (`from_scale="labels=0-3"`), unless the command line is the caller (`flag_wording`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from labeller.errors import BadInputError
from labeller.io.memory import InMemory
from labeller.io.tables import refuse_repeated_columns

_FLAG_WORDING: ContextVar[bool] = ContextVar("labeller_flag_wording", default=False)
_BOOL_FLAGS = {"clip", "fail-on-regression", "require-significance", "fill-holes", "exact-scores"}
_FLAG_VALUE = re.compile(r"(?<![\w`-])--([a-z][a-z0-9-]*) ([^\s,;)]*[=\d][^\s,;)]*)")
_FLAG = re.compile(r"(?<![\w`-])--(?!json\b)([a-z][a-z0-9-]*)")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


@contextmanager
def flag_wording() -> Iterator[None]:
    """Inside this block errors keep naming command-line flags: the CLI's calls of the API."""
    token = _FLAG_WORDING.set(True)
    try:
        yield
    finally:
        _FLAG_WORDING.reset(token)


def parameter_wording(text: str) -> str:
    """A message's command-line flags as the API's parameters: `--from-scale gold=0-3` ->
    `from_scale="gold=0-3"`, `--clip` -> `clip=True`, `--labels-alt` -> `labels_alt`."""
    def with_value(m: re.Match) -> str:
        value = m.group(2)
        return f"{m.group(1).replace('-', '_')}={value if _NUMBER.fullmatch(value) else repr(value)}"

    def bare(m: re.Match) -> str:
        return m.group(1).replace("-", "_") + ("=True" if m.group(1) in _BOOL_FLAGS else "")

    return _FLAG.sub(bare, _FLAG_VALUE.sub(with_value, text))


Source = Any  # a path, a pandas DataFrame, a list of row dicts, a {query: {doc: value}} dict, a ranx Run/Qrels


def readable(source: Source | None, role: str, name: str | None = None) -> Path | InMemory | None:
    """What the readers read `source` from: a path as it is, anything else in memory (in_memory), named `name` (a
    run's name in results) if given; None stays None. A path's own name is given beside it (EvaluateOptions'
    run_names), so nothing is ever linked or copied under another name."""
    if source is None or isinstance(source, (str, Path)):
        return None if source is None else Path(source)
    return in_memory(source, role, name)


def in_memory(source: Source, role: str, name: str | None = None) -> InMemory:
    """A DataFrame, list of row dicts or {query_id: {doc_id: value}} dict (a ranx Run or Qrels too) as the readers
    take it, named for errors as the caller knows it ("labels DataFrame", "run 'bm25' DataFrame")."""
    if isinstance(source, InMemory):
        return source
    if _frame_type(source) is not None:
        return _frame(source, role, name)
    if isinstance(source, list):
        import pandas as pd

        return _frame(pd.DataFrame(source), role, name, kind="list of rows")
    mapping = source.to_dict() if hasattr(source, "to_dict") else source
    if isinstance(mapping, dict) and mapping and all(isinstance(v, dict) for v in mapping.values()):
        return InMemory(f"{role} dict" if name is None else f"{role} '{name}' dict", name or role, mapping=mapping)
    if isinstance(mapping, dict) and not mapping:
        raise BadInputError(f"the {role} dict is empty; expected {{query_id: {{doc_id: value}}}} with at least one "
                            "query", field=role)
    raise BadInputError(f"{role}: expected a file path, a pandas DataFrame, a list of row dicts or a "
                        f"{{query_id: {{doc_id: value}}}} dict, got {type(source).__name__}", field=role)


def _frame(frame, role: str, name: str | None, kind: str = "DataFrame") -> InMemory:
    if frame.empty:
        raise BadInputError(f"the {role} {kind} has no rows; expected at least one row", field=role)
    label = f"{role} {kind}" if name is None else f"{role} '{name}' {kind}"
    refuse_repeated_columns(frame.columns, label, "DataFrame")
    frame = frame.reset_index(drop=True)
    frame.columns = [str(c) for c in frame.columns]
    return InMemory(label, name or role, frame=frame)


def _frame_type(source: Any) -> str | None:
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        return None
    return "DataFrame" if isinstance(source, pd.DataFrame) else None


@contextmanager
def api_errors() -> Iterator[None]:
    """A BadInputError raised inside names the API's parameters instead of command-line flags (parameter_wording),
    unless the command line is the caller (flag_wording)."""
    try:
        yield
    except BadInputError as exc:
        if _FLAG_WORDING.get():
            raise
        raise type(exc)(parameter_wording(exc.detail), path=exc.path, line=exc.line, field=exc.field) from None
