"""`labeller batch list|status|cancel|export|import`: argument parsing and a few lines on stderr."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import STORE_HELP, app

batch_app = typer.Typer(help="Provider batches in flight (see `labeller label --batch`); OpenAI batch files "
                             "for self-hosted models (vLLM run-batch).", no_args_is_help=True)
app.add_typer(batch_app, name="batch")

Cache = Annotated[Optional[str], typer.Option(help=STORE_HELP)]
BaseUrl = Annotated[Optional[str], typer.Option(help="API base URL the batch was sent to (default: the provider's).")]
Queries = Annotated[Path, typer.Option(help="Queries file, as given to `labeller label`.")]
Corpus = Annotated[Path, typer.Option(help="Corpus file, as given to `labeller label`.")]
Judge = Annotated[str, typer.Option(help="openai:<model>: the model name the server answers to.")]
Pairs = Annotated[Optional[Path], typer.Option(help="Pairs file with query_id and doc_id.")]
Run = Annotated[Optional[Path], typer.Option(help="A retriever run to label instead of --pairs.")]
Depth = Annotated[Optional[int], typer.Option(help="With --run: the top K documents of each query.")]
Rubric = Annotated[str, typer.Option(help="A rubric file, or the name of a shipped rubric.")]
Prices = Annotated[Optional[Path], typer.Option(help="TOML/JSON price table overriding the built-in prices.")]


def _say(text: str) -> None:
    print(text, file=sys.stderr)


@batch_app.command("list")
def batch_list(cache: Cache = None) -> None:
    """The batches in flight that the store knows (submitted, not yet read back)."""
    from labeller.labelling.batch_jobs import list_batches

    records = list_batches(cache)
    for r in records:
        print(f"{r.provider}\t{r.batch_id}\t{r.meta.get('judge', '')}\t{len(r.keys)} requests\tsubmitted {r.created_at}")
    _say(f"{len(records)} batches in flight")


def _show(status) -> None:
    print(f"{status.batch_id}\t{status.status}\ttotal {status.total}\tsucceeded {status.succeeded}\t"
          f"failed {status.failed}" + (f"\t{status.reason}" if status.reason else ""))


@batch_app.command("status")
def batch_status(batch_id: Annotated[str, typer.Argument(help="A batch id from `labeller batch list`.")],
                 cache: Cache = None, base_url: BaseUrl = None) -> None:
    """Ask the provider where one batch stands."""
    from labeller.labelling.batch_jobs import batch_status as status

    _show(status(cache, batch_id, base_url))


@batch_app.command("cancel")
def batch_cancel(batch_id: Annotated[str, typer.Argument(help="A batch id from `labeller batch list`.")],
                 cache: Cache = None, base_url: BaseUrl = None) -> None:
    """Ask the provider to stop a batch. Rerun the label command to read what it finished."""
    from labeller.labelling.batch_jobs import cancel_batch

    _show(cancel_batch(cache, batch_id, base_url))
    _say("cancel requested: requests not run become failures when the batch is read "
         "(by the run polling it, or by rerunning the same label command)")


@batch_app.command("export")
def batch_export(queries: Queries, corpus: Corpus, judge: Judge,
                 out: Annotated[Path, typer.Option(help="The OpenAI batch input file to write (.jsonl).")],
                 pairs: Pairs = None, run: Run = None, depth: Depth = None, rubric: Rubric = "general",
                 cache: Cache = None, base_url: BaseUrl = None) -> None:
    """Write the OpenAI batch input lines for the pairs not yet in the store (vLLM run-batch reads them)."""
    from labeller.labelling.batch_jobs import export_batch
    from labeller.labelling.models import LabelInputs

    count = export_batch(LabelInputs(queries=queries, corpus=corpus, pairs=pairs, run=run, depth=depth, rubric=rubric,
                                     cache=cache, base_url=base_url), judge, out)
    _say(f"exported {count} requests to {out} (pairs already in the store are left out)")


@batch_app.command("import")
def batch_import(queries: Queries, corpus: Corpus, judge: Judge,
                 results: Annotated[Path, typer.Option(help="An OpenAI batch output file (vLLM run-batch -o).")],
                 pairs: Pairs = None, run: Run = None, depth: Depth = None, rubric: Rubric = "general",
                 cache: Cache = None, base_url: BaseUrl = None, prices: Prices = None) -> None:
    """Read a batch output file into the store; then `labeller label` with the same inputs sends nothing."""
    from labeller.labelling.batch_jobs import import_batch
    from labeller.labelling.models import LabelInputs

    result = import_batch(LabelInputs(queries=queries, corpus=corpus, pairs=pairs, run=run, depth=depth, rubric=rubric,
                                      cache=cache, base_url=base_url, prices=prices), judge, results)
    _say(f"imported {result.imported} verdicts from {result.lines} lines ({result.already_stored} already stored, "
         f"{result.failures} failures recorded: rerun export to retry them)")
