"""`labeller evaluate`: score runs with graded labels, compare them, gate regressions.

stdout gets the result: the Markdown summary, or with --json one JSON object. Everything else
(where a report was written) goes to stderr, so `--json > result.json` stays valid JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import STORE_HELP, app
from labeller.cli.exporting import ExperimentOpt, ExportOpt, prepared_exports, stderr
from labeller.cli.inputs import BeirOpt, BeirSplitOpt, ColumnsOpt, beir_inputs, required
from labeller.cli.judging import OutputModeOpt, PricesOpt, TimeoutOpt

_BASELINE_HELP = ("A run (TREC or table) or a saved `labeller evaluate --json` result to compare with; "
                  "enables the regression gate.")


@app.command("evaluate")
def evaluate(
    run: Annotated[list[Path], typer.Option(help="A run: TREC format, or .jsonl/.csv/.parquet with query_id, doc_id, "
                                                 "score. Repeat to compare runs.")],
    labels: Annotated[Optional[Path], typer.Option(help="Judgments: any table with query_id, doc_id, grade "
                                                        "(`labeller label` output, a gold file, another tool's "
                                                        "labels), TREC qrels or ranx JSON qrels.")] = None,
    metrics: Annotated[str, typer.Option(help="Comma-separated: ndcg@k, recall@k, precision@k, mrr or mrr@k, "
                                              "hit_rate@k, map or map@k; or trec_eval's names: ndcg_cut_10, P_10, "
                                              "recall_100, recip_rank, map.")] = "ndcg@10,recall@100,mrr@10",
    relevant_from: Annotated[int, typer.Option(help="Binary metrics count grade >= this (1-5 scale) as relevant.")] = 3,
    from_scale: Annotated[Optional[str], typer.Option(metavar="[labels=|labels-alt=]LOW-HIGH", help="The judgments' own "
                                                      "scale, shifted onto 1.. (0-3 maps 0..3 onto 1..4): qrels "
                                                      "(default 0-3) and tables (default 1-5), e.g. a 0-3 gold "
                                                      "CSV; beside qrels, name a table: labels=LOW-HIGH (also "
                                                      "--labels-alt's, unless labels-alt=LOW-HIGH gives its own).")] = None,
    gain: Annotated[str, typer.Option(help="NDCG gain: linear (grade-1, trec_eval) or exponential (2^(grade-1)-1).")] = "linear",
    average: Annotated[str, typer.Option(help="trec: queries in the run with judgments (trec_eval default); all: every "
                                              "judged query, missing ones 0 (trec_eval -c).")] = "trec",
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of the Markdown summary.")] = False,
    report: Annotated[Optional[Path], typer.Option(help="Write index.html, summary.md and result.json here.")] = None,
    baseline: Annotated[Optional[Path], typer.Option(help=_BASELINE_HELP)] = None,
    threshold: Annotated[Optional[list[str]], typer.Option(help="Largest tolerated drop per metric, e.g. ndcg@10=0.02 "
                                                               "(repeatable).")] = None,
    default_threshold: Annotated[float, typer.Option(help="Threshold for metrics without --threshold.")] = 0.01,
    alpha: Annotated[float, typer.Option(help="A drop is significant when p < alpha.")] = 0.05,
    test: Annotated[str, typer.Option(help="Gate's one-sided significance test: randomization or "
                                           "t-test.")] = "randomization",
    require_significance: Annotated[bool, typer.Option(
        "--require-significance",
        help="Gate only drops a test can call significant: when too few queries differ for the test to reach "
             "--alpha, a drop above its threshold passes as 'drop-untestable' with a warning, instead of "
             "failing on the threshold alone.")] = False,
    exact_scores: Annotated[bool, typer.Option(
        "--exact-scores", help="Rank by the full double score. Default: as trec_eval, scores rounded to 32-bit "
                               "floats, ties by doc id descending.")] = False,
    fail_on_regression: Annotated[Optional[bool], typer.Option(
        "--fail-on-regression/--no-fail-on-regression",
        help="Exit 1 when the gate fails: a drop above its threshold that is significant (or that too few "
             "queries differ to test), or nothing comparable. On by default whenever --baseline is given; "
             "--no-fail-on-regression only reports.")] = None,
    labels_alt: Annotated[Optional[Path], typer.Option(help="Second judgments (e.g. LLM labels): report Kendall tau "
                                                            "and Spearman rho between the run orderings.")] = None,
    fill_holes: Annotated[bool, typer.Option("--fill-holes", help="Label the unjudged pairs in the top --depth "
                                             "with --judge (through the cache) before scoring.")] = False,
    depth: Annotated[Optional[int], typer.Option(help="Hole-filling depth; default the largest metric cutoff.")] = None,
    judge: Annotated[Optional[str], typer.Option(help="For --fill-holes: openai:<model>, anthropic:<model>, "
                                                      "offline:lexical.")] = None,
    queries: Annotated[Optional[Path], typer.Option(help="For --fill-holes: queries file (query_id, text).")] = None,
    corpus: Annotated[Optional[Path], typer.Option(help="For --fill-holes: corpus file (doc_id, text).")] = None,
    rubric: Annotated[str, typer.Option(help="For --fill-holes: rubric file or shipped rubric name.")] = "general",
    cache: Annotated[Optional[str], typer.Option(help="For --fill-holes: " + STORE_HELP)] = None,
    base_url: Annotated[Optional[str], typer.Option(help="For --fill-holes: API base URL.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="For --fill-holes: requests in flight.")] = 16,
    max_cost: Annotated[Optional[float], typer.Option(min=0, help="For --fill-holes: USD budget.")] = None,
    holes_out: Annotated[Optional[Path], typer.Option(help="For --fill-holes: also write the new labels here.")] = None,
    prices: PricesOpt = None,  # these three: for --fill-holes, as `label` takes them
    timeout: TimeoutOpt = 60.0,
    output_mode: OutputModeOpt = None,
    confidence: Annotated[float, typer.Option(help="Bootstrap confidence level.")] = 0.95,
    permutations: Annotated[int, typer.Option(help="Randomization-test sign flips.")] = 10_000,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the randomization test and the bootstrap.")] = 42,
    floor: Annotated[Optional[list[str]], typer.Option(
        "--min", metavar="METRIC=VALUE", help="Absolute floor, e.g. ndcg@10=0.6 (repeatable): exit 1 when a run's "
                                              "metric is below it, with or without a baseline.")] = None,
    per_query: Annotated[bool, typer.Option("-q", "--per-query", help="Print trec_eval -q style lines (measure, "
                                                                       "query, value; then 'all') instead of "
                                                                       "the Markdown summary.")] = False,
    junit: Annotated[Optional[Path], typer.Option(help="Write JUnit XML here: one test case per gated metric "
                                                       "(regression gate and floors).")] = None,
    summary: Annotated[Optional[Path], typer.Option(help="Append a Markdown summary (verdict, gated checks, "
                                                         "metrics) here, e.g. \"$GITHUB_STEP_SUMMARY\".")] = None,
    gold: Annotated[Optional[Path], typer.Option(help="People's grades for a random sample of the labelled pairs (any "
                                                      "format `labeller agree --gold` takes): beside each plain "
                                                      "figure, a corrected estimate with 95% intervals that carry "
                                                      "the judge's error (docs/evaluate.md).")] = None,
    gold_design: Annotated[str, typer.Option(help="How --gold was sampled: pairs (within judge grades, as `labeller "
                                                  "annotate sample` draws), queries (every pair of random queries), "
                                                  "or auto.")] = "auto",
    gold_sample: Annotated[Optional[Path], typer.Option(help="The frozen sample --gold was graded from (`labeller "
                                                             "annotate sample --out`): its plan and strata are "
                                                             "checked against this pool, and the pairs it drew with "
                                                             "certainty (--plan top:K) are weighed as such.")] = None,
    per_query_coverage: Annotated[float, typer.Option(
        help="With --gold graded by whole queries: each other query gets an interval that holds its value under "
             "people's grades for at least this share of queries (conformal risk control; docs/evaluate.md).")] = 0.9,
    corrected_gate: Annotated[bool, typer.Option(
        "--corrected", help="With --baseline and --gold: the gate decides on the corrected differences (judge "
                            "error included), and its verdict says so.")] = False,
    columns: ColumnsOpt = None,
    beir: BeirOpt = None,
    beir_split: BeirSplitOpt = "test",
    export: ExportOpt = None,
    export_experiment: ExperimentOpt = None,
) -> None:
    """Score retriever runs with graded labels (trec_eval-compatible), compare them, gate regressions."""
    from labeller.evaluation import EvaluateOptions, markdown, outcome_error, outcome_warnings, write_report
    from labeller.evaluation import evaluate as run_evaluation
    from labeller.evaluation.report import REPORT_FILES
    from labeller.evaluation.trec_names import per_query_text
    from labeller.io.columns import column_mapping
    from labeller.io.outputs import check_outputs, existing_files
    from labeller.reports.ci import evaluation_checks, write_ci_outputs

    with column_mapping(columns):
        queries, corpus, qrels = beir_inputs(beir, beir_split, queries=queries, corpus=corpus,
                                             need_qrels=labels is None)
        labels = required(labels or qrels, "--labels")

    label_options = None
    if fill_holes:
        from labeller.labelling import LabelOptions

        label_options = LabelOptions(concurrency=concurrency, max_cost=max_cost)
    holes_path = holes_out or (report / "filled-labels.jsonl" if report is not None and fill_holes else None)
    options = EvaluateOptions(
        runs=run, labels=labels, metrics=metrics, relevant_from=relevant_from, from_scale=from_scale, gain=gain,
        average=average, baseline=baseline, thresholds=threshold or [], default_threshold=default_threshold,
        alpha=alpha, test=test, require_significance=require_significance, exact_scores=exact_scores,
        confidence=confidence, permutations=permutations, bootstrap=bootstrap, seed=seed,
        labels_alt=labels_alt, fill_holes=fill_holes, depth=depth, judge=judge, queries=queries, corpus=corpus,
        rubric=rubric, cache=cache, base_url=base_url, holes_out=holes_path, label_options=label_options,
        prices=prices, timeout=timeout, output_mode=output_mode,
        fail_on_regression=fail_on_regression, floors=floor or [], gold=gold, gold_design=gold_design,
        gold_sample=gold_sample, corrected_gate=corrected_gate, per_query_coverage=per_query_coverage)
    inputs = existing_files([*run, labels, baseline, labels_alt, queries, corpus, rubric, gold, gold_sample, prices])
    check_outputs(inputs=inputs, files={"--holes-out": holes_path, "--junit": junit, "--summary": summary,
                                        **({f"--report's {n}": report / n for n in REPORT_FILES} if report else {})},
                  dirs={"--report": report, "--cache": cache if fill_holes else None})
    exports = prepared_exports(export, export_experiment)
    with column_mapping(columns):
        result = run_evaluation(options)
    if json_out:
        print(result.model_dump_json(indent=2))
    else:
        print(per_query_text(result) if per_query else markdown(result), end="")
    if report is not None:
        with column_mapping(columns):  # the queries' texts go beside their ids in the page
            print(f"report: {write_report(result, report, queries)}", file=sys.stderr)
    for warning in outcome_warnings(result):
        print(f"labeller: warning: {warning}", file=sys.stderr)
    for path in write_ci_outputs(evaluation_checks(result), title="Gated checks",
                                 body=markdown(result), junit=junit, summary=summary):
        print(f"wrote {path}", file=sys.stderr)
    error = outcome_error(result, fail_on_regression)
    if exports:
        from labeller.exporters import finish
        from labeller.exporters.batches import evaluation_batch

        pages = [report / n for n in REPORT_FILES if n.endswith((".html", ".md"))] if report is not None else []
        finish(exports, lambda: evaluation_batch(result, queries=queries, reports=pages), stderr,
               job_failed=error is not None)
    if error is not None:
        raise error
