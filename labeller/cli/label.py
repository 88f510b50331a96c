"""`labeller label` and `labeller cache stats|export|import`: argument parsing and a summary on stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import STORE_HELP, app, cache_app
from labeller.cli.inputs import BeirOpt, BeirSplitOpt, ColumnsOpt, beir_inputs, required
from labeller.cli.judging import (BaseUrlOpt, ConcurrencyOpt, MaxCostOpt, OutputModeOpt, PricesOpt, RpmOpt,
                                  TemperatureOpt, TimeoutOpt, TpmOpt)

FIRST_FAILURES = 5
LOCAL_RAY = "local"  # labeller.distributed.LOCAL, without importing it for every command


@app.command("label")
def label(
    judge: Annotated[Optional[list[str]], typer.Option(help="openai:<model>, anthropic:<model> or offline:lexical. "
                                                           "Repeat for a jury (median of the judges).")] = None,
    queries: Annotated[Optional[Path], typer.Option(help="Queries file (.jsonl/.csv/.parquet) with query_id and "
                                                         "text.")] = None,
    corpus: Annotated[Optional[Path], typer.Option(help="Corpus file with doc_id and text; other columns are "
                                                        "fields.")] = None,
    pairs: Annotated[Optional[Path], typer.Option(help="Pairs file with query_id and doc_id.")] = None,
    run: Annotated[Optional[Path], typer.Option(help="A retriever run (TREC or table) to label instead of --pairs.")] = None,
    depth: Annotated[Optional[int], typer.Option(help="With --run: label the top K documents of each query.")] = None,
    rubric: Annotated[str, typer.Option(help="A rubric file, or the name of a shipped rubric.")] = "general",
    cache: Annotated[Optional[str], typer.Option(help=STORE_HELP)] = None,
    out: Annotated[Path, typer.Option(help="Output labels (.jsonl, .csv or .parquet).")] = Path("labels.jsonl"),
    concurrency: ConcurrencyOpt = 16,
    max_cost: MaxCostOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count new and cached pairs, estimate tokens and cost; send nothing.")] = False,
    base_url: BaseUrlOpt = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    prices: PricesOpt = None,
    timeout: TimeoutOpt = 60.0,
    output_mode: OutputModeOpt = None,
    columns: ColumnsOpt = None,
    beir: BeirOpt = None,
    beir_split: BeirSplitOpt = "test",
    batch: Annotated[bool, typer.Option("--batch", help="Send the pairs through the provider's batch API (half price, results within 24 h).")] = False,
    poll_interval: Annotated[float, typer.Option(min=0.01, help="With --batch: seconds between polls of a batch in flight.")] = 30.0,
    batch_max_requests: Annotated[Optional[int], typer.Option(min=1, help="With --batch: requests per batch (default: the provider's limit).")] = None,
    batch_max_bytes: Annotated[Optional[int], typer.Option(min=1024, help="With --batch: bytes per batch (default: the provider's limit).")] = None,
    escalate_to: Annotated[Optional[str], typer.Option(help="Escalation: this (expensive) judge re-grades the pairs the "
                                                            "--judge (cheap) is unsure of.")] = None,
    escalate_below: Annotated[Optional[float], typer.Option(help="With --escalate-to: escalate pairs whose sample "
                                                                 "agreement (--samples) is below this share, 0-1.")] = None,
    escalate_above_entropy: Annotated[Optional[float], typer.Option(help="With --escalate-to and --grade-probs: "
                                                                         "escalate pairs whose grade entropy is "
                                                                         "above these bits (e.g. 0.5).")] = None,
    escalate_near_cut: Annotated[bool, typer.Option(help="With --escalate-to: escalate grades next to the relevance "
                                                         "cut (--relevant-from - 1 and --relevant-from).")] = True,
    relevant_from: Annotated[int, typer.Option(help="Juries and escalation: grade from which a pair counts as "
                                                    "relevant.")] = 3,
    gold: Annotated[Optional[Path], typer.Option(help="Juries and escalation: human gold to measure each judge and "
                                                      "the final labels against.")] = None,
    from_scale: Annotated[Optional[str], typer.Option("--from-scale", metavar="[gold=]LOW-HIGH", help="With --gold: "
                                                      "its own scale, shifted onto 1.., as `agree --from-scale` "
                                                      "takes it (TREC/BEIR qrels default to 0-3).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Also print the run's stats as one JSON object on stdout.")] = False,
    samples: Annotated[str, typer.Option(help="Self-consistency: ask the judge N times per pair (needs a temperature "
                                              "above 0); the label carries the aggregate and the sample grades. "
                                              "auto:N: more samples only where the first disagree or the grade "
                                              "probability is spread, at most N (docs/labelling.md).")] = "1",
    grade_probs: Annotated[bool, typer.Option("--grade-probs", help="Read each grade's probability from the judge's "
                                                                    "token log-probabilities (OpenAI-compatible "
                                                                    "judges): grade_probs, expected_grade, "
                                                                    "grade_entropy.")] = False,
    top_logprobs: Annotated[int, typer.Option(min=1, max=20, help="With --grade-probs: alternatives asked per "
                                                                  "token (top_logprobs).")] = 10,
    aggregate: Annotated[str, typer.Option(help="How N samples become one grade: median or majority (ties go to the "
                                                "lower grade).")] = "median",
    temperature: TemperatureOpt = None,
    ray: Annotated[Optional[str], typer.Option("--ray", metavar="[ADDRESS]",
                                               help="Judge the pairs on a Ray cluster (pip install 'labeller-relevance[ray]'): "
                                                    "alone, a local Ray; with HOST:PORT, that cluster. Budget and "
                                                    "rate limits hold for the whole cluster (docs/ray.md).")] = None,
    ray_workers: Annotated[Optional[int], typer.Option(min=1, help="With --ray: blocks judged at once (default: "
                                                                   "one per CPU of the cluster).")] = None,
    ray_block_size: Annotated[int, typer.Option(min=1, help="With --ray: pairs per block.")] = 1000,
) -> None:
    """Grade query-document pairs 1-5 with a judge, against a rubric, through the verdict cache.

    With --beir DIR and neither --pairs nor --run, the pairs of the split's qrels are labelled."""
    from labeller.io.columns import column_mapping
    from labeller.labelling import LabelOptions
    from labeller.labelling.adaptive import parse_samples
    from labeller.labelling.models import Judging, LabelInputs

    samples_max, adaptive = parse_samples(samples)

    with column_mapping(columns):
        queries, corpus, qrels = beir_inputs(beir, beir_split, queries=queries, corpus=corpus,
                                             need_qrels=pairs is None and run is None)
        options = LabelOptions(concurrency=concurrency, max_cost=max_cost, requests_per_minute=rpm,
                               tokens_per_minute=tpm, dry_run=dry_run, batch=batch, poll_interval=poll_interval,
                               batch_max_requests=batch_max_requests, batch_max_bytes=batch_max_bytes,
                               samples=samples_max, aggregate=aggregate, adaptive=adaptive,
                               grade_probs=grade_probs, top_logprobs=top_logprobs,
                               ray=ray_options(ray, ray_workers, ray_block_size))
        inputs = LabelInputs(queries=required(queries, "--queries"), corpus=required(corpus, "--corpus"),
                             pairs=pairs or (qrels if run is None else None), run=run, depth=depth, rubric=rubric,
                             cache=cache, out=out, base_url=base_url, options=options, prices=prices,
                             timeout=timeout, temperature=temperature, output_mode=output_mode)
        _label(Judging(judges=judge or [], escalate_to=escalate_to, below=escalate_below, near_cut=escalate_near_cut,
                       above=escalate_above_entropy, relevant_from=relevant_from, gold=gold, gold_scale=from_scale),
               inputs, as_json)


