"""What a notebook hands the API (DataFrames, lists of rows, ranx-style dicts, paths) as files the
ordinary readers read, so a DataFrame meets exactly the checks and figures a file does.

Each in-memory input is written to a private temporary folder (Parquet for tables, ranx's JSON
shape for {query: {doc: value}} dicts) under a name that says what it is; errors and results then
name the input as the caller knows it ("labels DataFrame:3: field 'grade': ...", row 3 being the
third row), never the temporary file. The library's messages speak of command-line flags
("--from-scale labels=0-3"); called from Python they name the parameter instead
(`from_scale="labels=0-3"`), unless the command line is the caller (`flag_wording`).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from labeller.errors import BadInputError

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


class Sources:
    """A temporary folder of inputs, and how to name each back to the caller."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self.names: dict[str, str] = {}  # temporary path -> what the caller calls it

    @property
    def root(self) -> Path:
        """The temporary folder, made on first use: a call given only paths (the CLI's) needs none."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="labeller-api-"))
        return self._root

    def close(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)

    def add(self, source: Source, role: str, name: str | None = None) -> Path:
        """The path to read `source` from; `name` becomes the file stem (a run's name in results)."""
        if isinstance(source, (str, Path)):
            path = Path(source)
            if name is None:
                return path
            # a path under another name: a link named so, in a folder of its own
            link = self._slot(name, path.suffix if path.suffix != ".gz" else "".join(path.suffixes[-2:]))
            link.symlink_to(path.resolve())
            self.names[str(link)] = str(path)
            return link
        frame_type = _frame_type(source)
        if frame_type is not None:
            return self._frame(source, role, name)
        if isinstance(source, list):
            import pandas as pd

            return self._frame(pd.DataFrame(source), role, name, kind="list of rows")
        mapping = source.to_dict() if hasattr(source, "to_dict") else source
        if isinstance(mapping, dict) and all(isinstance(v, dict) for v in mapping.values()):
            path = self._slot(name or role, ".json")
            path.write_text(json.dumps({str(q): {str(d): v for d, v in docs.items()} for q, docs in mapping.items()}),
                            encoding="utf-8")
            self.names[str(path)] = f"{role} dict"
            return path
        raise BadInputError(f"{role}: expected a file path, a pandas DataFrame, a list of row dicts or a "
                            f"{{query_id: {{doc_id: value}}}} dict, got {type(source).__name__}", field=role)

    def _slot(self, name: str, suffix: str) -> Path:
        folder = self.root / str(len(list(self.root.iterdir())))
        folder.mkdir()
        return folder / f"{re.sub(r'[^A-Za-z0-9_.@+-]', '_', name) or 'input'}{suffix}"

    def _frame(self, frame, role: str, name: str | None, kind: str = "DataFrame") -> Path:
        if frame.empty:
            raise BadInputError(f"the {role} {kind} has no rows; expected at least one row", field=role)
        path = self._slot(name or role, ".parquet")
        frame = frame.reset_index(drop=True)
        frame.attrs = {}  # our own labels frame carries its failures here; Parquet would try to store them
        frame.columns = [str(c) for c in frame.columns]
        try:
            frame.to_parquet(path, index=False)
        except Exception as exc:  # pyarrow refuses columns of mixed types, among others
            raise BadInputError(f"the {role} {kind} cannot be read as a table ({type(exc).__name__}: {exc}); "
                                "expected one type per column", field=role) from None
        self.names[str(path)] = f"{role} {kind}" if name is None else f"{role} '{name}' {kind}"
        return path

    def shown(self, text: str) -> str:
        for path, name in self.names.items():
            text = text.replace(path, name)
        return text

    def rename(self, result: BaseModel) -> BaseModel:
        """The result with every temporary path replaced by the caller's name for it."""
        if not self.names:
            return result
        return type(result).model_validate_json(self.shown(result.model_dump_json()))


def _frame_type(source: Any) -> str | None:
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        return None
    return "DataFrame" if isinstance(source, pd.DataFrame) else None


@contextmanager
def sources() -> Iterator[Sources]:
    """A Sources folder for one call; a BadInputError about one of its files names the caller's input."""
    held = Sources()
    try:
        yield held
    except BadInputError as exc:
        path = held.names.get(exc.path or "", exc.path)
        detail = held.shown(exc.detail)
        raise type(exc)(detail if _FLAG_WORDING.get() else parameter_wording(detail), path=path, line=exc.line,
                        field=exc.field) from None
    finally:
        held.close()
