"""`labeller qrels import|export`: convert TREC qrels to and from gold/label files with an explicit scale."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import app
from labeller.cli.inputs import ColumnsOpt

qrels_app = typer.Typer(help="Convert TREC qrels (`qid 0 docid grade`) to and from labeller's 1-5 files.",
                        no_args_is_help=True)
app.add_typer(qrels_app, name="qrels")


@qrels_app.command("import", help="TREC qrels -> gold file (JSONL/CSV/Parquet by extension). "
                                  "--from-scale 0-3 maps grades 0..3 onto 1..4.")
def import_(
    qrels: Annotated[Path, typer.Argument(help="TREC qrels file.")],
    out: Annotated[Path, typer.Option("--out", help="Gold file to write.")],
    from_scale: Annotated[str, typer.Option("--from-scale", help="Scale of the qrels grades, LOW-HIGH.")],
    annotator: Annotated[str, typer.Option("--annotator", help="Annotator name for every row.")] = "qrels",
    clip: Annotated[bool, typer.Option("--clip", help="Clip out-of-scale grades instead of failing.")] = False,
    columns: ColumnsOpt = None,
) -> None:
    from labeller.io.columns import column_mapping
    from labeller.io.gold import import_qrels

    with column_mapping(columns):  # a headed qrels table (query-id, corpus-id, score) may name them otherwise
        count = import_qrels(qrels, out, from_scale=from_scale, annotator=annotator, clip=clip)
    typer.echo(f"wrote {count} gold rows to {out}")


@qrels_app.command("export", help="Gold or label file -> TREC qrels. --to-scale 0-3 maps 1..4 onto 0..3; a pair "
                                  "several people graded is written with its median grade (lower middle on a tie).")
def export(
    source: Annotated[Path, typer.Argument(help="Gold or label file (JSONL/CSV/Parquet).")],
    out: Annotated[Path, typer.Option("--out", help="Qrels file to write.")],
    to_scale: Annotated[str, typer.Option("--to-scale", help="Scale of the written grades, LOW-HIGH.")],
    from_scale: Annotated[Optional[str], typer.Option("--from-scale", help="When SOURCE is itself qrels.")] = None,
    clip: Annotated[bool, typer.Option("--clip", help="Write grades above the target scale as its top "
                                                      "grade.")] = False,
    columns: ColumnsOpt = None,
) -> None:
    from labeller.io.columns import column_mapping
    from labeller.io.gold import export_qrels

    with column_mapping(columns):
        count = export_qrels(source, out, to_scale=to_scale, from_scale=from_scale, clip=clip)
    typer.echo(f"wrote {count} qrels lines to {out}")
