"""Load queries, corpus, pairs, labels and gold files into records, with precise errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from labeller.errors import BadInputError
from labeller.io.tables import read_rows, require
from labeller.io.validation import validation_error
from labeller.records import Doc, GoldLabel, Label, Pair, Query

M = TypeVar("M", bound=BaseModel)


def _texts(path: Path, id_field: str) -> dict[str, tuple[int, str, dict[str, Any]]]:
    seen: dict[str, tuple[int, str, dict[str, Any]]] = {}
    for line, row in read_rows(path, role="queries" if id_field == "query_id" else "corpus"):
        key = require(row, id_field, path, line)
        text = require(row, "text", path, line, kind="text")
        if key in seen:
            raise BadInputError(f"duplicate {id_field} '{key}' (first on line {seen[key][0]}); expected unique ids",
                                path=str(path), line=line, field=id_field)
        fields = {k: v for k, v in row.items() if k not in (id_field, "text") and v is not None}
        seen[key] = (line, text, fields)
    return seen


def read_queries(path: str | Path) -> dict[str, Query]:
    """Query rows need `query_id` and `text`; other columns become fields a rubric may show."""
    rows = _texts(Path(path), "query_id")
    return {k: Query(query_id=k, text=t, fields=f) for k, (_, t, f) in rows.items()}


def read_corpus(path: str | Path) -> dict[str, Doc]:
    """Corpus rows need `doc_id` and `text`; other columns become fields a rubric may show."""
    rows = _texts(Path(path), "doc_id")
    return {k: Doc(doc_id=k, text=t, fields=f) for k, (_, t, f) in rows.items()}


def read_pairs(path: str | Path, queries: dict[str, Query] | None = None,
               corpus: dict[str, Doc] | None = None) -> list[Pair]:
    """Pair rows need `query_id` and `doc_id`, each known when queries/corpus are given. Duplicates are folded."""
    path = Path(path)
    pairs: dict[tuple[str, str], Pair] = {}
    for line, row in read_rows(path, role="pairs"):
        qid, did = require(row, "query_id", path, line), require(row, "doc_id", path, line)
        check_known(qid, did, queries, corpus, path, line)
        pairs.setdefault((qid, did), Pair(query_id=qid, doc_id=did))
    return list(pairs.values())


def check_known(qid: str, did: str, queries: dict | None, corpus: dict | None, path: Path | str, line: int) -> None:
    if queries is not None and qid not in queries:
        raise BadInputError(f"unknown query '{qid}'; expected an id from the queries file",
                            path=str(path), line=line, field="query_id")
    if corpus is not None and did not in corpus:
        raise BadInputError(f"unknown document '{did}'; expected an id from the corpus file",
                            path=str(path), line=line, field="doc_id")


def read_models(path: str | Path, model: type[M]) -> list[tuple[int, M]]:
    """Validate every row against a record model; the first problem names file, line and field."""
    path = Path(path)
    out: list[tuple[int, M]] = []
    for line, row in read_rows(path):
        for key in ("query_id", "doc_id"):
            if isinstance(row.get(key), (int, float)) and not isinstance(row.get(key), bool):
                row[key] = require(row, key, path, line)
        try:
            out.append((line, model.model_validate(row)))
        except ValidationError as exc:
            raise validation_error(exc, path=str(path), line=line,
                                   expected=f"a {model.__name__} row with {', '.join(model.model_fields)}") from None
    return out


def read_labels(path: str | Path) -> list[Label]:
    """Read a `labeller label` output file."""
    return [label for _, label in read_models(path, Label)]


def read_gold(path: str | Path) -> list[GoldLabel]:
    """Read a human gold file: query_id, doc_id, grade (1-5), annotator, note."""
    return [gold for _, gold in read_models(path, GoldLabel)]
