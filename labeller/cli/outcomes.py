"""`labeller outcomes`: which retrieval metric predicts the downstream task, and whose fault a failure is.

stdout gets the result (Markdown, or with --json one JSON object); where a report went goes to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import app
from labeller.cli.exporting import ExperimentOpt, ExportOpt, prepared_exports, stderr


def _cutoffs(text: str) -> list[int]:
    from labeller.errors import BadInputError

    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BadInputError(f"--cutoffs '{text}': expected whole numbers separated by commas, e.g. 1,3,5,10",
                            field="cutoffs") from None


@app.command("outcomes")
def outcomes(
    labels: Annotated[Path, typer.Option(help="Judgments: labels, gold or TREC qrels (as for `labeller evaluate`).")],
    outcomes: Annotated[Path, typer.Option(help="Downstream outcomes: rows {query_id and/or trace_id, outcome "
                                                "(correct/incorrect) or score}.")],
    run: Annotated[Optional[Path], typer.Option(help="The run whose retrieval led to the outcomes (TREC or table).")] = None,
    traces: Annotated[Optional[Path], typer.Option(help="Instead of --run: production traces (OTLP JSON with "
                                                        "OpenInference/GenAI retriever spans, or a Phoenix spans "
                                                        "export); joined to --outcomes by trace_id.")] = None,
    trace_format: Annotated[str, typer.Option(help="auto, otlp, console or phoenix.")] = "auto",
    baseline: Annotated[Optional[Path], typer.Option(help="A run to compare with: the downstream-weighted gate "
                                                          "(and, with --baseline-outcomes, whose fault each newly "
                                                          "failing task is).")] = None,
    baseline_outcomes: Annotated[Optional[Path], typer.Option(help="The outcomes --baseline's retrieval led to.")] = None,
    evidence: Annotated[Optional[Path], typer.Option(help="Required evidence {query_id, doc_id[, evidence_id]}: "
                                                          "adds coverage@k.")] = None,
    queries: Annotated[Optional[Path], typer.Option(help="Queries file: texts beside ids in the report.")] = None,
    metrics: Annotated[Optional[str], typer.Option(help="Metrics to compare (as `labeller evaluate --metrics`); "
                                                        "default ndcg, recall, hit_rate at every cutoff and "
                                                        "mrr.")] = None,
    cutoffs: Annotated[str, typer.Option(help="Cutoffs of the default metrics, judged@k and coverage@k.")] = "1,3,5,10",
    relevant_from: Annotated[int, typer.Option(help="Binary metrics count grade >= this (1-5) as relevant.")] = 3,
    from_scale: Annotated[Optional[str], typer.Option(help="The judgments' own scale (qrels default 0-3).")] = None,
    ok_from: Annotated[float, typer.Option(help="Retrieval succeeded on a query when the metric is >= this.")] = 0.5,
    success_from: Annotated[float, typer.Option(help="A score outcome is a success from this value.")] = 0.5,
    gate_metric: Annotated[Optional[str], typer.Option(help="Attribute and gate by this metric (default: the one "
                                                            "that predicts best).")] = None,
    max_drop: Annotated[float, typer.Option(help="Downstream gate: largest tolerated drop in predicted task "
                                                 "success.")] = 0.02,
    fail_on_drop: Annotated[Optional[bool], typer.Option(
        "--fail-on-drop/--no-fail-on-drop", help="Exit 1 when the downstream gate fails (on by default with "
                                                 "--baseline).")] = None,
    confidence: Annotated[float, typer.Option(help="Bootstrap confidence level.")] = 0.95,
    bootstrap: Annotated[int, typer.Option(help="Query resamples for the intervals.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the resampling.")] = 42,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of Markdown.")] = False,
    report: Annotated[Optional[Path], typer.Option(help="Write index.html, summary.md and result.json here.")] = None,
    export: ExportOpt = None,
    export_experiment: ExperimentOpt = None,
) -> None:
    """Which retrieval metric predicts the downstream task, and whose fault each failure is."""
    from labeller.errors import GateFailedError
    from labeller.io.outputs import check_outputs, existing_files
    from labeller.outcomes.analysis import OutcomesOptions
    from labeller.outcomes.job import OutcomesJob, run_outcomes
    from labeller.outcomes.report import REPORT_FILES, markdown, write_report

    options = OutcomesOptions(metrics=metrics, cutoffs=_cutoffs(cutoffs), relevant_from=relevant_from, ok_from=ok_from,
                              success_from=success_from, gate_metric=gate_metric, max_drop=max_drop,
                              confidence=confidence, bootstrap=bootstrap, seed=seed)
    job = OutcomesJob(labels=labels, outcomes=outcomes, run=run, traces=traces, trace_format=trace_format,
                      baseline=baseline, baseline_outcomes=baseline_outcomes, evidence=evidence, queries=queries,
                      from_scale=from_scale, options=options)
    exports = prepared_exports(export, export_experiment)
    inputs = existing_files([labels, outcomes, run, traces, baseline, baseline_outcomes, evidence, queries])
    check_outputs(inputs=inputs, files={f"--report's {n}": report / n for n in REPORT_FILES} if report else {},
                  dirs={"--report": report})
    result, texts = run_outcomes(job)
    print(result.model_dump_json(indent=2) if json_out else markdown(result), end="\n" if json_out else "")
    if report is not None:
        print(f"report: {write_report(result, report, texts)}", file=sys.stderr)
    for warning in result.warnings:
        print(f"labeller: warning: {warning}", file=sys.stderr)
    gate = result.gate
    failed = gate is not None and not gate.passed and (fail_on_drop if fail_on_drop is not None else True)
    if exports:
        from labeller.exporters import finish
        from labeller.exporters.batches import outcomes_batch

        pages = [report / name for name in REPORT_FILES if name.endswith((".html", ".md"))] if report else []
        finish(exports, lambda: outcomes_batch(result, labels=labels, outcomes=outcomes, evidence=evidence,
                                               reports=pages), stderr, job_failed=failed)
    if failed:
        assert gate is not None
        raise GateFailedError(f"downstream gate failed: {gate.reason}")