def bare_ray_flag(args: list[str]) -> list[str]:
    """`--ray` with no address (last, or before another option) as `--ray local`: typer has no optional values."""
    return [word for i, arg in enumerate(args)
            for word in ([arg, LOCAL_RAY] if arg == "--ray" and (i + 1 == len(args) or args[i + 1].startswith("-"))
                         else [arg])]


def ray_options(address: str | None, workers: int | None, block_size: int):
    """--ray [ADDRESS] and its tuning flags as RayOptions; the tuning flags alone are refused."""
    from labeller.distributed import RayOptions
    from labeller.errors import BadInputError

    if address is None:
        if workers is not None or block_size != 1000:
            raise BadInputError("--ray-workers and --ray-block-size apply to --ray", field="ray")
        return None
    return RayOptions(address=address, workers=workers, block_size=block_size)


def _label(judging, inputs, as_json: bool) -> None:
    from labeller.errors import LabellerError
    from labeller.labelling.several import label_any

    try:
        result = label_any(judging, inputs, keep_labels=False)  # labels written as they settle
    except LabellerError as exc:
        if getattr(exc, "run", None) is not None:
            _show(exc.run, as_json)  # type: ignore[attr-defined]
        raise
    _show(result, as_json)


def _show(result, as_json: bool) -> None:
    from labeller.cli.jury import jury_summary

    for warning in result.stats.warnings:  # a run's queries or documents the inputs do not hold: skipped
        print(f"labeller: warning: {warning}", file=sys.stderr)
    if hasattr(result, "judge_labels"):
        jury_summary(result)
    else:
        _summary(result)
    if as_json:
        print(result.stats.model_dump_json())


def _money(value: float | None) -> str:
    return "unknown (no price for this model)" if value is None else f"${value:.4f}"


