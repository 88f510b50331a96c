"""One annotation session: a frozen sample, its rubric and texts, who grades what, and the gold file.

Everything the page asks for goes through here, and everything is checked here (the HTTP layer only
turns `BadInputError` into a 400 and `StaleError` into a 409). While grading, an annotator is shown
the query and document fields the rubric names and the rubric's grade definitions, never the judge's
grade, and only their own grades.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from labeller.agreement.stale import stale_gold, stale_labels
from labeller.annotate.assign import assign, shared_pairs
from labeller.annotate.goldstore import GoldStore
from labeller.annotate.sample import Sample, read_sample
from labeller.annotate.sources import Candidate, from_labels
from labeller.annotate.views import adjudication_items, agreement_view, progress
from labeller.errors import BadInputError
from labeller.io.inputs import read_corpus, read_queries
from labeller.records import GRADE_MAX, GRADE_MIN, GoldLabel
from labeller.rubric import Rubric, load_rubric

_GRADE_LINE = re.compile(r"^\s*[-*]\s*\*\*\s*([1-5])\b\s*[—–:.-]*\s*(.*)$")
_TITLE = re.compile(r"^(.*?)\*\*\s*(.*)$")  # "The precedent.** Same category..." -> title, text


class StaleError(BadInputError):
    """The page or a file on disk no longer belongs to the sample being served."""


class NotReadyError(BadInputError):
    """A request the session refuses for now (adjudicating while the blind pass goes on): 409, not stale."""


def grade_definitions(rubric: Rubric) -> dict[int, dict[str, str]]:
    """The rubric's "- **5 — Title.** text" bullets as {grade: {title, text}}; {} when it has none."""
    found: dict[int, list[str]] = {}
    current = None
    for line in rubric.body.splitlines():
        match = _GRADE_LINE.match(line)
        if match:
            current = int(match.group(1))
            found[current] = [match.group(2)]
        elif current is not None and line.startswith(("  ", "\t")) and line.strip():
            found[current].append(line.strip())
        else:
            current = None
    out = {}
    for grade, parts in sorted(found.items(), reverse=True):
        text = " ".join(parts).strip()
        titled = _TITLE.match(text)
        title, text = (titled.group(1).strip(), titled.group(2)) if titled else ("", text)
        out[grade] = {"title": title, "text": text.replace("**", "")}
    return out


def parse_note_required(value: str | None, rubric: Rubric) -> list[int]:
    """'all', 'none' or grades like '1,2'; None takes the rubric's `note_required` (default: every grade)."""
    if value is None:
        return sorted(rubric.note_required) if rubric.note_required is not None else list(range(GRADE_MIN, GRADE_MAX + 1))
    if value.strip().lower() == "all":
        return list(range(GRADE_MIN, GRADE_MAX + 1))
    if value.strip().lower() == "none":
        return []
    try:
        grades = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        grades = [0]
    if not grades or any(g < GRADE_MIN or g > GRADE_MAX for g in grades):
        raise BadInputError(f"--note-required '{value}' is not 'all', 'none' or grades 1-5 like '1,2'",
                            field="note_required")
    return grades


