"""link_outcomes: DataFrames in memory (outcomes, a run or Phoenix trace spans, labels), one OutcomesResult out.

No temporary file: each frame is read in memory by the very readers that read a file (labeller.io.memory; an
error names the frame, its row and the column), then handed to labeller.outcomes.analyse, the function
`labeller outcomes` runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labeller.acceptance.coverage import read_evidence
from labeller.api.sources import readable
from labeller.errors import BadInputError
from labeller.evaluation.qrels import load_judgments
from labeller.evaluation.runs import load_run, rank
from labeller.outcomes.analysis import OutcomesOptions, analyse, values_for
from labeller.outcomes.results import CELLS, OutcomesReport
from labeller.outcomes.table import read_outcome_table


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


def _texts(queries: Any) -> dict[str, str]:
    from labeller.io.inputs import read_queries

    return {q: v.text for q, v in read_queries(readable(queries, "queries")).items()}


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

        source = readable(traces, "traces")
        found = (read_traces(source) if isinstance(source, Path)
                 else phoenix_rows(source.rows(), str(source), name="traces"))
        texts.update({t.trace_id: t.query for t in found.traces if t.query})
        ranking = rank(found.entries(), found.name, found.source)
    else:
        ranking = load_run(readable(run, "run"), name="run")
    if queries is not None:
        texts.update(_texts(queries))
    required = read_evidence(readable(evidence, "evidence")) if evidence is not None else None
    judgments = load_judgments(readable(labels, "labels"), from_scale)
    table = read_outcome_table(readable(outcomes, "outcomes"), options.success_from)
    before = read_outcome_table(readable(baseline_outcomes, "baseline_outcomes"), options.success_from) \
        if baseline_outcomes is not None else None
    base = (values_for(load_run(readable(baseline, "baseline"), name="baseline"), judgments, options, required)
            if baseline is not None else None)
    report = analyse(values_for(ranking, judgments, options, required), table, options, baseline=base,
                     baseline_outcomes=before, texts=texts, key="trace_id" if traces is not None else None)
    return OutcomesResult.model_validate(report.model_dump())
