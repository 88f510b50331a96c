"""Stored verdicts read as small JSON objects of chosen fields, built by the store where it can.

A cached rerun turns every stored verdict into an output row. Decoding the stored JSON, building a dict
and encoding it again costs ~10 µs a verdict in Python; a store that builds the row's JSON itself (the
directory store in SQLite's JSON functions, on its lookup thread) hands over bytes that are written as
they are. Numbers are copied as the stored text, never re-rendered (SQLite's ``->`` keeps it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from labeller.io.tables import load_own

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

    def of_json(self, stored: str | bytes) -> bytes | None:
        """The projected object of one stored record, as UTF-8 JSON (None: not projectable)."""
        try:
            record = load_own(stored)
        except ValueError:
            return None
        if type(record) is not dict or not all(_json_type(_at(record, path)) == kind for path, kind in self.required):
            return None
        try:
            return orjson.dumps({name: _at(record, source) if isinstance(source, tuple) else orjson.loads(source)
                                 for name, source in self.fields})
        except TypeError:  # an integer past 64 bits: not what labeller stores
            return None


_MISSING = object()


def _at(record: Any, path: KeyPath) -> Any:
    for name in path:
        record = record.get(name, _MISSING) if type(record) is dict else _MISSING
        if record is _MISSING:
            return None
    return record


def _json_type(value: Any) -> str:
    """SQLite's json_type() name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return {int: "integer", float: "real", str: "text", list: "array", dict: "object"}.get(type(value), "")


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


def postgres_select(projection: Projection, record: str) -> tuple[str, str]:
    """PostgreSQL (9.4 or later) for a text column holding a stored record: (lateral joins, expression) where
    the expression is the projected object as compact text, or '' where it is not projectable. The record is
    parsed once as json (json_to_record: ~14 µs a record on the server, against ~85 with one #> per field), and
    a json value keeps its text, so numbers come back as stored. Paths go two levels deep at most; a record that
    is not a JSON object fails the statement (the caller's to handle)."""
    def alias(path: KeyPath) -> str:
        if len(path) > 2:
            raise ValueError(f"postgres_select reads paths of two keys at most, not {path}")
        return f'x."{path[0]}"' if len(path) == 1 else f'x_{path[0]}."{path[1]}"'
    paths = [source for _, source in projection.fields if isinstance(source, tuple)] + \
            [path for path, _ in projection.required]
    top = dict.fromkeys(path[0] for path in paths)
    joins = [f"LEFT JOIN LATERAL json_to_record({record}::json) AS x({', '.join(f'{chr(34)}{n}{chr(34)} json' for n in top)}) ON true"]
    for outer in dict.fromkeys(path[0] for path in paths if len(path) == 2):
        inner = dict.fromkeys(path[1] for path in paths if len(path) == 2 and path[0] == outer)
        joins.append(f"LEFT JOIN LATERAL json_to_record(CASE WHEN json_typeof(x.\"{outer}\") = 'object' "
                     f"THEN x.\"{outer}\" END) AS x_{outer}({', '.join(f'{chr(34)}{n}{chr(34)} json' for n in inner)}) ON true")
    kinds = {"integer": "json_typeof({v}) = 'number' AND {v}::text ~ '^-?[0-9]+$'", "text": "json_typeof({v}) = 'string'"}
    checks = " AND ".join([f"coalesce({kinds[kind].format(v=alias(path))}, false)" for path, kind in projection.required]
                          or ["true"])
    parts = [f"'{'{' if i == 0 else ','}\"{name}\":' || " + (f"coalesce({alias(source)}::text, 'null')"
                                                             if isinstance(source, tuple) else f"'{source}'")
             for i, (name, source) in enumerate(projection.fields)]
    return " ".join(joins), f"CASE WHEN {checks} THEN {' || '.join(parts)} || '}}' ELSE '' END"
