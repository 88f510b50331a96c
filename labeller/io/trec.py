"""TREC run and qrels files, and runs stored as tables.

A TREC run line is `qid Q0 docid rank score tag`; a qrels line is `qid 0 docid grade`.
Grades in qrels are mapped onto labeller's 1-5 scale with an explicit scale:
`--from-scale 0-3` maps 0..3 to 1..4.
"""

from __future__ import annotations

import gc
import gzip
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from labeller.errors import BadInputError
from labeller.io.memory import InMemory, as_source
from labeller.io.tables import FORMATS, is_headed_tsv, read_rows, require
from labeller.records import GRADE_MAX, GRADE_MIN, RunEntry


@contextmanager
def gc_paused():
    """Parsing a big run allocates millions of small objects that are never cyclic garbage; letting the
    cyclic collector rescan them makes parsing ~7x slower (1M lines: 2.0 s vs 0.28 s)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_text(path: Path) -> str:
    """A text file (gzipped when it ends in .gz) as UTF-8, or BadInputError naming the file and line."""
    if not path.is_file():
        raise BadInputError("file not found", path=str(path))
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    try:
        return raw.decode("utf-8-sig")  # a byte-order mark must not become part of the first query id
    except UnicodeDecodeError as exc:
        raise BadInputError("not valid UTF-8; expected UTF-8 text", path=str(path),
                            line=raw[: exc.start].count(b"\n") + 1) from None


def _lines(path: Path):
    lines = [(n, line.split()) for n, line in enumerate(read_text(path).splitlines(), start=1) if line.strip()]
    if not lines:
        raise BadInputError("file is empty; expected at least one line", path=str(path))
    return lines


def is_table(path: str | Path) -> bool:
    if isinstance(path, InMemory):
        return path.frame is not None
    return Path(path).suffix.lower() in FORMATS or is_headed_tsv(path)


def _run_rows(path: Path) -> Iterator[tuple[int, str, str, float, object]]:
    """(line, query_id, doc_id, score, rank) of every line of a run, checked: 6 TREC columns or the
    table columns, a finite score, one score per pair. No record per line: runs can be huge."""
    ranx = ranx_json(path)
    if ranx is not None:
        rows = ((n, qid, did, score, None) for n, (qid, did, score) in enumerate(ranx, start=1))
    elif is_table(path):
        rows = ((n, require(r, "query_id", path, n), require(r, "doc_id", path, n), r.get("score"), r.get("rank"))
                for n, r in read_rows(path, role="run"))
    else:
        rows = (_trec_run_line(n, line.split(), path) for n, line in enumerate(read_text(path).splitlines(), start=1)
                if line.strip())
    seen: set[tuple[str, str]] = set()
    for n, qid, did, raw, rank in rows:
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            raise BadInputError("missing; expected a number", path=str(path), line=n, field="score")
        try:
            score = float(raw)
        except (TypeError, ValueError):
            raise BadInputError(f"score {raw!r} is not a number", path=str(path), line=n, field="score") from None
        if not math.isfinite(score):
            raise BadInputError(f"score {raw!r} is not a finite number", path=str(path), line=n, field="score")
        if (qid, did) in seen:
            raise BadInputError(f"document '{did}' appears twice for query '{qid}'; expected one score per pair",
                                path=str(path), line=n, field="doc_id")
        seen.add((qid, did))
        yield n, qid, did, score, rank
    if not seen:
        raise BadInputError("file is empty; expected at least one line", path=str(path))


def is_ranx_json(path: Path) -> bool:
    """A ranx run or qrels saved as JSON ({query_id: {doc_id: value}}), told from JSON lines by its first
    line: one object whose values are all objects (or a line too long to be a row). Reads 64 KB at most."""
    if isinstance(path, InMemory):
        return path.mapping is not None
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    import json

    with path.open("rb") as handle:
        head = handle.read(1 << 16).lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith(b"{"):
        return False
    first, newline, _ = head.partition(b"\n")
    try:
        data = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return not newline  # one object longer than 64 KB: ranx's single-line file, not a table row
    return isinstance(data, dict) and bool(data) and all(isinstance(v, dict) for v in data.values())


def ranx_json(path: Path) -> Iterator[tuple[str, str, object]] | None:
    """A ranx JSON file's (qid, did, value) entries in file order, or None when it is not one (a .json
    file of JSON lines is a table). Error "line" numbers count these entries."""
    if not is_ranx_json(path):
        return None
    if isinstance(path, InMemory):
        return path.entries()
    import json

    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise BadInputError(f"not valid JSON ({exc.msg}); expected a ranx file {{query_id: {{doc_id: value}}}}",
                            path=str(path)) from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise BadInputError("expected a ranx file {query_id: {doc_id: value}}", path=str(path))
    return ((str(qid), str(did), score) for qid, docs in data.items() for did, score in docs.items())


def _rank(raw: object, path: Path, line: int) -> int | None:
    """The optional rank column as a whole number. Scoring ignores it (as trec_eval does), so only
    read_run checks it: the lean read_run_scores path stays one float() per line."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not value.is_integer():
        raise BadInputError(f"rank {raw!r} is not a whole number; expected the 1-based position of the document",
                            path=str(path), line=line, field="rank")
    return int(value)


def read_run_scores(path: str | Path) -> dict[str, dict[str, float]]:
    """A run as query -> doc -> score (the lean form evaluation needs), with read_run's checks except
    the rank column's, which scoring ignores."""
    scores: dict[str, dict[str, float]] = {}
    with gc_paused():
        for _, qid, did, score, _ in _run_rows(as_source(path)):
            scores.setdefault(qid, {})[did] = score
    return scores


