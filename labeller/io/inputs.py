"""Load queries, corpus, pairs, labels and gold files into records, with precise errors."""

from __future__ import annotations

from array import array
from itertools import repeat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from labeller.errors import BadInputError
from labeller.io.memory import as_source
from labeller.io.tables import read_rows, require, table_format
from labeller.io.validation import validation_error
from labeller.records import Doc, GoldLabel, Label, Pair, Query

M = TypeVar("M", bound=BaseModel)


def _texts(path: Path, id_field: str) -> dict[str, str | tuple[str, dict[str, Any]]]:
    """id -> text, or (text, fields) for a row with other columns."""
    seen: dict[str, str | tuple[str, dict[str, Any]]] = {}
    for line, key, text, fields in entries(read_rows(path, role=_role(id_field)), path, id_field):
        if key in seen:
            raise duplicate(path, id_field, key, line)
        seen[key] = (text, fields) if fields else text
    return seen


def entries(rows: Iterable[tuple[int, dict[str, Any]]], path: Path,
            id_field: str) -> Iterator[tuple[int, str, str, dict[str, Any] | None]]:
    """(line, id, text, other fields or None) of each query or corpus row. A row whose id and text are plain
    non-blank strings is taken as it is; anything else goes through require() for its error or its
    conversion (a number as an id)."""
    plain = {id_field, "text"}
    for line, row in rows:
        key, text = row.get(id_field), row.get("text")
        if type(key) is not str or not key.strip():
            key = require(row, id_field, path, line)
        if type(text) is not str or not text.strip():
            text = require(row, "text", path, line, kind="text")
        fields = {k: v for k, v in row.items() if k not in plain and v is not None} if len(row) > 2 else None
        yield line, key, text, fields or None


def duplicate(path: Path, id_field: str, key: str, line: int) -> BadInputError:
    return BadInputError(f"duplicate {id_field} '{key}' (first on line {_first_line(path, id_field, key)}); "
                         "expected unique ids", path=str(path), line=line, field=id_field)


def _role(id_field: str) -> str:
    return "queries" if id_field == "query_id" else "corpus"


def _first_line(path: Path, id_field: str, key: str) -> int:
    """Where an id first appears (read again only to word a duplicate's error)."""
    return next(line for line, row in read_rows(path, role=_role(id_field))
                if require(row, id_field, path, line) == key)


