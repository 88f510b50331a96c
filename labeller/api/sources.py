"""What a notebook hands the API (DataFrames, lists of rows, ranx-style dicts, paths) as inputs the
ordinary readers read, so a DataFrame meets exactly the checks and figures a file does.

A frame, list of rows or {query: {doc: value}} dict is handed to the readers in memory (io.memory.InMemory:
nothing is written); errors and results name it as the caller knows it ("labels DataFrame:3: field 'grade':
...", row 3 being the third row). A path given under another name (a run's) is a link so named in a private
temporary folder (a label call given no `out` writes nothing: its labels are only returned). The library's messages speak
of command-line flags ("--from-scale labels=0-3"); called from Python they name the parameter instead
(`from_scale="labels=0-3"`), unless the command line is the caller (`flag_wording`).
"""

from __future__ import annotations

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


class Sources:
    """A call's inputs as the readers take them (in_memory), a temporary folder for what must be a file (a path
    under another name), and how to name each back to the caller."""

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

    def add(self, source: Source, role: str, name: str | None = None) -> Path | InMemory:
        """What to read `source` from: a path, or the frame or mapping itself (io.memory.InMemory), which every
        reader takes where it takes a path; `name` is a run's name in results."""
        if not isinstance(source, (str, Path)):
            return in_memory(source, role, name)
        path = Path(source)
        if name is None:
            return path
        # a path under another name (a run's): a link named so, in a folder of its own
        link = self._slot(name, path.suffix if path.suffix != ".gz" else "".join(path.suffixes[-2:]))
        link.symlink_to(path.resolve())
        self.names[str(link)] = str(path)
        return link

    def _slot(self, name: str, suffix: str) -> Path:
        folder = self.root / str(len(list(self.root.iterdir())))
        folder.mkdir()
        return folder / f"{re.sub(r'[^A-Za-z0-9_.@+-]', '_', name) or 'input'}{suffix}"

    def shown(self, text: str) -> str:
        for path, name in self.names.items():
            text = text.replace(path, name)
        return text

    def rename(self, result: BaseModel) -> BaseModel:
        """The result with every temporary path replaced by the caller's name for it."""
        if not self.names:
            return result
        return type(result).model_validate_json(self.shown(result.model_dump_json()))


def readable(source: Source | None, role: str) -> Path | InMemory | None:
    """What the readers read `source` from: a path as it is, anything else in memory (in_memory); None stays None."""
    if source is None or isinstance(source, (str, Path)):
        return None if source is None else Path(source)
    return in_memory(source, role)


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
