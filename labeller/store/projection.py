"""Stored verdicts read as small JSON objects of chosen fields, built by the store where it can.

A cached rerun turns every stored verdict into an output row. Decoding the stored JSON, building a dict
and encoding it again costs ~10 µs a verdict in Python, on the thread that also hashes the prompts; a store
that hands over the row's JSON as bytes lets them be written as they are.

Both stores build the row once, in Python (Projection.json_of), as they write the verdict, and keep it with
the record (cached_row.py): PostgreSQL in a column, the directory store in the entry's tag. For a verdict
stored without one, the directory store builds it in SQLite's JSON functions on its lookup thread
(sqlite_json_object: numbers copied as the stored text, never re-rendered), ~6 µs a key of CPU. Built at read
time for PostgreSQL: on the server (json_to_record, one parse a record) 16-23 µs a key on its one connection;
by SQLite in memory on the lookup threads 8 µs a key of CPU that two cores did not have to spare.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

KeyPath = tuple[str, ...]  # keys into the stored record: ("verdict", "grade")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Projection:
    """`fields` in order, each read from a path into the stored record (a missing one is null) or given as a
    JSON constant ("true"); a record is projected only when every path of `required` holds a value of that
    JSON type ("integer", "text"): any other record is handed back as stored, for the caller's own reading."""

    fields: tuple[tuple[str, KeyPath | str], ...]
    required: tuple[tuple[KeyPath, str], ...] = ()  # types: "integer", "text"

    def __post_init__(self) -> None:  # names go into SQL as they are: plain identifiers and JSON literals only
        names = [name for name, _ in self.fields] + [part for _, source in self.fields if isinstance(source, tuple)
                                                     for part in source]
        names += [part for path, _ in self.required for part in path]
        constants = [source for _, source in self.fields if not isinstance(source, tuple)]
        if not all(map(_IDENTIFIER.fullmatch, names)) or not all(c in ("true", "false", "null") for c in constants) \
                or not all(kind in ("integer", "text") for _, kind in self.required):
            raise ValueError(f"a projection names plain fields and JSON literals only: {self}")

    @functools.cached_property
    def _plan(self) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...], tuple[tuple[str, KeyPath], ...]]:
        """json_of's row template (constants filled in), the fields read from the record's top level, the rest."""
        template = {name: _CONSTANTS.get(source) if type(source) is str else None for name, source in self.fields}
        top = [(name, source[0]) for name, source in self.fields if type(source) is tuple and len(source) == 1]
        nested = tuple((name, source) for name, source in self.fields if type(source) is tuple and len(source) > 1)
        return template, tuple(name for name, _ in top), tuple(part for _, part in top), nested

    @functools.cached_property
    def fingerprint(self) -> str:
        """Names this projection's definition: a row a store kept under another one is not this one's."""
        return hashlib.sha256(repr((self.fields, self.required)).encode()).hexdigest()[:16]

    def json_of(self, record: Any) -> bytes | None:
        """The projected object of a parsed record, as orjson writes it (a missing path is null), or None where
        the record lacks what `required` asks (the same records SQLite's json_object leaves out)."""
        if not isinstance(record, dict) or not all(_of_kind(_at(record, path), kind) for path, kind in self.required):
            return None
        template, top_names, top_parts, nested = self._plan
        row = template.copy()  # every name in order, constants filled in: the updates only fill values in
        row.update(zip(top_names, map(record.get, top_parts)))
        for name, path in nested:
            row[name] = _at(record, path)
        try:
            return orjson.dumps(row)
        except TypeError:  # an integer past 64 bits: label_row's reading, not this
            return None


_CONSTANTS = {"true": True, "false": False, "null": None}


def _at(record: dict[str, Any], path: KeyPath) -> Any:
    value: Any = record
    for part in path:
        value = value.get(part) if type(value) is dict else None
    return value


def _of_kind(value: Any, kind: str) -> bool:
    return type(value) is int if kind == "integer" else type(value) is str


def sqlite_json_object(projection: Projection, column: str) -> str:
    """An SQLite (3.38 or later) expression of a text column holding a stored record: its projected object, or ''
    where it is not projectable. CASE is evaluated lazily, so json_valid() guards the rest: ``->`` and json_type()
    on bad JSON would fail the whole statement."""
    def path_of(path: KeyPath) -> str:
        return "'$." + ".".join(path) + "'"
    types = " AND ".join([f"json_type({column}, {path_of(path)}) = '{kind}'" for path, kind in projection.required]
                         or ["1"])
    parts = [f"'{name}', " + (f"{column} -> {path_of(source)}" if isinstance(source, tuple) else
                              "NULL" if source == "null" else f"json('{source}')") for name, source in projection.fields]
    return (f"CASE WHEN json_valid({column}) THEN CASE WHEN {types} THEN json_object({', '.join(parts)}) "
            "ELSE '' END ELSE '' END")