def _summary(result) -> None:
    s = result.stats
    say = lambda text="": print(text, file=sys.stderr)  # noqa: E731
    unit = "pairs" if s.samples == 1 else f"samples ({s.requested // s.samples} pairs x {s.samples})"
    if s.sample_counts:  # --samples auto:N
        counts = ", ".join(f"{pairs} x {n}" for n, pairs in s.sample_counts.items())
        unit = f"samples ({sum(s.sample_counts.values())} pairs: {counts}; at most {s.samples} a pair)"
    if s.dry_run:
        say(f"dry run: {s.requested} {unit}, {s.new} new, {s.cached} cached; nothing sent")
        cached = f" ({s.estimated_cached_input_tokens:,} at the cached-input rate)" if s.estimated_cached_input_tokens else ""
        say(f"estimated: {s.estimated_input_tokens:,} input{cached} + {s.estimated_output_tokens:,} output tokens, "
            f"cost {_money(s.estimated_cost_usd)}")
        for note in s.estimate_notes:
            say(f"  {note}")
        return
    say(f"labelled {s.requested} {unit}: {s.new} new, {s.cached} from cache, {s.failed} failed"
        + (f", {s.skipped} not sent" if s.skipped else "") + f" ({s.elapsed_s:.1f}s)")
    if s.unconfirmed_attempts:
        worst = f" (up to {_money(s.unconfirmed_cost_usd)} more)" if s.unconfirmed_cost_usd else ""
        say(f"{s.unconfirmed_attempts} attempts timed out, dropped or failed after sending: the provider may bill "
            f"them{worst}; --max-cost counted each at its worst case")
    say(f"requests {s.requests}, tokens {s.input_tokens:,} in / {s.output_tokens:,} out, cost {_money(s.cost_usd)}"
        + (" at batch prices" if s.batch else ""))
    if s.batch:
        b = s.batch
        say(f"batches: {b.submitted} submitted ({b.requests} requests), {b.resumed} resumed, {b.completed} completed, "
            f"{b.polls} polls")
    if result.out_path:
        say(f"labels: {result.out_path}")
    for failure in result.failures[:FIRST_FAILURES]:
        say(f"  failed {failure.query_id} / {failure.doc_id}: {failure.reason}")
    if len(result.failures) > FIRST_FAILURES:
        say(f"  ... and {len(result.failures) - FIRST_FAILURES} more")
    if result.failures_path:
        say(f"failures: {result.failures_path} (rerun the same command to retry them)")


@cache_app.command("stats")
def cache_stats(
    cache: Annotated[Optional[str], typer.Option(help=STORE_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the stats as JSON.")] = False,
) -> None:
    """Entries, judges, rubric versions, tokens, cost and size of the verdict store."""
    from labeller.store import open_store

    with open_store(cache, create=False) as store:
        stats = store.stats()
    if as_json:
        print(json.dumps(stats.model_dump(), indent=2))
        return
    print(f"store: {stats.location} ({stats.backend}, {stats.size_bytes / 1e6:.1f} MB)")
    print(f"verdicts: {stats.entries}  (failures recorded: {stats.failures_recorded}, leases held: {stats.leases_held}, "
          f"batches open: {stats.batches_open})")
    print(f"tokens: {stats.input_tokens:,} in / {stats.output_tokens:,} out; cost ${stats.cost_usd:.4f}"
          + (f" (+{stats.entries_without_cost} verdicts with no known price)" if stats.entries_without_cost else ""))
    for title, counts in (("by judge", stats.by_judge), ("by rubric", stats.by_rubric)):
        print(f"{title}:")
        for name, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {name}: {count}")


@cache_app.command("export")
def cache_export(
    out: Annotated[Path, typer.Option(help="Output file (.jsonl, .csv or .parquet).")],
    cache: Annotated[Optional[str], typer.Option(help=STORE_HELP)] = None,
) -> None:
    """Write every stored verdict with its provenance to a file."""
    from labeller.io.outputs import check_outputs
    from labeller.store import default_spec, is_url, open_store

    spec = cache or default_spec()
    check_outputs(inputs=[] if is_url(spec) else [Path(spec) / "cache.db"], files={"--out": out})
    with open_store(spec, create=False) as store:
        count = store.export(out)
    print(f"exported {count} verdicts to {out}", file=sys.stderr)


@cache_app.command("import")
def cache_import(
    source: Annotated[Path, typer.Argument(help="A file `labeller cache export` wrote (.jsonl, .csv or .parquet), "
                                                "from this store or another.")],
    cache: Annotated[Optional[str], typer.Option(help=STORE_HELP)] = None,
) -> None:
    """Store every verdict of an export file; all rows are checked before any is stored, and verdicts the store
    already holds are left alone, so it can be rerun."""
    from labeller.store.importing import import_verdicts

    result = import_verdicts(source, cache)
    print(f"imported {result.imported} verdicts from {result.source} into {result.target} "
          f"({result.already} already there, {result.read} read)", file=sys.stderr)


@cache_app.command("copy")
def cache_copy(
    src: Annotated[str, typer.Argument(help="Store to copy from: a directory or a postgresql:// URL.")],
    dst: Annotated[str, typer.Argument(help="Store to copy into (created if new).")],
) -> None:
    """Copy every verdict from SRC into DST; verdicts DST already holds are left alone, so it can be rerun."""
    from labeller.store import copy_store

    result = copy_store(src, dst)
    print(f"copied {result.copied} verdicts from {result.source} to {result.target} "
          f"({result.already} already there, {result.read} read)", file=sys.stderr)
