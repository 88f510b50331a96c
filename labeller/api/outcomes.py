"""link_outcomes: DataFrames in memory (outcomes, a run or Phoenix trace spans, labels), one OutcomesResult out.

No temporary file: each frame's rows are checked as a file's rows are (an error names the frame, its row
and the column) and handed to labeller.outcomes.analyse, the function `labeller outcomes` runs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from labeller.errors import BadInputError
from labeller.evaluation.qrels import Judgments, grade_distribution, load_judgments
from labeller.evaluation.runs import Ranking, load_run, rank
from labeller.io.gold import Graded
from labeller.outcomes.analysis import OutcomesOptions, analyse, values_for
from labeller.outcomes.results import CELLS, OutcomesReport
from labeller.outcomes.table import frame_rows, outcome_rows, read_outcome_table
from labeller.records import GRADE_MAX, GRADE_MIN, RunEntry


class OutcomesResult(OutcomesReport):
    """`labeller outcomes --json`, plus frames."""

    def to_frame(self):
        """One row per metric: AUC with its interval, the logistic fit, success rates when retrieval was ok/failed."""
        import pandas as pd

        return pd.DataFrame([p.model_dump() for p in self.predictions]).set_index("metric")

    def attribution_frame(self):
        """One row per query: its cell (retrieval_fault, agent_fault, over_penalised, both_ok), value, outcome."""
        import pandas as pd

        rows = [{"cell": cell, **q.model_dump()} for cell in CELLS
                for q in (self.attribution.queries[cell] if self.attribution else [])]
        return pd.DataFrame(rows, columns=["cell", "query_id", "text", "trace_id", "value", "task_ok"])


def _rows(source: Any, role: str):
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return frame_rows(source), f"{role} DataFrame"
    if isinstance(source, list):
        return frame_rows(pd.DataFrame(source)), f"{role} list of rows"
    raise BadInputError(f"{role}: expected a pandas DataFrame, a list of row dicts or a file path, got "
                        f"{type(source).__name__}", field=role)


def _cell(row: dict, column: str, source: str, line: int) -> Any:
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise BadInputError(f"{'missing' if column not in row else 'empty'}; expected a value", path=source,
                            line=line, field=column)
    return value


def _ranking(run: Any, name: str) -> Ranking:
    if isinstance(run, (str, Path)):
        return load_run(run, name=name)
    rows, source = _rows(run, name)
    entries = []
    for line, row in rows:
        score = _cell(row, "score", source, line)
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise BadInputError(f"expected a finite number, got {score!r}", path=source, line=line, field="score")
        entries.append(RunEntry(query_id=str(_cell(row, "query_id", source, line)),
                                doc_id=str(_cell(row, "doc_id", source, line)), score=float(score)))
    return rank(entries, name, source)


def _judgments(labels: Any, from_scale: str | None) -> Judgments:
    if isinstance(labels, (str, Path)):
        return load_judgments(labels, from_scale)
    rows, source = _rows(labels, "labels")
    grades: dict[str, dict[str, int]] = {}
    probs: dict[tuple[str, str], dict[str, float]] = {}
    for line, row in rows:
        grade = _cell(row, "grade", source, line)
        if isinstance(grade, bool) or not isinstance(grade, (int, float)) or grade != int(grade) \
                or not GRADE_MIN <= grade <= GRADE_MAX:
            raise BadInputError(f"expected a whole grade from {GRADE_MIN} to {GRADE_MAX}, got {grade!r}",
                                path=source, line=line, field="grade")
        grades.setdefault(str(_cell(row, "query_id", source, line)), {})[
            str(_cell(row, "doc_id", source, line))] = int(grade)
        if isinstance(row.get("grade_probs"), dict):  # `label(grade_probs=True)` output: the corrected estimates use it
            graded = Graded(query_id=str(row["query_id"]), doc_id=str(row["doc_id"]), grade=int(grade), annotator="",
                            line=line, grade_probs=row["grade_probs"])
            probs[graded.query_id, graded.doc_id] = grade_distribution(graded, source)
    return Judgments(grades, source, "labels", probs=probs)


def _outcomes(source: Any, role: str, success_from: float):
    if isinstance(source, (str, Path)):
        return read_outcome_table(source, success_from)
    rows, name = _rows(source, role)
    return outcome_rows(rows, name, success_from)


def _texts(queries: Any) -> dict[str, str]:
    if isinstance(queries, (str, Path)):
        from labeller.io.inputs import read_queries

        return {q: v.text for q, v in read_queries(queries).items()}
    rows, source = _rows(queries, "queries")
    return {str(_cell(r, "query_id", source, n)): str(_cell(r, "text", source, n)) for n, r in rows}


def _evidence(evidence: Any) -> dict[str, dict[str, set[str]]]:
    from labeller.acceptance.coverage import read_evidence

    if isinstance(evidence, (str, Path)):
        return read_evidence(evidence)
    rows, source = _rows(evidence, "evidence")
    out: dict[str, dict[str, set[str]]] = {}
    for n, r in rows:
        doc = str(_cell(r, "doc_id", source, n))
        item = str(r.get("evidence_id") or doc)
        out.setdefault(str(_cell(r, "query_id", source, n)), {}).setdefault(item, set()).add(doc)
    return out


def link_outcomes(outcomes: Any, labels: Any, run: Any = None, *, traces: Any = None, baseline: Any = None,
                  baseline_outcomes: Any = None, queries: Any = None, evidence: Any = None,
                  from_scale: str | None = None, options: OutcomesOptions | None = None,
                  **option_values: Any) -> OutcomesResult:
    """Which retrieval metric predicts the downstream outcome, and whose fault each failure is, as
    `labeller outcomes` reports it. `outcomes`: rows {query_id and/or trace_id, outcome or score}; `run`: rows
    {query_id, doc_id, score} (or `traces`: a Phoenix spans DataFrame, or an OTLP JSON / Phoenix file);
    `labels`: rows {query_id, doc_id, grade 1-5} (or a labels/qrels file); `evidence`: rows {query_id, doc_id
    [, evidence_id]} for coverage@k; `queries`: rows {query_id, text}. `options` (or its fields as keywords:
    metrics, cutoffs, ok_from, gate_metric, max_drop, bootstrap, ...) as labeller.outcomes.OutcomesOptions."""
    options = options or OutcomesOptions(**option_values)
    if (run is None) == (traces is None):
        raise BadInputError("give exactly one of run or traces", field="run")
    texts: dict[str, str] = {}
    if traces is not None:
        from labeller.traces import read_traces
        from labeller.traces.phoenix import phoenix_rows

        found = (read_traces(traces) if isinstance(traces, (str, Path))
                 else phoenix_rows(*_rows(traces, "traces"), name="traces"))
        texts.update({t.trace_id: t.query for t in found.traces if t.query})
        ranking = rank(found.entries(), found.name, found.source)
    else:
        ranking = _ranking(run, "run")
    if queries is not None:
        texts.update(_texts(queries))
    required = _evidence(evidence) if evidence is not None else None
    judgments = _judgments(labels, from_scale)
    table = _outcomes(outcomes, "outcomes", options.success_from)
    before = _outcomes(baseline_outcomes, "baseline_outcomes", options.success_from) \
        if baseline_outcomes is not None else None
    base = values_for(_ranking(baseline, "baseline"), judgments, options, required) if baseline is not None else None
    report = analyse(values_for(ranking, judgments, options, required), table, options, baseline=base,
                     baseline_outcomes=before, texts=texts, key="trace_id" if traces is not None else None)
    return OutcomesResult.model_validate(report.model_dump())
