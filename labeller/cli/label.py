"""`labeller label` and `labeller cache stats|export`: argument parsing and a summary on stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import app, cache_app

DEFAULT_CACHE = ".labeller-cache"
FIRST_FAILURES = 5


@app.command("label")
def label(
    queries: Annotated[Path, typer.Option(help="Queries file (.jsonl/.csv/.parquet) with query_id and text.")],
    corpus: Annotated[Path, typer.Option(help="Corpus file with doc_id and text; other columns are fields.")],
    judge: Annotated[str, typer.Option(help="openai:<model>, anthropic:<model> or offline:lexical.")],
    pairs: Annotated[Optional[Path], typer.Option(help="Pairs file with query_id and doc_id.")] = None,
    run: Annotated[Optional[Path], typer.Option(help="A retriever run (TREC or table) to label instead of --pairs.")] = None,
    depth: Annotated[Optional[int], typer.Option(help="With --run: label the top K documents of each query.")] = None,
    rubric: Annotated[str, typer.Option(help="A rubric file, or the name of a shipped rubric.")] = "general",
    cache: Annotated[Path, typer.Option(help="Verdict cache directory.")] = Path(DEFAULT_CACHE),
    out: Annotated[Path, typer.Option(help="Output labels (.jsonl, .csv or .parquet).")] = Path("labels.jsonl"),
    concurrency: Annotated[int, typer.Option(min=1, help="Requests in flight at once.")] = 16,
    max_cost: Annotated[Optional[float], typer.Option(min=0, help="Stop sending before the estimated spend passes this many USD.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count new and cached pairs, estimate tokens and cost; send nothing.")] = False,
    base_url: Annotated[Optional[str], typer.Option(help="API base URL (OpenAI-compatible servers: vLLM, Ollama, ...).")] = None,
    rpm: Annotated[Optional[int], typer.Option(min=1, help="Requests-per-minute limit.")] = None,
    tpm: Annotated[Optional[int], typer.Option(min=1, help="Tokens-per-minute limit (estimated tokens).")] = None,
    prices: Annotated[Optional[Path], typer.Option(help="TOML/JSON price table overriding the built-in prices.")] = None,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds to wait for one reply.")] = 60.0,
) -> None:
    """Grade query-document pairs 1-5 with a judge, against a rubric, through the verdict cache."""
    from labeller.errors import LabellerError
    from labeller.labelling import LabelOptions, label_job

    options = LabelOptions(concurrency=concurrency, max_cost=max_cost, requests_per_minute=rpm,
                           tokens_per_minute=tpm, dry_run=dry_run)
    try:
        result = label_job(queries_path=queries, corpus_path=corpus, pairs_path=pairs, run_path=run, depth=depth,
                           judge_spec=judge, rubric=rubric, cache_dir=cache, out_path=out, base_url=base_url,
                           options=options, prices_path=prices, timeout=timeout)
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
    cache: Annotated[Path, typer.Option(help="Verdict cache directory.")] = Path(DEFAULT_CACHE),
    as_json: Annotated[bool, typer.Option("--json", help="Print the stats as JSON.")] = False,
) -> None:
    """Entries, judges, rubric versions, tokens, cost and size of the verdict cache."""
    from labeller.cache import VerdictCache

    with VerdictCache(cache, create=False) as store:
        stats = store.stats()
    if as_json:
        print(json.dumps(stats.model_dump(), indent=2))
        return
    print(f"cache: {stats.directory} ({stats.size_bytes / 1e6:.1f} MB)")
    print(f"verdicts: {stats.entries}  (failures recorded: {stats.failures_recorded}, leases held: {stats.leases_held})")
    print(f"tokens: {stats.input_tokens:,} in / {stats.output_tokens:,} out; cost ${stats.cost_usd:.4f}"
          + (f" (+{stats.entries_without_cost} verdicts with no known price)" if stats.entries_without_cost else ""))
    for title, counts in (("by judge", stats.by_judge), ("by rubric", stats.by_rubric)):
        print(f"{title}:")
        for name, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {name}: {count}")


@cache_app.command("export")
def cache_export(
    out: Annotated[Path, typer.Option(help="Output file (.jsonl, .csv or .parquet).")],
    cache: Annotated[Path, typer.Option(help="Verdict cache directory.")] = Path(DEFAULT_CACHE),
) -> None:
    """Write every cached verdict with its provenance to a file."""
    from labeller.cache import VerdictCache
    from labeller.io.outputs import check_outputs

    check_outputs(inputs=[cache / "cache.db"], files={"--out": out})
    with VerdictCache(cache, create=False) as store:
        count = store.export(out)
    print(f"exported {count} verdicts to {out}", file=sys.stderr)
