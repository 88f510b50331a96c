"""Read grades to compare: human gold files, judge label files and TREC qrels, validated alike.

Every reader returns a `GradeFile`: one `Graded` row per (pair, annotator) on labeller's 1-5 scale,
plus the rows that were clipped. Problems raise BadInputError naming file, line and field.

The role of a file comes from the flag that names it (`role`), never from its first row:
- Gold files (JSONL/CSV/Parquet) hold GoldLabel rows: query_id, doc_id, grade, annotator, note.
  Several people may grade one pair, each under a distinct `annotator` value. Rows whose `outcome`
  is "cant_judge" or "later" (written by `labeller annotate`) are checked, counted and left out:
  they are never a grade. An "adjudicated" row is the grade a person settled on after comparing.
- Label files are `labeller label` output (the Label record, validated field by field), or any table
  with query_id, doc_id and grade from another tool (justification, judge optional; other columns
  are not read); the justification is kept.
- TREC qrels (`qid 0 docid grade`, any non-table extension) and BEIR qrels (a .tsv with a header row)
  are on TREC's usual 0-3 scale unless `from_scale` says otherwise; other tables on 1-5 unless it
  says otherwise. A scale is a shift: "0-3" maps 0..3 onto 1..4. Clipping (`clip`) is only for
  grades outside the file's scale, and never stands in for a shift (0 is not merged into 1).
Columns named otherwise (qid, docid, label, corpus-id, ...) are renamed by labeller.io.columns.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from labeller.errors import BadInputError
from labeller.io.inputs import check_known
from labeller.io.memory import as_source
from labeller.io.outputs import check_outputs
from labeller.io.tables import read_rows, require
from labeller.io.tables import is_headed_tsv
from labeller.io.trec import _lines, format_qrels, is_table, parse_scale, ranx_json
from labeller.io.scales import out_of_scale, scale_of, scale_role
from labeller.io.validation import validation_error
from labeller.io.writing import write_rows, write_text
from labeller.records import GRADE_MAX, GRADE_MIN, NOT_A_GRADE, GoldLabel, Label, Record

DEFAULT_QRELS_SCALE = "0-3"  # TREC's usual graded scale; say --from-scale for any other

Kind = Literal["labels", "gold", "qrels"]
Role = Literal["labels", "baseline", "gold", "judgments", "labels-alt"]  # labels-alt: evaluate's second judgments
_NATIVE_LABEL = ("cache_key", "rubric_version")  # columns only labeller's own label output has


def native_label_row(row: dict[str, Any]) -> bool:
    """Whether a table row is labeller's own label output (a `Label`), not another tool's grades."""
    return all(k in row for k in _NATIVE_LABEL)
GOLD_COLUMNS = ("query_id", "doc_id", "grade", "annotator", "note")  # the documented core of a gold row
_LABEL_OPTIONAL = ("input_tokens", "output_tokens", "cached_input_tokens", "cost_usd", "latency_s")


class Graded(Record):
    """One grade for one pair from one source, on labeller's scale."""

    query_id: str
    doc_id: str
    grade: int
    annotator: str  # the gold annotator, the judge ("provider:model") of a label file, or "qrels"
    note: str = ""  # the annotator's note or the judge's justification
    line: int
    adjudicated: bool = False  # a gold row settled after the blind pass (outcome "adjudicated")
    rubric: str = ""  # labeller's own label rows: the rubric and version the judge graded under
    rubric_version: str = ""
    grading: str = ""  # labeller's own label rows: how the run graded (Label.grading; "" for one plain request)
    grade_probs: dict[str, float] | None = None  # labeller's own label rows (--grade-probs): the grade's distribution


class Clipped(Record):
    """A grade outside the scale that --clip moved to the nearest end of it."""

    path: str
    line: int
    query_id: str
    doc_id: str
    raw: int  # as written in the file, in the file's own scale
    clipped_to: int  # on labeller's scale


class GradeFile(Record):
    path: str
    kind: Kind
    scale: tuple[int, int]  # on labeller's scale: (1, 4) for a 0-3 qrels file
    rows: list[Graded]
    clipped: list[Clipped] = []
    not_grades: int = 0  # gold rows marked "can't judge" or "later": read, checked, never a grade
    own_scale: tuple[int, int] | None = None  # the file's own scale when it was shifted onto 1.. (0-3 qrels)

    def shift_note(self, role: str) -> str | None:
        """A sentence saying how this file's grades were shifted onto labeller's scale (None: not shifted)."""
        if self.own_scale is None:
            return None
        (low, high), (to_low, to_high) = self.own_scale, self.scale
        return (f"{role} {Path(self.path).name}: grades on {low}-{high}, shifted onto {to_low}-{to_high} "
                f"({low} → {to_low}, ..., {high} → {to_high}); figures and tables use the shifted grades")


