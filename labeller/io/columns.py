"""Columns named otherwise: explicit mappings (`--columns query_id=qid,doc_id=docid`) and well-known aliases.

Teams arrive with `qid`/`docid` (TREC tools), `_id`/`query-id`/`corpus-id`/`score` (BEIR), `label`
or `relevance` for a grade, `passage` or `contents` for a text. Each reader names the role of the
file it reads (queries, corpus, pairs, grades, run); a canonical column missing from a file is
taken from the column an explicit mapping names, else from the one alias of that role the file
has. Aliases are per role because a word means different things in different files (`score` is
a BEIR qrels grade but a run's score; `_id` is a query id in queries.jsonl, a doc id in corpus.jsonl),
and two aliases present at once are never guessed between: the file must say, with --columns.
A column named in a mapping that a file lacks is simply not used for that file; in a file that has both
the mapped column and labeller's own (`--columns text=title` on a corpus with `text` and `title`), the
mapping wins and labeller's own is not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from labeller.errors import BadInputError

CANONICAL = ("query_id", "doc_id", "grade", "text", "score", "rank", "justification", "judge", "annotator", "note")

ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "queries": {"query_id": ("qid", "_id", "query-id", "queryid", "topic_id", "id"),
                "text": ("query", "question", "query_text", "title")},
    "corpus": {"doc_id": ("docid", "_id", "docno", "corpus-id", "pid", "passage_id", "id"),
               "text": ("passage", "contents", "content", "body", "document", "doc_text")},
    "pairs": {"query_id": ("qid", "query-id", "queryid", "topic_id"),
              "doc_id": ("docid", "docno", "corpus-id", "pid", "passage_id")},
    "grades": {"query_id": ("qid", "query-id", "queryid", "topic_id"),
               "doc_id": ("docid", "docno", "corpus-id", "pid", "passage_id"),
               "grade": ("label", "relevance", "rel", "judgment", "score"),
               "justification": ("explanation", "reasoning", "rationale")},
    "run": {"query_id": ("qid", "query-id", "queryid", "topic_id"),
            "doc_id": ("docid", "docno", "corpus-id", "pid", "passage_id")},
}

_MAPPING: ContextVar[dict[str, str]] = ContextVar("labeller_columns", default={})


def parse_columns(spec: str | list[str] | None) -> dict[str, str]:
    """'query_id=qid,doc_id=docid' (or a list of such) -> {'query_id': 'qid', 'doc_id': 'docid'}."""
    items = [spec] if isinstance(spec, str) else list(spec or [])
    mapping: dict[str, str] = {}
    for item in (part.strip() for text in items for part in text.split(",")):
        if not item:
            continue
        canonical, sep, source = (s.strip() for s in item.partition("="))
        if not sep or not canonical or not source:
            raise BadInputError(f"column mapping '{item}' is not OURS=THEIRS, e.g. query_id=qid", field="columns")
        if canonical not in CANONICAL:
            raise BadInputError(f"column mapping '{item}': '{canonical}' is not a column labeller reads; expected "
                                f"one of {', '.join(CANONICAL)}", field="columns")
        if canonical in mapping and mapping[canonical] != source:
            raise BadInputError(f"column mapping names '{canonical}' twice ('{mapping[canonical]}' and '{source}')",
                                field="columns")
        mapping[canonical] = source
    return mapping


@contextmanager
def column_mapping(mapping: dict[str, str] | str | list[str] | None) -> Iterator[dict[str, str]]:
    """Apply an explicit mapping to every file read inside the block (the command's --columns)."""
    parsed = mapping if isinstance(mapping, dict) else parse_columns(mapping)
    token = _MAPPING.set({**_MAPPING.get(), **parse_columns([f"{k}={v}" for k, v in parsed.items()])})
    try:
        yield parsed
    finally:
        _MAPPING.reset(token)


def mapped_sources() -> set[str]:
    """The column names the active --columns mapping reads (a headed TSV may be recognised by them)."""
    return set(_MAPPING.get().values())


def rename_plan(columns: list[str] | set[str], role: str | None) -> dict[str, str | None]:
    """source column -> canonical column for a file with these columns, read in this role; None for a column
    of labeller's own name that an explicit mapping replaces (dropped: the mapping wins, issue 25)."""
    present = set(columns)
    plan: dict[str, str | None] = {}
    explicit = _MAPPING.get()
    for canonical in CANONICAL:
        source = explicit.get(canonical)
        if canonical in present:
            if source is not None and source != canonical and source in present and source not in plan:
                plan[source], plan[canonical] = canonical, None
            continue
        if source not in present and role in ALIASES:  # a mapping for another of the command's files
            found = [a for a in ALIASES[role].get(canonical, ()) if a in present and a not in plan]
            source = found[0] if len(found) == 1 else None
        if source is not None and source in present and source not in plan:
            plan[source] = canonical
    return plan


def renamed(rows: Iterator[tuple[int, dict[str, Any]]], role: str | None,
            keep: dict[str, str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows with their columns renamed to labeller's names (the plan is made from the first row, and
    copied into `keep` for a caller that reads rows again: io.corpus_index)."""
    for line, row in rows:
        plan = rename_plan(list(row), role)
        if keep is not None:
            keep.update(plan)
        if not plan:  # nothing to rename: the rest as they come (no Python step per row of a large file)
            yield line, row
            yield from rows
            return
        yield line, apply_plan(plan, row)
        for line, row in rows:
            yield line, apply_plan(plan, row)


def apply_plan(plan: dict[str, str | None], row: dict[str, Any]) -> dict[str, Any]:
    """The row with its columns renamed by rename_plan(), a column the mapping replaces left out."""
    return {new: value for name, value in row.items() if (new := plan.get(name, name)) is not None}


def missing_hint(field: str, columns: list[str]) -> str:
    """What to add to a 'missing' error when the row has columns labeller does not know, one of
    which may be the missing one under another name ("" when every column is one of labeller's)."""
    if all(c in CANONICAL for c in columns):
        return ""
    shown = ", ".join(columns[:8]) + (", ..." if len(columns) > 8 else "")
    return f" (the file has columns {shown}; name the one to use with --columns {field}=COLUMN)"