def _split(row: str | tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    return (row, {}) if isinstance(row, str) else row


def read_queries(path: str | Path, *, lean: bool = False) -> dict[str, Query] | Records:
    """Query rows need `query_id` and `text`; other columns become fields a rubric may show.
    lean=True gives a read-only mapping that builds each query's model when asked: a JSONL file kept as where
    each row is (io.corpus_index, ~45 bytes a query), any other as each row's text (Records, a third of the
    memory of a Query model each); a large slice may have a query for every ten pairs."""
    if lean and table_format(path) == "jsonl" and Path(path).is_file():
        from labeller.io.corpus_index import IndexedCorpus

        return IndexedCorpus(Path(path), Query, "query_id")  # where each row is, as for a large corpus
    rows = _texts(as_source(path), "query_id")
    if lean:
        return Records(Query, "query_id", rows)
    return {k: Query(query_id=k, text=t, fields=f) for k, row in rows.items() for t, f in [_split(row)]}


def read_corpus(path: str | Path, *, lean: bool = False) -> dict[str, Doc] | Records:
    """Corpus rows need `doc_id` and `text`; other columns become fields a rubric may show.
    lean=True gives a read-only mapping that builds each row's Doc when asked: a JSONL corpus is kept as where
    each row is in the file (io.corpus_index: a fifth of the memory of its texts), any other as each row's text
    (and fields), half the memory of a million Doc models (labelling a large slice holds its whole corpus)."""
    if lean and table_format(path) == "jsonl" and Path(path).is_file():
        from labeller.io.corpus_index import IndexedCorpus

        return IndexedCorpus(Path(path))
    rows = _texts(as_source(path), "doc_id")
    if lean:
        return Records(Doc, "doc_id", rows)
    return {k: Doc(doc_id=k, text=t, fields=f) for k, row in rows.items() for t, f in [_split(row)]}


class Records(Mapping):
    """id -> Query or Doc, built on access from the text (a str) or (text, fields) it keeps."""

    def __init__(self, model: type[Query] | type[Doc], id_field: str, rows: dict[str, str | tuple]) -> None:
        self.model, self.id_field, self.rows = model, id_field, rows

    def __getitem__(self, key: str):
        text, fields = self.text_and_fields(key)
        return self.model.model_construct(**{self.id_field: key}, text=text, fields=fields)

    def text_and_fields(self, key: str) -> tuple[str, dict[str, Any]]:
        return _split(self.rows[key])

    def __contains__(self, key: object) -> bool:
        return key in self.rows

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


class IdColumn(Sequence):
    """A column of ids as numbers into one list of distinct names (array of 4-byte ints): the ids of a million
    pairs in 4 MB instead of a string, or a pointer to one, per pair. An index gives the id, a slice a list."""

    def __init__(self, names: Sequence[str], numbers: array) -> None:
        self.names, self.numbers = names, numbers

    def __getitem__(self, index):
        if isinstance(index, slice):
            many = getattr(self.names, "many", None)  # io.id_index.IdNames: a chunk's ids at once
            return many(self.numbers[index]) if many is not None else list(map(self.names.__getitem__,
                                                                                self.numbers[index]))
        return self.names[self.numbers[index]]

    def __iter__(self) -> Iterator[str]:
        return map(self.names.__getitem__, self.numbers)

    def __len__(self) -> int:
        return len(self.numbers)


class Numbering:
    """Numbers for the ids of a mapping (queries, a corpus), in its order, and back: what IdColumn points into.
    The names are the mapping's own key strings (one pointer each), the numbers a dict's of them."""

    def __init__(self, records: Mapping[str, Any]) -> None:
        rows = records.rows if isinstance(records, Records) else records
        if getattr(records, "numbered", False):  # an IndexedCorpus numbers its ids itself (io.id_index)
            self.names, self.number_of = rows.names, rows
        else:
            self.names = list(rows)
            self.number_of = {name: n for n, name in enumerate(self.names)}

    def numbers(self, ids: list[str]) -> Any:
        """The number of each id as a numpy array of int64, -1 where an id is not numbered here."""
        import numpy as np

        if hasattr(self.number_of, "numbers"):
            return self.number_of.numbers(ids)
        return np.fromiter(map(self.number_of.get, ids, repeat(-1)), dtype=np.int64, count=len(ids))


class PairList(Sequence):
    """Pairs as two lists of ids (a Pair model is built on access): a million pairs in a tenth of the memory."""

    def __init__(self, query_ids: list[str], doc_ids: list[str], known_in: tuple[Any, Any] | None = None) -> None:
        self.query_ids, self.doc_ids = query_ids, doc_ids
        self.known_in = known_in  # (queries, corpus) every pair was found in when it was read (read_pairs)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return PairList(self.query_ids[index], self.doc_ids[index])
        return Pair.model_construct(query_id=self.query_ids[index], doc_id=self.doc_ids[index])

    def __len__(self) -> int:
        return len(self.doc_ids)


NO_FIELDS: Mapping[str, Any] = MappingProxyType({})  # the fields of a row without any, shared and read-only


def text_and_fields(records: Mapping[str, Query] | Mapping[str, Doc]):
    """A function id -> (text, fields) for a mapping of records, without building a model per call when it can.
    The fields are for reading only (a row without any shares one empty mapping: a million pairs, no dict each)."""
    if type(records) is Records:
        rows = records.rows
        return lambda key: (row, NO_FIELDS) if type(row := rows[key]) is str else row
    if isinstance(records, Records):
        return records.text_and_fields
    return lambda key: (lambda record: (record.text, record.fields))(records[key])


def known_in(pairs: Sequence[Pair], queries: Mapping[str, Query], corpus: Mapping[str, Doc]) -> bool:
    """Whether every pair names a query and a document of these: checked already as the pairs were read, or
    now (a million pairs: two dict lookups each)."""
    checked = getattr(pairs, "known_in", None)
    if checked is not None and checked[0] is queries and checked[1] is corpus:
        return True
    query_ids, doc_ids = pair_ids(pairs)
    return has_all(queries, query_ids) and has_all(corpus, doc_ids)


def has_all(records: Mapping[str, Query] | Mapping[str, Doc], ids: Iterable[str]) -> bool:
    """Whether every id is in records, tested by the dict itself where it can (a million pairs' ids)."""
    return all(map(_membership(records), ids))


def _membership(records: Mapping[str, Any] | None) -> Callable[[str], bool] | None:
    """`id in records` as a function: a Records' own dict's, not a Python-level __contains__ per id."""
    if records is None:
        return None
    return records.rows.__contains__ if isinstance(records, Records) else records.__contains__


def pair_ids(pairs: Sequence[Pair]) -> tuple[Sequence[str], Sequence[str]]:
    """The query ids and doc ids of pairs, as two sequences (a PairList's own lists: no model per pair)."""
    if isinstance(pairs, PairList):
        return pairs.query_ids, pairs.doc_ids
    return [p.query_id for p in pairs], [p.doc_id for p in pairs]


# A pairs file this large or larger is read by pyarrow (io.plain_pairs) when it is plain: importing pyarrow costs
# ~0.2 s and ~50 MB of the process's memory, which reading ~100,000 pairs line by line (~0.4 s) does not repay.
PYARROW_PAIRS_FROM = 4 << 20  # bytes


def _plain_pairs(path: Path, query_known, doc_known, numbering) -> tuple[Sequence[str], Sequence[str]] | None:
    try:
        if path.stat().st_size < PYARROW_PAIRS_FROM:
            return None
    except OSError:  # missing or unreadable: the line-by-line reading says so
        return None
    from labeller.io.plain_pairs import plain_pairs

    return plain_pairs(path, query_known, doc_known, numbering)


def read_pairs(path: str | Path, queries: Mapping[str, Query] | None = None,
               corpus: Mapping[str, Doc] | None = None, *, lean: bool = False) -> list[Pair] | PairList:
    """Pair rows need `query_id` and `doc_id`, each known when queries/corpus are given. Duplicates are folded.
    lean=True gives a PairList, whose ids are numbers into the queries' and corpus's own when both are given
    (io.inputs.IdColumn: 8 bytes a pair, where a string per pair took ~75; in temporary files once large)."""
    path = as_source(path)
    query_known, doc_known = _membership(queries), _membership(corpus)
    known_in = (queries, corpus) if queries is not None and corpus is not None else None
    numbering = (Numbering(queries), Numbering(corpus)) if lean and known_in is not None else None
    plain = _plain_pairs(path, query_known, doc_known, numbering) if table_format(path) == "jsonl" else None
    if plain is not None:  # the usual large file, read by pyarrow; anything else line by line, with its errors
        pairs = PairList(*plain, known_in)
        return pairs if lean else list(pairs)
    if numbering:  # as numbers into the queries' and corpus's ids, in temporary files once large
        return _numbered_by_line(path, queries, corpus, numbering, known_in)
    # Duplicates are found by document: the query ids each document was paired with (usually one, kept as a
    # str; a set only for a document paired with several queries). No tuple per pair: a million pairs of
    # ids take a fraction of the memory.
    seen: dict[str, str | set[str]] = {}
    query_ids: list[str] = []
    doc_ids: list[str] = []
    interned: dict[str, str] = {}  # one string per query id, however many pairs name it
    for line, row in read_rows(path, role="pairs"):
        qid, did = row.get("query_id"), row.get("doc_id")
        if type(qid) is not str or type(did) is not str or not qid.strip() or not did.strip():
            qid, did = require(row, "query_id", path, line), require(row, "doc_id", path, line)
        if (query_known and not query_known(qid)) or (doc_known and not doc_known(did)):
            check_known(qid, did, queries, corpus, path, line)
        paired = seen.get(did)
        if paired is None:
            seen[did] = interned.setdefault(qid, qid)
        elif isinstance(paired, set):
            if qid in paired:
                continue
            paired.add(qid)
        elif paired == qid:
            continue
        else:
            seen[did] = {paired, qid}
        query_ids.append(interned.setdefault(qid, qid))
        doc_ids.append(did)
    del seen, interned
    pairs = PairList(query_ids, doc_ids, known_in)
    return pairs if lean else list(pairs)


def _numbered_by_line(path: Path, queries: Mapping[str, Query], corpus: Mapping[str, Doc],
                      numbering: tuple[Numbering, Numbering], known: tuple[Any, Any]) -> PairList:
    """read_pairs line by line, each pair as two numbers (io.spill: memory flat however long the file), a pair
    given twice found from the numbers once all are read and folded to its first line."""
    from labeller.io.spill import Spill, later_twins, without

    query_number, doc_number = numbering[0].number_of, numbering[1].number_of
    query_numbers, doc_numbers, seen = Spill("i"), Spill("i"), Spill("q")
    for line, row in read_rows(path, role="pairs"):
        qid, did = row.get("query_id"), row.get("doc_id")
        if type(qid) is not str or type(did) is not str or not qid.strip() or not did.strip():
            qid, did = require(row, "query_id", path, line), require(row, "doc_id", path, line)
        q, d = query_number.get(qid), doc_number.get(did)
        if q is None or d is None:
            check_known(qid, did, queries, corpus, path, line)
        query_numbers.append(q)
        doc_numbers.append(d)
        seen.append(q << 32 | d)
    twins = later_twins(seen.freeze())
    return PairList(IdColumn(numbering[0].names, without(query_numbers.freeze(), twins)),
                    IdColumn(numbering[1].names, without(doc_numbers.freeze(), twins)), known)


def check_known(qid: str, did: str, queries: dict | None, corpus: dict | None, path: Path | str, line: int) -> None:
    if queries is not None and qid not in queries:
        raise BadInputError(f"unknown query '{qid}'; expected an id from the queries file",
                            path=str(path), line=line, field="query_id")
    if corpus is not None and did not in corpus:
        raise BadInputError(f"unknown document '{did}'; expected an id from the corpus file",
                            path=str(path), line=line, field="doc_id")


def read_models(path: str | Path, model: type[M]) -> list[tuple[int, M]]:
    """Validate every row against a record model; the first problem names file, line and field."""
    path = as_source(path)
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