def read_grades(path: str | Path, *, role: Role | None = None, from_scale: str | None = None, clip: bool = False,
                clip_hint: bool = True, several_per_pair: bool = True, queries: dict | None = None,
                corpus: dict | None = None) -> GradeFile:
    """Read a gold, label or qrels file. `several_per_pair=False` demands one grade per pair.

    `role` is what the flag naming the file says it is: "labels" (any table with query_id, doc_id and
    grade; justification, judge and other columns optional), "gold" (GoldLabel rows), or "judgments"
    (either: evaluation's --labels). None keeps the old guess from the first row, for library callers.
    `from_scale` is the file's own scale, shifted onto 1..: 'LOW-HIGH' for qrels (default 0-3), or
    'ROLE=LOW-HIGH,...' naming the file by its role, for tables too (default 1-5; labeller's own label
    output is always 1-5). `clip_hint=False` for commands without --clip.
    """
    path = as_source(path)
    scale_given = scale_of(from_scale, role)
    qrels_scale = scale_given or (from_scale if from_scale and "=" not in from_scale else None)
    ranx = ranx_json(path)
    if ranx is not None:  # ranx Qrels saved as JSON: {query_id: {doc_id: grade}}, TREC's grades
        scale_given = qrels_scale or DEFAULT_QRELS_SCALE
        raw_rows = [(n, {"query_id": q, "doc_id": d, "grade": g}) for n, (q, d, g) in enumerate(ranx, start=1)]
        kind, native, (low, high) = "qrels", False, parse_scale(scale_given)
    elif is_table(path):
        raw_rows = list(read_rows(path, role="grades"))  # never empty: read_rows refuses a file without rows
        first = raw_rows[0][1]
        kind = _table_kind(role, first)
        native = kind == "labels" and native_label_row(first)
        if is_headed_tsv(path):  # BEIR qrels: TREC's grades, with a header row
            scale_given = qrels_scale or DEFAULT_QRELS_SCALE
        scale = None if native else parse_scale(scale_given)
        low, high = scale or (GRADE_MIN, GRADE_MAX)
    else:
        scale_given = qrels_scale or DEFAULT_QRELS_SCALE
        raw_rows = [(n, _qrels_row(n, parts, path)) for n, parts in _lines(path)]
        kind, native, (low, high) = "qrels", False, parse_scale(scale_given)
    rows: list[Graded] = []
    clipped: list[Clipped] = []
    first_line: dict[tuple[str, ...], int] = {}
    not_grades = 0
    for line, row in raw_rows:
        qid, did = require(row, "query_id", path, line), require(row, "doc_id", path, line)
        check_known(qid, did, queries, corpus, path, line)
        if kind == "gold" and row.get("outcome") in NOT_A_GRADE:
            _validate_not_a_grade(row, path, line)
            not_grades += 1
            continue
        raw = _whole_number(row, path, line)
        grade = min(max(raw, low), high)
        if grade != raw:
            shift_needed = raw == 0 and low == GRADE_MIN and scale_given is None and kind != "qrels"
            if not clip or shift_needed:
                raise BadInputError(out_of_scale(raw, low, high, shift_needed, clip_hint, scale_given,
                                                  scale_role(role)),
                                    path=str(path), line=line, field="grade")
            clipped.append(Clipped(path=str(path), line=line, query_id=qid, doc_id=did, raw=raw,
                                   clipped_to=grade - low + GRADE_MIN))
        graded = _validate(kind, native, {**row, "query_id": qid, "doc_id": did, "grade": grade - low + GRADE_MIN},
                           path, line)
        per_person = several_per_pair and kind == "gold"  # only people grade a pair several times
        key = (qid, did, graded.annotator, str(graded.adjudicated)) if per_person else (qid, did)
        if key in first_line:
            who = f" by annotator '{graded.annotator}'" if per_person else ""
            hint = (" give each person's grades a distinct `annotator` value" if per_person
                    else f" a {kind} file holds one grade per pair")
            raise BadInputError(f"pair ({qid}, {did}) is graded twice{who} (first on line {first_line[key]});{hint}",
                                path=str(path), line=line, field="doc_id")
        first_line[key] = line
        rows.append(graded)
    return GradeFile(path=str(path), kind=kind, scale=(GRADE_MIN, high - low + GRADE_MIN), rows=rows, clipped=clipped,
                     not_grades=not_grades, own_scale=None if low == GRADE_MIN else (low, high))


