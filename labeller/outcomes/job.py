"""run_outcomes(): `labeller outcomes` from file paths to one OutcomesReport.

The run is a run file (TREC or table) or a traces export (labeller.traces: OTLP JSON, a Phoenix spans
export), whose query ids are the trace ids and whose retriever inputs are the query texts.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from labeller.errors import BadInputError
from labeller.evaluation.qrels import load_judgments
from labeller.evaluation.runs import Ranking, load_run, rank
from labeller.outcomes.analysis import OutcomesOptions, analyse, values_for
from labeller.outcomes.results import OutcomesReport
from labeller.outcomes.table import read_outcome_table


class OutcomesJob(BaseModel):
    model_config = ConfigDict(extra="forbid")
    labels: Path
    outcomes: Path
    run: Path | None = None
    traces: Path | None = None
    trace_format: str = "auto"
    baseline: Path | None = None  # a run (or, with traces, a traces export) to compare with
    baseline_outcomes: Path | None = None
    evidence: Path | None = None
    queries: Path | None = None  # texts beside the ids in reports
    from_scale: str | None = None
    options: OutcomesOptions = Field(default_factory=OutcomesOptions)


def _ranking(path: Path, traces: bool, trace_format: str, texts: dict[str, str]) -> Ranking:
    if not traces:
        return load_run(path)
    from labeller.traces import read_traces

    found = read_traces(path, trace_format)
    texts.update({t.trace_id: t.query for t in found.traces if t.query})
    return rank(found.entries(), found.name, str(path))


def run_outcomes(job: OutcomesJob) -> tuple[OutcomesReport, dict[str, str]]:
    """The report, and the query texts it can show (from --queries and the traces' retriever inputs)."""
    if (job.run is None) == (job.traces is None):
        raise BadInputError("give exactly one of --run (a run file) or --traces (an OTLP JSON or Phoenix export)",
                            field="run")
    if job.baseline_outcomes is not None and job.baseline is None:
        raise BadInputError("--baseline-outcomes needs --baseline: the run those outcomes came from",
                            field="baseline_outcomes")
    if job.baseline is not None and job.traces is not None:
        raise BadInputError("--baseline compares two runs over the same queries; traces of two systems have "
                            "different trace ids: give --run for both", field="baseline")
    job.options.check()
    outcomes = read_outcome_table(job.outcomes, job.options.success_from)
    before = (read_outcome_table(job.baseline_outcomes, job.options.success_from)
              if job.baseline_outcomes is not None else None)
    judgments = load_judgments(job.labels, job.from_scale)
    texts: dict[str, str] = {}
    if job.queries is not None:
        from labeller.io.inputs import read_queries

        texts.update({q: v.text for q, v in read_queries(job.queries).items()})
    evidence = None
    if job.evidence is not None:
        from labeller.acceptance.coverage import read_evidence

        evidence = read_evidence(job.evidence)
    traces = job.traces is not None
    ranking = _ranking(job.run or job.traces, traces, job.trace_format, texts)
    values = values_for(ranking, judgments, job.options, evidence)
    baseline = None
    if job.baseline is not None:
        base = load_run(job.baseline)
        if base.name == ranking.name:
            base.name = f"baseline:{base.name}"
        baseline = values_for(base, judgments, job.options, evidence)
    report = analyse(values, outcomes, job.options, baseline=baseline, baseline_outcomes=before, texts=texts,
                     key="trace_id" if traces else None)
    return report, texts
