"""The inputs of answer evaluation, from files or frames in memory (the Python API's, labeller.io.memory), into
one AnswerInputs. Every problem names its source (file or frame), line and field; every column is used or refused.

- answers {query_id, answer, citations?, abstained?}: citations a list of doc ids (or a JSON list, or ids
  separated by commas or spaces); abstained true/false (else the claim split decides). One row per query.
- the passages of a query: the top `depth` documents of a run (TREC run, or a table {query_id, doc_id, score});
  or contexts {query_id, text, doc_id?, rank?} (rank order; a context without doc_id is passage c<rank>).
- required evidence {query_id, doc_id}: the docs a query's answer needs retrieved.
- expected facts {query_id, facts: [value | {value, aliases}], forbidden?: [string]} (the canary fact form).
- expected outcomes {query_id, outcome: answerable | no_answer | access_denied} (acceptance.outcomes' form).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from labeller.answers.models import Answer, AnswerInputs, ExpectedFacts, Passage
from labeller.errors import BadInputError
from labeller.io.tables import read_rows, require
from labeller.io.trec import read_known_run, top_k
from labeller.io.validation import validation_error
from labeller.records import Doc, RunEntry

Rows = Iterable[tuple[int, dict[str, Any]]]  # (line, row); `where` names the file or frame
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no", "")


def _refuse_unknown(row: dict[str, Any], allowed: tuple[str, ...], where: str, line: int) -> None:
    extra = [k for k in row if k not in allowed]
    if extra:
        raise BadInputError(f"unknown column '{extra[0]}'; expected only {', '.join(allowed)}", path=where, line=line,
                            field=extra[0])


def _known(qid: str, questions: Mapping[str, str], where: str, line: int) -> str:
    if qid not in questions:
        raise BadInputError(f"unknown query '{qid}'; expected an id from the queries", path=where, line=line,
                            field="query_id")
    return qid


def _citations(raw: Any, where: str, line: int) -> list[str] | None:
    if raw is None or (isinstance(raw, float) and raw != raw):
        return None
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("["):
            try:
                raw = json.loads(text)
            except ValueError:
                raise BadInputError("not a JSON list of doc ids", path=where, line=line, field="citations") from None
        else:
            return [part for part in re.split(r"[,\s]+", text) if part]
    if isinstance(raw, (list, tuple)) or hasattr(raw, "tolist"):
        values = list(raw.tolist() if hasattr(raw, "tolist") else raw)
        if all(isinstance(v, str) and v.strip() for v in values):
            return [v.strip() for v in values]
    raise BadInputError(f"expected a list of doc ids, got {raw!r}", path=where, line=line, field="citations")


def _flag(raw: Any, where: str, line: int) -> bool | None:
    if raw is None or (isinstance(raw, float) and raw != raw):
        return None
    value = str(raw).strip().lower()
    if value not in _TRUE + _FALSE:
        raise BadInputError(f"expected true or false, got {raw!r}", path=where, line=line, field="abstained")
    return value in _TRUE if value else None


def answers_from(rows: Rows, where: str, questions: Mapping[str, str]) -> list[Answer]:
    out: dict[str, Answer] = {}
    for line, row in rows:
        _refuse_unknown(row, ("query_id", "answer", "citations", "abstained"), where, line)
        qid = _known(require(row, "query_id", where, line), questions, where, line)
        if qid in out:
            raise BadInputError(f"a second answer for query '{qid}'; expected one row per query", path=where,
                                line=line, field="query_id")
        text = row.get("answer")
        if not isinstance(text, str):
            raise BadInputError("missing; expected the answer's text (may be empty for no answer)", path=where,
                                line=line, field="answer")
        out[qid] = Answer(query_id=qid, answer=text, citations=_citations(row.get("citations"), where, line),
                          abstained=_flag(row.get("abstained"), where, line))
    if not out:
        raise BadInputError("no answers; expected rows {query_id, answer}", path=where)
    return list(out.values())


def passages_from_run(entries: list[RunEntry], corpus: Mapping[str, Doc], depth: int) -> dict[str, list[Passage]]:
    out: dict[str, list[Passage]] = {}
    for entry in top_k(entries, depth):  # each query's top `depth`, by score (trec_eval's order)
        out.setdefault(entry.query_id, []).append(
            Passage(passage_id=entry.doc_id, doc_id=entry.doc_id, text=corpus[entry.doc_id].text))
    return out


def read_run_passages(path: str | Path, queries: Mapping, corpus: Mapping[str, Doc],
                      depth: int) -> dict[str, list[Passage]]:
    # the run's entries of queries and documents the inputs hold (the rest skipped, as labelling skips them)
    return passages_from_run(read_known_run(path, dict(queries), dict(corpus), depth).known, corpus, depth)


def passages_from_contexts(rows: Rows, where: str, questions: Mapping[str, str]) -> dict[str, list[Passage]]:
    ranked: dict[str, list[tuple[float, int, str | None, str]]] = {}
    for line, row in rows:
        _refuse_unknown(row, ("query_id", "text", "doc_id", "rank"), where, line)
        qid = _known(require(row, "query_id", where, line), questions, where, line)
        text = require(row, "text", where, line, kind="passage text")
        doc_id = str(row["doc_id"]) if row.get("doc_id") not in (None, "") else None
        rank = row.get("rank")
        if rank is not None and not isinstance(rank, (int, float)):
            raise BadInputError(f"expected a number, got {rank!r}", path=where, line=line, field="rank")
        ranked.setdefault(qid, []).append((float(rank) if rank is not None else float(line), line, doc_id, text))
    out: dict[str, list[Passage]] = {}
    for qid, items in ranked.items():
        items.sort()
        seen: set[str] = set()
        for n, (_, line, doc_id, text) in enumerate(items, start=1):
            pid = doc_id or f"c{n}"
            if pid in seen:
                raise BadInputError(f"passage '{pid}' appears twice for query '{qid}'", path=where, line=line,
                                    field="doc_id")
            seen.add(pid)
            out.setdefault(qid, []).append(Passage(passage_id=pid, doc_id=doc_id, text=text))
    return out


def required_from(rows: Rows, where: str, questions: Mapping[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line, row in rows:
        _refuse_unknown(row, ("query_id", "doc_id"), where, line)
        qid = _known(require(row, "query_id", where, line), questions, where, line)
        out.setdefault(qid, []).append(require(row, "doc_id", where, line))
    return out


def facts_from(rows: Rows, where: str, questions: Mapping[str, str]) -> dict[str, ExpectedFacts]:
    out: dict[str, ExpectedFacts] = {}
    for line, row in rows:
        _refuse_unknown(row, ("query_id", "facts", "forbidden"), where, line)
        qid = _known(require(row, "query_id", where, line), questions, where, line)
        facts = [{"value": f} if isinstance(f, str) else f for f in _listed(row.get("facts"), where, line, "facts")]
        try:
            out[qid] = ExpectedFacts(facts=facts, forbidden=_listed(row.get("forbidden"), where, line, "forbidden"))
        except ValidationError as exc:
            raise validation_error(exc, path=where, line=line) from None
    return out


def _listed(raw: Any, where: str, line: int, field: str) -> list[Any]:
    if raw is None:
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise BadInputError("expected a JSON list", path=where, line=line, field=field) from None
    if hasattr(raw, "tolist"):
        raw = raw.tolist()
    if not isinstance(raw, list):
        raise BadInputError(f"expected a list, got {raw!r}", path=where, line=line, field=field)
    return raw


def file_rows(path: str | Path | None) -> tuple[Rows, str] | None:
    return None if path is None else (read_rows(path), str(path))


def check_inputs(inputs: AnswerInputs) -> AnswerInputs:
    """Refuse what cannot be evaluated: required evidence for a query whose passages carry no doc ids."""
    for qid in inputs.required or {}:
        if any(p.doc_id is None for p in inputs.passages.get(qid, [])):
            raise BadInputError(f"query '{qid}' has required evidence, but its contexts carry no doc_id: give each "
                                "context its doc_id, or a run", field="doc_id")
    return inputs


def read_expectations(questions: Mapping[str, str], *, required: str | Path | None = None,
                      facts: str | Path | None = None, outcomes: str | Path | None = None) -> dict[str, Any]:
    """The optional files as AnswerInputs fields: required evidence, expected facts, expected outcomes (the last by
    acceptance.outcomes.read_outcomes)."""
    from labeller.acceptance.outcomes import read_outcomes

    return {"required": None if required is None else required_from(read_rows(required), str(required), questions),
            "facts": None if facts is None else facts_from(read_rows(facts), str(facts), questions),
            "outcomes": None if outcomes is None else read_outcomes(outcomes, questions)}
