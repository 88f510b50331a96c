"""`labeller probe`: judge bias probes (length, keyword stuffing, instruction injection, near-duplicates)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import STORE_HELP, app
from labeller.cli.inputs import BeirOpt, BeirSplitOpt, ColumnsOpt, beir_inputs, required
from labeller.cli.judging import BaseUrlOpt, ConcurrencyOpt, MaxCostOpt, PricesOpt, RpmOpt, TimeoutOpt, TpmOpt

_HELP = ("Test the judge for documented biases: grade controlled perturbations of labelled pairs (padding with "
         "irrelevant text, the query's words stuffed into an irrelevant document, an injected 'grade this 5', "
         "trivial edits) and report each probe's mean grade shift with a query-resampled interval. Exit 1 when "
         "any probe's mean shift (near-duplicate: mean absolute shift) is beyond --threshold, so it can gate a "
         "rubric or model change. Every pair goes through the verdict cache: a rerun pays nothing. Not "
         "`labeller canaries probe`, which probes retrievers with planted facts.")


@app.command("probe", short_help="Judge bias probes: grade shift under length, stuffing, injection and "
                                 "near-duplicate perturbations; exit 1 beyond --threshold.", help=_HELP)
def probe(
    judge: Annotated[str, typer.Option(help="openai:<model>, anthropic:<model> or offline:lexical.")] = "offline:lexical",
    queries: Annotated[Optional[Path], typer.Option(help="Queries file with query_id and text.")] = None,
    corpus: Annotated[Optional[Path], typer.Option(help="Corpus file with doc_id and text; never written.")] = None,
    labels: Annotated[Optional[Path], typer.Option(help="Labelled pairs to probe: labeller labels, human gold or "
                                                        "TREC qrels; their grades pick the irrelevant pairs.")] = None,
    pairs: Annotated[Optional[Path], typer.Option(help="Bare pairs instead of --labels: the judge's own grades "
                                                       "of them pick the irrelevant pairs.")] = None,
    sample: Annotated[bool, typer.Option("--sample", help="Probe the bundled bookkeeping sample (its queries, "
                                                          "corpus, gold and transactions rubric).")] = False,
    rubric: Annotated[Optional[str], typer.Option(help="A rubric file, or the name of a shipped rubric "
                                                       "(default: general; transactions with --sample).")] = None,
    probes: Annotated[Optional[str], typer.Option("--probes", help="Comma-separated: length, stuffing, injection, "
                                                                   "near-duplicate (default: all).")] = None,
    pairs_per_probe: Annotated[int, typer.Option(min=1, help="Pairs each probe draws (seeded).")] = 50,
    threshold: Annotated[Optional[str], typer.Option(metavar="[PROBE=]GRADES,...", help="Largest mean shift "
                                                     "tolerated, in grades: 0.5 for every probe, or per probe "
                                                     "(injection=0.2,near-duplicate=0.1), or both (default 0.5).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for the pairs drawn, the padding, the wording and the bootstrap.")] = 0,
    resamples: Annotated[int, typer.Option("--bootstrap", min=1, help="Bootstrap resamples (of queries).")] = 2000,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999, help="Confidence level of intervals.")] = 0.95,
    relevant_from: Annotated[int, typer.Option(min=2, max=5, help="Grades below this count as irrelevant: the "
                                                                  "pairs stuffing and injection run on.")] = 3,
    from_scale: Annotated[Optional[str], typer.Option(metavar="LOW-HIGH", help="The --labels file's own scale "
                                                      "(qrels default 0-3, tables 1-5).")] = None,
    report: Annotated[Optional[Path], typer.Option("--report", "--out", help="Directory for probes.md, "
                                                                            "probes.html and probes.json.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full report as JSON.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count the originals and copies to grade, new and "
                                                            "cached, and estimate tokens and cost; send nothing.")] = False,
    cache: Annotated[Optional[str], typer.Option(help=STORE_HELP)] = None,
    concurrency: ConcurrencyOpt = 16,
    max_cost: MaxCostOpt = None,
    base_url: BaseUrlOpt = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    prices: PricesOpt = None,
    timeout: TimeoutOpt = 60.0,
    columns: ColumnsOpt = None,
    beir: BeirOpt = None,
    beir_split: BeirSplitOpt = "test",
) -> None:
    from labeller.errors import GateFailedError
    from labeller.io.columns import column_mapping
    from labeller.labelling import LabelInputs, LabelOptions
    from labeller.probes import ProbeSettings, parse_probes, parse_thresholds, probe_files
    from labeller.probes.report import row, summary_lines

    settings = ProbeSettings(probes=parse_probes(probes), pairs_per_probe=pairs_per_probe,
                             thresholds=parse_thresholds(threshold), seed=seed, resamples=resamples,
                             confidence=confidence, relevant_from=relevant_from)
    options = LabelOptions(concurrency=concurrency, max_cost=max_cost, requests_per_minute=rpm,
                           tokens_per_minute=tpm, dry_run=dry_run)
    if sample:
        queries, corpus, labels, rubric = _sample(queries, corpus, labels, pairs, rubric)
    with column_mapping(columns):
        queries, corpus, qrels = beir_inputs(beir, beir_split, queries=queries, corpus=corpus,
                                             need_qrels=labels is None and pairs is None)
        inputs = LabelInputs(queries=required(queries, "--queries"), corpus=required(corpus, "--corpus"),
                             pairs=pairs, rubric=rubric or "general", cache=cache, out=None, base_url=base_url,
                             timeout=timeout, prices=prices, options=options)
        result, written = probe_files(inputs, judge, labels=labels or (qrels if pairs is None else None),
                                      from_scale=from_scale, settings=settings, report_dir=report)
    if as_json:
        print(result.model_dump_json(indent=2))
    elif result.estimate is not None:
        e = result.estimate
        cost = "unknown (no price for this model)" if e.cost_usd is None else f"${e.cost_usd:.4f}"
        print(f"dry run: {e.pairs} pairs (originals and probe copies), {e.new} new, {e.cached} cached; nothing sent")
        print(f"estimated: {e.input_tokens or 0:,} input + {e.output_tokens or 0:,} output tokens, cost {cost}")
    else:
        for line in summary_lines(result):
            print(line)
        for r in result.probes:
            cells = row(r)
            print(f"  {cells[1]} {r.probe}: {r.graded} pairs ({r.failed} failed), mean shift {cells[5]} {cells[6]}, "
                  f"mean |shift| {cells[7]}, changed {cells[9]}, threshold {cells[10]}")
            for reason in r.reasons:
                print(f"      {reason}")
        for path in written:
            print(f"wrote {path}")
    if not result.passed:
        failed = [r.probe for r in result.probes if r.verdict == "fail"]
        raise GateFailedError(f"bias probe failed: {', '.join(failed)} (see the table above)")


def _sample(queries, corpus, labels, pairs, rubric):
    """The bundled sample's files, for the inputs not given explicitly."""
    from labeller.shipped import shipped_dir

    root = shipped_dir("pipelines") / "sample"
    gold = shipped_dir("gold") / "transactions.jsonl"
    return (queries or root / "queries.jsonl", corpus or root / "corpus.jsonl",
            labels or (None if pairs is not None else gold), rubric or "transactions")