def _validate_not_a_grade(row: dict[str, Any], path: Path, line: int) -> None:
    """A "can't judge" or "later" row is still a gold row: every field must be right."""
    row = {k: v for k, v in row.items() if not (k in ("annotator", "note", "grade") and v in (None, ""))}
    try:
        GoldLabel.model_validate(row)
    except ValidationError as exc:
        raise validation_error(exc, path=str(path), line=line,
                               expected=f"a gold row with {', '.join(GoldLabel.model_fields)}") from None


def _table_kind(role: Role | None, first: dict[str, Any]) -> Kind:
    if role == "gold":
        return "gold"
    if role in ("labels", "baseline"):
        return "labels"
    if role in ("judgments", "labels-alt"):  # evaluation: a gold-shaped table may hold several people per pair
        return "gold" if set(first) <= set(GoldLabel.model_fields) else "labels"
    return "labels" if "judge" in first else "gold"


def _qrels_row(n: int, parts: list[str], path: Path) -> dict[str, Any]:
    if len(parts) != 4:
        raise BadInputError(f"expected 4 columns 'qid 0 docid grade', got {len(parts)}", path=str(path), line=n)
    return {"query_id": parts[0], "doc_id": parts[2], "grade": parts[3]}


def _whole_number(row: dict[str, Any], path: Path, line: int) -> int:
    value = row.get("grade")
    if isinstance(value, bool) or value is None or value == "":
        from labeller.io.columns import missing_hint

        state = "missing" + missing_hint("grade", list(row)) if "grade" not in row else "empty"
        raise BadInputError(f"{state}; expected a whole-number grade", path=str(path), line=line, field="grade")
    number = value
    if isinstance(number, str):
        try:
            number = float(number.strip())
        except ValueError:
            number = None
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if not isinstance(number, int):
        raise BadInputError(f"grade {value!r} is not a whole number; expected an integer grade",
                            path=str(path), line=line, field="grade")
    return number


def _validate(kind: Kind, native: bool, row: dict[str, Any], path: Path, line: int) -> Graded:
    if kind == "labels" and not native:
        return _foreign_label(row, path, line)
    model: type[BaseModel] = Label if kind == "labels" else GoldLabel
    if kind == "qrels":
        row = {**row, "annotator": "qrels"}
    if kind == "labels":  # CSV cells are strings: an empty one means "not known"
        row = {k: (None if k in _LABEL_OPTIONAL and v == "" else v) for k, v in row.items()}
    else:  # a blank annotator or note (empty CSV cell, null, Parquet NaN) takes the default
        row = {k: v for k, v in row.items() if not (k in ("annotator", "note") and v in (None, ""))}
    try:
        record = model.model_validate(row)
    except ValidationError as exc:
        what = "label" if kind == "labels" else "gold"
        raise validation_error(exc, path=str(path), line=line,
                               expected=f"a {what} row with {', '.join(model.model_fields)}") from None
    if isinstance(record, Label):
        return Graded(query_id=record.query_id, doc_id=record.doc_id, grade=record.grade, annotator=record.judge,
                      note=record.justification, line=line, rubric=record.rubric, rubric_version=record.rubric_version,
                      grading=record.grading or "", grade_probs=record.grade_probs)
    return Graded(query_id=record.query_id, doc_id=record.doc_id, grade=record.grade, annotator=record.annotator,
                  note=record.note, line=line, adjudicated=record.outcome == "adjudicated")


class ForeignLabel(BaseModel):
    """A label row from another tool or a spreadsheet: the grade and what explains it; other columns
    (scores, model names, timestamps) are that tool's business and are not read."""

    model_config = ConfigDict(extra="ignore")
    query_id: str
    doc_id: str
    grade: int
    justification: str | None = None
    note: str | None = None
    judge: str | None = None
    annotator: str | None = None


