"""`labeller agree`: compare judge labels with human gold, and gate a prompt change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import app
from labeller.cli.exporting import ExperimentOpt, ExportOpt, prepared_exports, stderr
from labeller.cli.inputs import BeirOpt, BeirSplitOpt, ColumnsOpt, beir_inputs, required

_GATE_HELP = ("Gate: exit 1 when the new labels' metric is below --min-kappa, or when the upper end of the "
              "paired query-bootstrap interval of (new - baseline) is below -MAX_DROP, i.e. the drop exceeds "
              "MAX_DROP even on the most favourable reading.")


@app.command(short_help="Compare judge labels with human gold (kappa, alpha, disagreements); with --baseline, "
                        "gate a prompt change.",
             help="Compare judge labels with human gold: kappa (plain, linear, quadratic, binarized), ordinal "
                  "alpha, correlations, confusion matrix, query-bootstrap intervals, and a disagreement report. "
                  "With --baseline, also the prompt-change gate. " + _GATE_HELP)
def agree(
    labels: Annotated[Path, typer.Option("--labels", help="Judge labels: any table with query_id, doc_id, grade "
                                                          "(justification, judge optional), or TREC qrels.")],
    gold: Annotated[Optional[Path], typer.Option("--gold", help="Human gold: JSONL/CSV/Parquet (query_id, doc_id, "
                                                                "grade, annotator, note) or TREC qrels.")] = None,
    baseline: Annotated[Optional[Path], typer.Option("--baseline", help="Labels of the old prompt/rubric/model "
                                                                         "for the prompt-change gate.")] = None,
    relevant_from: Annotated[int, typer.Option("--relevant-from", help="Grade from which a pair counts as "
                                                                       "relevant, for decisions.")] = 3,
    report: Annotated[Optional[Path], typer.Option("--report", help="Directory for agreement.md, agreement.html "
                                                                     "and disagreements.csv.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
    min_diff: Annotated[int, typer.Option("--min-diff", help="Report pairs differing by this many grades or "
                                                             "more.")] = 2,
    clip: Annotated[bool, typer.Option("--clip", help="Move grades outside a file's scale to its nearest end "
                                                      "(reported) instead of failing; never a substitute for "
                                                      "--from-scale.")] = False,
    from_scale: Annotated[Optional[str], typer.Option("--from-scale", metavar="[FILE=]LOW-HIGH", help="A file's own "
                                                      "scale, shifted onto 1..: 0-3 maps 0..3 onto 1..4. LOW-HIGH: "
                                                      "the TREC qrels inputs (default 0-3), or every table when "
                                                      "there are none. gold=0-3, labels=0-2, baseline=...: that "
                                                      "file (tables default to 1-5; labeller's own label output "
                                                      "is always 1-5).")] = None,
    queries: Annotated[Optional[Path], typer.Option("--queries", help="Queries file: query text in reports, "
                                                                      "id checks.")] = None,
    corpus: Annotated[Optional[Path], typer.Option("--corpus", help="Corpus file: document excerpts in reports, "
                                                                    "id checks.")] = None,
    rubric: Annotated[Optional[str], typer.Option("--rubric", help="Rubric whose worked examples must not be in "
                                                                   "the gold set; labels made under another "
                                                                   "version of it are marked stale.")] = None,
    judge: Annotated[Optional[str], typer.Option("--judge", help="The judge (provider:model) the labels should "
                                                                 "come from; labels by another are marked "
                                                                 "stale.")] = None,
    resamples: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples (of queries).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence level of intervals.")] = 0.95,
    min_kappa: Annotated[Optional[float], typer.Option("--min-kappa", help="Fail when the new labels' gate "
                                                                           "metric is below this.")] = None,
    max_drop: Annotated[float, typer.Option("--max-drop", help="Largest drop of the gate metric tolerated.")] = 0.02,
    gate_metric: Annotated[str, typer.Option("--gate-metric", help="kappa, kappa_linear, kappa_quadratic, "
                                                                   "alpha_ordinal or kappa_relevant.")] = "kappa",
    columns: ColumnsOpt = None,
    beir: BeirOpt = None,
    beir_split: BeirSplitOpt = "test",
    export: ExportOpt = None,
    export_experiment: ExperimentOpt = None,
) -> None:
    from labeller.agreement.report import generosity_sentence, headline
    from labeller.api.agreeing import agree as agree_api
    from labeller.errors import GateFailedError
    from labeller.io.columns import column_mapping

    exports = prepared_exports(export, export_experiment)
    with column_mapping(columns):
        queries, corpus, qrels = beir_inputs(beir, beir_split, queries=queries, corpus=corpus, need_qrels=gold is None)
        result = agree_api(labels, required(gold or qrels, "--gold"), baseline=baseline, queries=queries,
                           corpus=corpus, rubric=rubric, from_scale=from_scale, clip=clip,
                           relevant_from=relevant_from, resamples=resamples, seed=seed, confidence=confidence,
                           min_diff=min_diff, min_kappa=min_kappa, max_drop=max_drop, gate_metric=gate_metric, judge=judge,
                           report_dir=report)
    for warning in result.warnings:
        typer.echo(f"labeller: warning: {warning}", err=True)
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json"), ensure_ascii=False))
    else:
        typer.echo(generosity_sentence(result))
        for name, value in headline(result):
            typer.echo(f"{name}: {value}")
        if result.judges:
            from labeller.cli.jury import judges_against_gold

            judges_against_gold(result.judges, result.relevant_from, typer.echo)
        if result.gate:
            g = result.gate
            typer.echo(f"gate: {g.verdict.upper()} ({g.change}); {g.metric} new {_fmt(g.new)}"
                       + (f", baseline {_fmt(g.old)}, fixed {len(g.fixed)}, broken {len(g.broken)}"
                          if g.old is not None else ""))
        for path in result.reports:
            typer.echo(f"wrote {path}")
    failed = bool(result.gate and result.gate.verdict == "fail")
    if exports:
        from labeller.exporters import finish
        from labeller.exporters.batches import agreement_batch

        finish(exports, lambda: agreement_batch(result, judge=judge), stderr, job_failed=failed)
    if failed:
        raise GateFailedError("prompt-change gate failed: " + "; ".join(result.gate.reasons))


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