class Session:
    def __init__(self, *, sample: str | Path, gold: str | Path, queries: str | Path, corpus: str | Path,
                 annotators: list[str], overlap: float = 0.2, rubric: str | None = None,
                 labels: str | Path | None = None, note_required: str | None = None,
                 open_review: bool = False, from_scale: str | None = None) -> None:
        from labeller.io.outputs import check_outputs

        check_outputs(inputs=[sample, queries, corpus, labels], files={"--gold": gold})
        self.sample_path = Path(sample)
        self.sample: Sample = read_sample(sample)
        self.rubric = load_rubric(rubric or self.sample.rows[0].rubric)
        self.queries, self.corpus = read_queries(queries), read_corpus(corpus)
        for row in self.sample.rows:
            if row.query_id not in self.queries or row.doc_id not in self.corpus:
                missing = row.query_id if row.query_id not in self.queries else row.doc_id
                raise BadInputError(f"'{missing}' of pair ({row.query_id}, {row.doc_id}) is not in "
                                    f"{queries if missing == row.query_id else corpus}; expected the queries and "
                                    "corpus the sample was drawn from", path=str(sample), line=row.position)
        self.assignment = assign(self.sample, annotators, overlap)
        self.overlap = overlap
        self.note_required = parse_note_required(note_required, self.rubric)
        self.store = GoldStore(gold, self.sample)
        self.labels: dict[tuple[str, str], Candidate] | None = None  # the judge's grade of each pair
        self.open_review = open_review
        self.warnings: list[str] = []
        self.label_warnings: list[str] = []
        if self.sample.rubric_version and self.sample.rubric_version != self.rubric.version:
            self.warnings.append(f"stale: the sample was frozen with rubric version {self.sample.rubric_version}; "
                                 f"rubric '{self.rubric.name}' is now version {self.rubric.version}")
        if labels is not None:
            judged = from_labels(labels, self.queries, self.corpus, from_scale)
            self.labels = {(c.query_id, c.doc_id): c for c in judged}
            self.label_warnings = stale_labels(labels, rubric=self.rubric)  # shown where the judge is: adjudication
        self.warnings += stale_gold(gold, rubric=self.rubric) if Path(gold).exists() and Path(gold).stat().st_size else []
        self._position = {(r.query_id, r.doc_id): r.position for r in self.sample.rows}
        self._sample_stat = self._stat()

    # -- checks every request passes -----------------------------------------------------------
    def _stat(self) -> tuple[int, int]:
        st = self.sample_path.stat()
        return st.st_mtime_ns, st.st_size

    def check(self, sample_id: Any) -> None:
        if sample_id != self.sample.sample_id:
            raise StaleError(f"This page was opened for sample {sample_id}, but the server now serves sample "
                             f"{self.sample.sample_id} ({self.sample_path.name}); reload the page")
        if self._stat() != self._sample_stat:
            try:
                now = read_sample(self.sample_path).sample_id
            except BadInputError as exc:
                raise StaleError(f"The sample file changed on disk and is no longer readable ({exc}); restart "
                                 "the server on a frozen sample") from None
            if now != self.sample.sample_id:
                raise StaleError(f"The sample file {self.sample_path.name} was replaced by sample {now} while "
                                 f"the server serves {self.sample.sample_id}; restart the server")

    def annotator(self, name: Any) -> str:
        if not isinstance(name, str) or name not in self.assignment:  # a list or object: never hashed
            raise BadInputError(f"unknown annotator {name!r}; expected one of: {', '.join(self.assignment)}",
                                field="annotator")
        return name

    def _rows(self) -> list[GoldLabel]:
        try:
            return self.store.rows()
        except BadInputError as exc:  # someone replaced the gold file with another sample's or a hand-made one
            raise StaleError(str(exc)) from None

    # -- what the page asks for ------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        return {"sample_id": self.sample.sample_id, "sample": self.sample_path.name, "pairs": len(self.sample.rows),
                "annotators": list(self.assignment), "overlap": self.overlap,
                "shared_pairs": len(shared_pairs(self.assignment)),
                "rubric": {"name": self.rubric.name, "version": self.rubric.version,
                           "description": self.rubric.description,
                           "grades": grade_definitions(self.rubric), "body": self.rubric.body.strip()},
                "query_fields": self.rubric.query_fields, "doc_fields": self.rubric.doc_fields,
                "note_required": self.note_required, "adjudication": True, "labels": self.labels is not None,
                "warnings": self.warnings}

    def _fields(self, record, names: list[str]) -> list[list[str]]:
        values = [[n, record.text if n == "text" else record.fields.get(n)] for n in names]
        return [[n, str(v)] for n, v in values if v not in (None, "")]

    def queue(self, name: Any) -> dict[str, Any]:
        """The annotator's pairs in order, with their own grades only (never anyone else's, never the judge's)."""
        name = self.annotator(name)
        mine = {(r.query_id, r.doc_id): r for r in self._rows() if r.annotator == name and r.outcome != "adjudicated"}
        items = []
        for row in self.assignment[name]:
            given = mine.get((row.query_id, row.doc_id))
            items.append({"position": row.position, "query_id": row.query_id, "doc_id": row.doc_id,
                          "query": self._fields(self.queries[row.query_id], self.rubric.query_fields),
                          "doc": self._fields(self.corpus[row.doc_id], self.rubric.doc_fields),
                          "mine": given.model_dump(include={"outcome", "grade", "note", "created_at"}) if given else None})
        return {"annotator": name, "items": items}

    def grade(self, body: dict[str, Any]) -> dict[str, Any]:
        self.check(body.get("sample_id"))
        name = self.annotator(body.get("annotator"))
        pair = _pair(body)
        if pair not in {(r.query_id, r.doc_id) for r in self.assignment[name]}:
            raise BadInputError(f"pair {pair} is not one of {name}'s pairs in sample {self.sample.sample_id}")
        outcome, grade, note = body.get("outcome"), body.get("grade"), str(body.get("note") or "").strip()
        if outcome not in ("graded", "cant_judge", "later"):
            raise BadInputError(f"outcome {outcome!r} is unknown; expected graded, cant_judge or later", field="outcome")
        if outcome == "graded":
            if isinstance(grade, bool) or grade not in range(GRADE_MIN, GRADE_MAX + 1):
                raise BadInputError(f"grade {grade!r} is not a whole number 1-5", field="grade")
            if grade in self.note_required and not note:
                raise BadInputError(f"grade {grade} needs a note: say which part of the rubric decided it",
                                    field="note")
        else:
            grade = None
        self._save(GoldLabel(query_id=pair[0], doc_id=pair[1], grade=grade, annotator=name, note=note, outcome=outcome,
                             created_at=_now(), sample_id=self.sample.sample_id, rubric_version=self.rubric.version))
        return {"ok": True, "progress": next(p for p in progress(self.assignment, self._rows())
                                             if p.annotator == name).model_dump()}

    def _save(self, row: GoldLabel) -> None:
        try:
            self.store.save(row)
        except StaleError:
            raise
        except BadInputError as exc:
            raise StaleError(str(exc)) from None

    def agreement(self) -> dict[str, Any]:
        return agreement_view(self.assignment, self._rows(), self._position,
                              open_review=self.open_review).model_dump(mode="json")

    def adjudication(self) -> dict[str, Any]:
        rows = self._rows()
        view = agreement_view(self.assignment, rows, self._position, open_review=self.open_review)
        if not view.blind_pass_done and not self.open_review:
            left = sum(p.assigned - p.done for p in view.progress)
            return {"ready": False, "open_pairs": left, "items": [], "labels": self.labels is not None}
        items = [item.model_copy(update={"query": self._fields(self.queries[item.query_id], self.rubric.query_fields),
                                         "doc": self._fields(self.corpus[item.doc_id], self.rubric.doc_fields)})
                 for item in adjudication_items(rows, self._position, self.labels)]
        return {"ready": True, "labels": self.labels is not None, "warnings": self.label_warnings,
                "items": [i.model_dump() for i in items]}

    def adjudicate(self, body: dict[str, Any]) -> dict[str, Any]:
        self.check(body.get("sample_id"))
        if not self.open_review and not agreement_view(self.assignment, self._rows(), self._position).blind_pass_done:
            raise NotReadyError("the blind pass is not done: pairs are settled once every annotator has graded "
                                "theirs (or the server runs with --open-review)")
        adjudicator = str(body.get("adjudicator") or "").strip()
        if not adjudicator or len(adjudicator) > 40:
            raise BadInputError("adjudicator name is missing; expected who settles the pair", field="adjudicator")
        pair = _pair(body)
        if pair not in self._position:
            raise BadInputError(f"pair {pair} is not in sample {self.sample.sample_id}")
        grade = body.get("grade")
        if isinstance(grade, bool) or grade not in range(GRADE_MIN, GRADE_MAX + 1):
            raise BadInputError(f"grade {grade!r} is not a whole number 1-5", field="grade")
        self._save(GoldLabel(query_id=pair[0], doc_id=pair[1], grade=grade, annotator=adjudicator,
                             note=str(body.get("note") or "").strip(), outcome="adjudicated", created_at=_now(),
                             sample_id=self.sample.sample_id, rubric_version=self.rubric.version,
                             rubric_problem=bool(body.get("rubric_problem"))))
        return {"ok": True}


def _pair(body: dict[str, Any]) -> tuple[str, str]:
    """The request's (query_id, doc_id), each a string (a list or object is refused, never hashed)."""
    for field in ("query_id", "doc_id"):
        if not isinstance(body.get(field), str):
            raise BadInputError(f"{str(body.get(field))[:80]!r} is not an id; expected a string", field=field)
    return body["query_id"], body["doc_id"]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
