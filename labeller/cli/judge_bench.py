"""`labeller judge-bench`: one or more judges on a human-labelled set, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import STORE_HELP, app
from labeller.cli.inputs import BeirOpt, BeirSplitOpt, ColumnsOpt, beir_inputs, required


@app.command("judge-bench", short_help="Benchmark judges on human-labelled pairs: agreement, system ranking, "
                                       "speed, cost per 1,000 pairs.",
             help="Every --judge grades every pair of the human-labelled set through the verdict cache (a rerun "
                  "pays nothing); printed side by side: Cohen's kappa (plain and quadratic), ordinal "
                  "Krippendorff's alpha and kappa at the relevance cut, each with a query-resampled interval; "
                  "with two or more --run, Kendall's tau between the system ranking under the gold grades and "
                  "under the judge's; pairs per second; tokens and USD per 1,000 pairs at synchronous and "
                  "batch prices.")
def judge_bench(
    judge: Annotated[list[str], typer.Option("--judge", help="openai:<model>, anthropic:<model> or offline:lexical "
                                                            "(repeatable: one column each).")],
    gold: Annotated[Optional[Path], typer.Option("--gold", help="Human grades: JSONL/CSV/Parquet (query_id, doc_id, "
                                                                "grade, ...) or TREC qrels.")] = None,
    queries: Annotated[Optional[Path], typer.Option("--queries", help="Queries file with query_id and text.")] = None,
    corpus: Annotated[Optional[Path], typer.Option("--corpus", help="Corpus file with doc_id and text.")] = None,
    run: Annotated[Optional[list[Path]], typer.Option("--run", help="A retriever run (repeatable, at least two): "
                                                                    "system-ranking Kendall tau.")] = None,
    metric: Annotated[str, typer.Option("--metric", help="Metric the runs are ordered by.")] = "ndcg@10",
    rubric: Annotated[str, typer.Option("--rubric", help="A rubric file, or the name of a shipped rubric.")] = "general",
    from_scale: Annotated[Optional[str], typer.Option("--from-scale", metavar="[gold=]LOW-HIGH",
                                                      help="The gold file's own scale, shifted onto 1..: 0-3 maps "
                                                           "TREC's 0..3 onto 1..4 (qrels default 0-3).")] = None,
    clip_to_gold: Annotated[bool, typer.Option("--clip-to-gold", help="Compare judge grades above the gold scale's "
                                                                      "top as that top (reported), as the LLMJudge "
                                                                      "organisers clipped LLM labels to 0-3.")] = False,
    relevant_from: Annotated[int, typer.Option("--relevant-from", help="Grade from which a pair counts as "
                                                                       "relevant (the cut of the binarized kappa and "
                                                                       "of binary metrics).")] = 3,
    resamples: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples (of queries).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence level of intervals.")] = 0.95,
    cache: Annotated[Optional[str], typer.Option("--cache", help=STORE_HELP)] = None,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="API base URL (OpenAI-compatible servers).")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight at once.")] = 16,
    max_cost: Annotated[Optional[float], typer.Option("--max-cost", min=0, help="Per judge: stop sending before "
                                                                                 "the estimated spend passes this "
                                                                                 "many USD.")] = None,
    prices: Annotated[Optional[Path], typer.Option("--prices", help="TOML/JSON price table overriding the built-in "
                                                                    "prices.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds to wait for one reply.")] = 60.0,
    labels_dir: Annotated[Optional[Path], typer.Option("--labels-dir", help="Keep each judge's labels in this "
                                                                            "directory.")] = None,
    md: Annotated[Optional[Path], typer.Option("--md", help="Also write the Markdown table to this file.")] = None,
    html: Annotated[Optional[Path], typer.Option("--html", help="Write a self-contained HTML page.")] = None,
    report: Annotated[Optional[Path], typer.Option("--report", help="Directory for judge-bench.md, judge-bench.json "
                                                                    "and judge-bench.html.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure instead of the "
                                                         "Markdown table.")] = False,
    columns: ColumnsOpt = None,
    beir: BeirOpt = None,
    beir_split: BeirSplitOpt = "test",
) -> None:
    from labeller.bench import BenchOptions
    from labeller.bench.output import output_files, write_outputs
    from labeller.bench.run import judge_bench as bench
    from labeller.io.columns import column_mapping
    from labeller.labelling import LabelOptions

    with column_mapping(columns):
        queries, corpus, qrels = beir_inputs(beir, beir_split, queries=queries, corpus=corpus, need_qrels=gold is None)
        result = bench(BenchOptions(
            gold=required(gold or qrels, "--gold"), queries=required(queries, "--queries"),
            corpus=required(corpus, "--corpus"), judges=judge, rubric=rubric, runs=run or [], metric=metric,
            from_scale=from_scale, clip_to_gold=clip_to_gold, relevant_from=relevant_from, resamples=resamples,
            seed=seed, confidence=confidence, cache=cache, base_url=base_url, prices=prices, timeout=timeout,
            label_options=LabelOptions(concurrency=concurrency, max_cost=max_cost), labels_dir=labels_dir,
            outputs=output_files(md, html, report), report_dir=report))
    for warning in result.warnings:
        typer.echo(f"labeller: warning: {warning}", err=True)
    shown, written = write_outputs(result, as_json=as_json, md=md, html=html, report=report)
    typer.echo(shown)
    for path in written:  # stderr: stdout may be the JSON
        typer.echo(f"wrote {path}", err=True)