def read_run_lines(path: str | Path) -> list[tuple[int, RunEntry]]:
    """read_run with each entry's line number, for errors about a pair that come after reading."""
    path = as_source(path)
    with gc_paused():
        return [(n, RunEntry(query_id=qid, doc_id=did, score=score, rank=_rank(rank, path, n)))
                for n, qid, did, score, rank in _run_rows(path)]


class KnownRun(NamedTuple):
    """A run's top entries whose query and document the inputs hold, and what was skipped."""

    entries: list[RunEntry]  # every entry of the file (evaluation reads the whole run)
    known: list[RunEntry]  # the top `depth` of each query, query and document both in the inputs
    warning: str | None  # how many queries / documents were skipped, with the first of each (None: none)


def read_known_run(path: str | Path, queries: dict | None, corpus: dict | None, depth: int | None = None) -> KnownRun:
    """read_run, with each query's top `depth` (all, when None) matched against the queries and corpus.

    An official TREC run often covers more queries (or documents) than the inputs hold: those entries are
    skipped and counted, as `labeller evaluate` skips queries without judgments. Only a run of which nothing
    matches is refused (the wrong file, or ids of another collection), naming its first line."""
    numbered = read_run_lines(path)
    line_of = {(e.query_id, e.doc_id): n for n, e in numbered}
    entries = [e for _, e in numbered]
    known, queries_out, docs_out, first = [], set(), set(), {}
    for entry in top_k(entries, depth) if depth else entries:
        if queries is not None and entry.query_id not in queries:
            queries_out.add(entry.query_id)
            first.setdefault("query", (entry.query_id, line_of[(entry.query_id, entry.doc_id)]))
        elif corpus is not None and entry.doc_id not in corpus:
            docs_out.add(entry.doc_id)
            first.setdefault("document", (entry.doc_id, line_of[(entry.query_id, entry.doc_id)]))
        else:
            known.append(entry)
    if entries and not known:
        what, (name, line) = next(iter(first.items()))
        source = "queries" if what == "query" else "corpus"
        raise BadInputError(f"no entry of the run matches the inputs: unknown {what} '{name}' (and every other "
                            f"{'query' if queries_out else 'pair'} of the run); expected ids from the {source} file",
                            path=str(path), line=line, field="query_id" if what == "query" else "doc_id")
    parts = [f"{len(queries_out)} {'query' if len(queries_out) == 1 else 'queries'} not in the queries file "
             f"(first '{first['query'][0]}', line {first['query'][1]})"] if queries_out else []
    parts += [f"{len(docs_out)} {'document' if len(docs_out) == 1 else 'documents'} not in the corpus (first "
              f"'{first['document'][0]}', line {first['document'][1]})"] if docs_out else []
    warning = (f"{path}: skipped {' and '.join(parts)}; {len(known)} "
               f"{'entry' if len(known) == 1 else 'entries'} of the top {depth or 'all'} kept") if parts else None
    return KnownRun(entries, known, warning)


def read_run(path: str | Path) -> list[RunEntry]:
    """Read a run: TREC format, or JSONL/CSV/Parquet with query_id, doc_id, score and optional rank."""
    return [entry for _, entry in read_run_lines(path)]


def _trec_run_line(n: int, parts: list[str], path: Path):
    if len(parts) != 6:
        raise BadInputError(f"expected 6 columns 'qid Q0 docid rank score tag', got {len(parts)}",
                            path=str(path), line=n)
    return n, parts[0], parts[2], parts[4], parts[3]


def parse_scale(spec: str | None) -> tuple[int, int] | None:
    """'0-3' -> (0, 3). None means grades are already on the 1-5 scale."""
    if spec is None:
        return None
    try:
        low, high = (int(x) for x in spec.split("-", 1))
    except ValueError:
        raise BadInputError(f"scale '{spec}' is not LOW-HIGH, e.g. 0-3") from None
    if high < low or high - low + 1 > GRADE_MAX:
        raise BadInputError(f"scale '{spec}' must span at most {GRADE_MAX} grades")
    return low, high


def format_qrels(grades: dict[tuple[str, str], int], to_scale: str | None = "0-3") -> str:
    """Render 1-5 grades as qrels text, mapping 1.. back onto LOW.. of `to_scale`."""
    scale = parse_scale(to_scale)
    low = scale[0] if scale else GRADE_MIN
    return "".join(f"{q} 0 {d} {g - GRADE_MIN + low}\n" for (q, d), g in sorted(grades.items()))


def format_run(entries: list[RunEntry], tag: str = "labeller") -> str:
    """Render a run in TREC format, ranked by score within each query."""
    by_query: dict[str, list[RunEntry]] = {}
    for e in entries:
        by_query.setdefault(e.query_id, []).append(e)
    lines = []
    for qid in sorted(by_query):
        ranked = sorted(by_query[qid], key=lambda e: (-e.score, e.doc_id))
        lines += [f"{qid} Q0 {e.doc_id} {i} {e.score:.6f} {tag}\n" for i, e in enumerate(ranked, start=1)]
    return "".join(lines)


def top_k(entries: list[RunEntry], depth: int) -> list[RunEntry]:
    """The top `depth` entries of each query, by score (ties by doc id descending, as trec_eval)."""
    by_query: dict[str, list[RunEntry]] = {}
    for e in entries:
        by_query.setdefault(e.query_id, []).append(e)
    out = []
    for qid in by_query:
        ranked = sorted(by_query[qid], key=lambda e: (e.score, e.doc_id), reverse=True)
        out += ranked[:depth]
    return out
