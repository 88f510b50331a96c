"""`labeller label` and `labeller cache stats|export`: argument parsing and a summary on stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import STORE_HELP, app, cache_app
from labeller.cli.inputs import BeirOpt, BeirSplitOpt, ColumnsOpt, beir_inputs, required

FIRST_FAILURES = 5


@app.command("label")
def label(
    judge: Annotated[str, typer.Option(help="openai:<model>, anthropic:<model> or offline:lexical.")],
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
    concurrency: Annotated[int, typer.Option(min=1, help="Requests in flight at once.")] = 16,
    max_cost: Annotated[Optional[float], typer.Option(min=0, help="Stop sending before the estimated spend passes this many USD.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count new and cached pairs, estimate tokens and cost; send nothing.")] = False,
    base_url: Annotated[Optional[str], typer.Option(help="API base URL (OpenAI-compatible servers: vLLM, Ollama, ...).")] = None,
    rpm: Annotated[Optional[int], typer.Option(min=1, help="Requests-per-minute limit.")] = None,
    tpm: Annotated[Optional[int], typer.Option(min=1, help="Tokens-per-minute limit (estimated tokens).")] = None,
    prices: Annotated[Optional[Path], typer.Option(help="TOML/JSON price table overriding the built-in prices.")] = None,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds to wait for one reply.")] = 60.0,
    columns: ColumnsOpt = None,
    beir: BeirOpt = None,
    beir_split: BeirSplitOpt = "test",
    batch: Annotated[bool, typer.Option("--batch", help="Send the pairs through the provider's batch API (half price, results within 24 h).")] = False,
    poll_interval: Annotated[float, typer.Option(min=0.01, help="With --batch: seconds between polls of a batch in flight.")] = 30.0,
    batch_max_requests: Annotated[Optional[int], typer.Option(min=1, help="With --batch: requests per batch (default: the provider's limit).")] = None,
    batch_max_bytes: Annotated[Optional[int], typer.Option(min=1024, help="With --batch: bytes per batch (default: the provider's limit).")] = None,
) -> None:
    """Grade query-document pairs 1-5 with a judge, against a rubric, through the verdict cache.

    With --beir DIR and neither --pairs nor --run, the pairs of the split's qrels are labelled."""
    from labeller.io.columns import column_mapping
    from labeller.labelling import LabelOptions

    with column_mapping(columns):
        queries, corpus, qrels = beir_inputs(beir, beir_split, queries=queries, corpus=corpus,
                                             need_qrels=pairs is None and run is None)
        _label(required(queries, "--queries"), required(corpus, "--corpus"), judge, pairs or qrels, run, depth,
               rubric, cache, out, base_url, LabelOptions(concurrency=concurrency, max_cost=max_cost,
                                                          requests_per_minute=rpm, tokens_per_minute=tpm,
                                                          dry_run=dry_run, batch=batch, poll_interval=poll_interval,
                                                          batch_max_requests=batch_max_requests,
                                                          batch_max_bytes=batch_max_bytes), prices, timeout)


def _label(queries, corpus, judge, pairs, run, depth, rubric, cache, out, base_url, options, prices, timeout) -> None:
    from labeller.errors import LabellerError
    from labeller.labelling import label_job

    try:
        result = label_job(queries_path=queries, corpus_path=corpus, pairs_path=pairs, run_path=run, depth=depth,
                           judge_spec=judge, rubric=rubric, cache_dir=cache, out_path=out, base_url=base_url,
                           options=options, prices_path=prices, timeout=timeout, keep_labels=False)
    except LabellerError as exc:
        if getattr(exc, "run", None) is not None:
            _summary(exc.run)  # type: ignore[attr-defined]
        raise
    _summary(result)


def _money(value: float | None) -> str:
    return "unknown (no price for this model)" if value is None else f"${value:.4f}"


def _summary(result) -> None:
    s = result.stats
    say = lambda text="": print(text, file=sys.stderr)  # noqa: E731
    if s.dry_run:
        say(f"dry run: {s.requested} pairs, {s.new} new, {s.cached} cached; nothing sent")
        cached = f" ({s.estimated_cached_input_tokens:,} at the cached-input rate)" if s.estimated_cached_input_tokens else ""
        say(f"estimated: {s.estimated_input_tokens:,} input{cached} + {s.estimated_output_tokens:,} output tokens, "
            f"cost {_money(s.estimated_cost_usd)}")
        for note in s.estimate_notes:
            say(f"  {note}")
        return
    say(f"labelled {s.requested} pairs: {s.new} new, {s.cached} from cache, {s.failed} failed"
        + (f", {s.skipped} not sent" if s.skipped else "") + f" ({s.elapsed_s:.1f}s)")
    say(f"requests {s.requests}, tokens {s.input_tokens:,} in / {s.output_tokens:,} out, cost {_money(s.cost_usd)}")
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