def _foreign_label(row: dict[str, Any], path: Path, line: int) -> Graded:
    try:
        record = ForeignLabel.model_validate(row)
    except ValidationError as exc:
        raise validation_error(exc, path=str(path), line=line,
                               expected="a label row with query_id, doc_id, grade[, justification, judge]") from None
    return Graded(query_id=record.query_id, doc_id=record.doc_id, grade=record.grade,
                  annotator=str(record.judge or record.annotator or "labels"),
                  note=str(record.justification or record.note or ""), line=line)


def label_identities(graded: GradeFile) -> list[str]:
    """Who made a label file's grades, one entry per judge, rubric and version ("openai:gpt-4.1 · rubric general
    v3"), in file order; empty for gold and qrels, which people made. A figure is only comparable with one
    from the same entries."""
    if graded.kind != "labels":
        return []
    seen: dict[str, None] = {}
    for row in graded.rows:
        seen.setdefault(label_identity(row.annotator, row.rubric, row.rubric_version, row.grading), None)
    return list(seen)


def label_identity(judge: str, rubric: str = "", rubric_version: str = "", grading: str | None = "") -> str:
    """Who made a label and how: "openai:gpt-4.1 · rubric general v3 · grade-probs logprobs top 10" (the grading
    part only where the run was not one plain request a pair: labelling.grading)."""
    rubric_part = " ".join(part for part in (rubric, rubric_version) if part)
    return " · ".join([judge, *([f"rubric {rubric_part}"] if rubric_part else []), *([grading] if grading else [])])


def consensus_grade(grades: list[int]) -> int:
    """One grade for a pair several people graded: the median; an even split takes the lower middle grade."""
    return statistics.median_low(grades)


def settled_grade(rows: list[Graded]) -> int:
    """The gold grade of one pair: an adjudicated grade when a person settled it, else the consensus."""
    adjudicated = [r.grade for r in rows if r.adjudicated]
    return adjudicated[-1] if adjudicated else consensus_grade([r.grade for r in rows])


def rows_by_pair(graded: GradeFile) -> dict[tuple[str, str], list[Graded]]:
    """The rows of each (query_id, doc_id), in file order (several annotators may grade one pair)."""
    by_pair: dict[tuple[str, str], list[Graded]] = {}
    for row in graded.rows:
        by_pair.setdefault((row.query_id, row.doc_id), []).append(row)
    return by_pair


def settled_grades(graded: GradeFile) -> dict[tuple[str, str], int]:
    """One grade per pair, in file order: settled_grade of its rows."""
    return {pair: settled_grade(rows) for pair, rows in rows_by_pair(graded).items()}


def import_qrels(path: str | Path, out: str | Path, *, from_scale: str, annotator: str = "qrels",
                 clip: bool = False) -> int:
    """Turn TREC qrels into a gold file (JSONL/CSV/Parquet by extension). Returns the number of rows."""
    check_outputs(inputs=[path], files={"--out": out})
    graded = read_grades(path, role="gold", from_scale=from_scale, clip=clip)
    rows = [GoldLabel(query_id=g.query_id, doc_id=g.doc_id, grade=g.grade, annotator=annotator).model_dump(
            include=set(GOLD_COLUMNS)) for g in graded.rows]
    write_rows(out, rows)
    return len(rows)


def export_qrels(path: str | Path, out: str | Path, *, to_scale: str, from_scale: str | None = None,
                 clip: bool = False) -> int:
    """Write a gold or label file as TREC qrels, mapping 1.. onto LOW.. of `to_scale`.

    A pair several people graded is written once, with its consensus grade. A grade the target scale
    cannot hold (5 on 0-3) is an error unless `clip`. Returns the number of pairs written.
    """
    check_outputs(inputs=[path], files={"--out": out})
    low, high = parse_scale(to_scale) or (GRADE_MIN, GRADE_MAX)
    top = high - low + GRADE_MIN  # the highest labeller grade the target scale can hold
    graded = read_grades(path, role="judgments", from_scale=from_scale)
    grades: dict[tuple[str, str], int] = {}
    for pair, rows in rows_by_pair(graded).items():
        grade = settled_grade(rows)
        if grade > top and not clip:
            raise BadInputError(f"grade {grade} of pair {pair} does not fit the target scale {low}-{high}; "
                                "pass --clip to write it as the top grade", path=str(path), line=rows[0].line,
                                field="grade")
        grades[pair] = min(grade, top)
    write_text(out, format_qrels(grades, to_scale))
    return len(grades)
