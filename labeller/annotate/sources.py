"""Where the pairs of an annotation sample come from: a pairs file, a run's top k, or a judge's labels.

Every source gives `Candidate`s. Labels also give the judge's grade (to stratify on) and, when the file
has one, the judge's uncertainty for the pair (for the "most uncertain first" plan). Labels are `labeller label`
output or any grades `labeller evaluate --labels` reads (TREC qrels, ranx JSON, a table with query_id, doc_id and
grade: another tool's LLM labels), on their own scale shifted onto 1.. as there, so the sample's strata are the
judge grades `evaluate --gold-sample` checks them against. `labeller label --samples N` (N > 1) writes
`sample_agreement` and `sample_grades`; a label table may carry an uncertainty in any of these columns (the first
one set on a row is used):

- `uncertainty`: a number, higher means less sure;
- `grade_entropy` (`labeller label --grade-probs`): the entropy in bits of the grade's distribution read from
  the judge's token log-probabilities; the uncertainty is it over log2(5), 0-1 (it comes before the sample
  columns: with `--samples auto` most pairs have one sample, whose agreement says nothing);
- `sample_agreement` (or `agreement`): the share of the judge's samples that agree with its grade
  (0-1); the uncertainty is 1 minus it;
- `sample_grades`: the grades of several samples of the judge; the uncertainty is the share of samples
  that differ from the most common grade.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from labeller.errors import BadInputError
from labeller.io.gold import native_label_row, read_grades
from labeller.io.inputs import check_known, read_pairs
from labeller.io.scales import command_scale
from labeller.io.tables import read_rows
from labeller.io.trec import is_table, ranx_json, read_run_lines, top_k
from labeller.io.validation import validation_error
from labeller.records import Doc, Label, Query, Record

UNCERTAINTY_COLUMNS = ("uncertainty", "grade_entropy", "sample_agreement", "agreement", "sample_grades")
MAX_ENTROPY = math.log2(5)  # bits, every grade alike


class Candidate(Record):
    query_id: str
    doc_id: str
    judge_grade: int | None = None
    uncertainty: float | None = None
    rubric: str | None = None
    rubric_version: str | None = None
    justification: str = ""  # the judge's, where its labels give one (the adjudication view shows it)


def require_every(pool: list[Candidate], field: str, why: str) -> None:
    """Stop when a candidate lacks `field`: `why` names the plan's need, with {pair} (the first such pair)
    and {n} (how many lack it) filled in."""
    missing = [c for c in pool if getattr(c, field) is None]
    if missing:
        raise BadInputError(why.format(pair=f"({missing[0].query_id}, {missing[0].doc_id})", n=len(missing)),
                            field="plan")


def from_pairs(path: str | Path, queries: dict[str, Query] | None = None,
               corpus: dict[str, Doc] | None = None) -> list[Candidate]:
    return [Candidate(query_id=p.query_id, doc_id=p.doc_id) for p in read_pairs(path, queries, corpus)]


def from_run(path: str | Path, depth: int, queries: dict[str, Query] | None = None,
             corpus: dict[str, Doc] | None = None) -> list[Candidate]:
    if depth < 1:
        raise BadInputError(f"--depth {depth} must be at least 1", field="depth")
    lines = read_run_lines(path)
    line_of = {(e.query_id, e.doc_id): n for n, e in lines}
    entries = top_k([e for _, e in lines], depth)
    for e in entries:
        check_known(e.query_id, e.doc_id, queries, corpus, path, line_of[e.query_id, e.doc_id])
    seen = {(e.query_id, e.doc_id): Candidate(query_id=e.query_id, doc_id=e.doc_id) for e in entries}
    return list(seen.values())


def from_labels(path: str | Path, queries: dict[str, Query] | None = None, corpus: dict[str, Doc] | None = None,
                from_scale: str | None = None) -> list[Candidate]:
    """A judge's labels, with any uncertainty column (see the module docstring); `from_scale` as `labeller evaluate
    --from-scale` takes it (a bare LOW-HIGH: the file's own scale)."""
    path = Path(path)
    if from_scale and any(item.partition("=")[0].strip() != "labels" for item in from_scale.split(",") if "=" in item):
        raise BadInputError(f"--from-scale '{from_scale}': here it names the scale of --labels, the one grade file "
                            "read; give it as LOW-HIGH or labels=LOW-HIGH", field="from_scale")
    if is_table(path) and ranx_json(path) is None and native_label_row(next(iter(read_rows(path)))[1]):
        return [Candidate(query_id=label.query_id, doc_id=label.doc_id, judge_grade=label.grade,
                          uncertainty=uncertainty, rubric=label.rubric, rubric_version=label.rubric_version,
                          justification=label.justification)
                for label, uncertainty in judge_labels(path, queries, corpus)]
    graded = read_grades(path, role="labels", from_scale=command_scale(from_scale, [path]), clip_hint=False,
                         several_per_pair=False, queries=queries, corpus=corpus)
    uncertain = {}
    if is_table(path) and ranx_json(path) is None:
        uncertain = {line: _uncertainty({k: row[k] for k in UNCERTAINTY_COLUMNS if k in row}, path, line)
                     for line, row in read_rows(path, role="grades")}
    return [Candidate(query_id=g.query_id, doc_id=g.doc_id, judge_grade=g.grade, uncertainty=uncertain.get(g.line),
                      rubric=g.rubric or None, rubric_version=g.rubric_version or None, justification=g.note)
            for g in graded.rows]


def judge_labels(path: str | Path, queries: dict[str, Query] | None = None,
                 corpus: dict[str, Doc] | None = None) -> list[tuple[Label, float | None]]:
    """Every label of a label file with the judge's uncertainty (None when the file gives none)."""
    path = Path(path)
    out: dict[tuple[str, str], tuple[Label, float | None]] = {}
    for line, row in read_rows(path):
        extra = {k: row.pop(k) for k in UNCERTAINTY_COLUMNS if k in row}
        try:
            label = Label.model_validate(row)
        except ValidationError as exc:
            raise validation_error(exc, path=str(path), line=line,
                                   expected="a label row (labeller label output)") from None
        check_known(label.query_id, label.doc_id, queries, corpus, path, line)
        if (label.query_id, label.doc_id) in out:
            raise BadInputError(f"pair ({label.query_id}, {label.doc_id}) is labelled twice; a label file holds "
                                "one grade per pair", path=str(path), line=line, field="doc_id")
        out[label.query_id, label.doc_id] = (label, _uncertainty(extra, path, line))
    return list(out.values())


def _uncertainty(extra: dict[str, Any], path: Path, line: int) -> float | None:
    for column, value in extra.items():
        if value is None or value == "":
            continue
        if column == "sample_grades":
            if not isinstance(value, list) or not value or not all(isinstance(g, int) for g in value):
                raise BadInputError(f"expected a non-empty list of whole-number grades, got {value!r}",
                                    path=str(path), line=line, field=column)
            return 1 - Counter(value).most_common(1)[0][1] / len(value)
        number = _number(value, path, line, column)
        if column == "uncertainty":
            return number
        if column == "grade_entropy":
            if not 0 <= number <= MAX_ENTROPY + 1e-6:
                raise BadInputError(f"{number} is not the entropy of a grade distribution; expected bits from 0 to "
                                    f"{MAX_ENTROPY:.3f}", path=str(path), line=line, field=column)
            return number / MAX_ENTROPY
        if not 0 <= number <= 1:
            raise BadInputError(f"{number} is not a share; expected a number from 0 to 1", path=str(path),
                                line=line, field=column)
        return 1 - number
    return None


def _number(value: Any, path: Path, line: int, column: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number):
        raise BadInputError(f"{value!r} is not a number; expected a finite number", path=str(path), line=line,
                            field=column)
    return number
