"""Options every reading command shares: --columns (columns named otherwise) and --beir (a BEIR folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.errors import BadInputError

ColumnsOpt = Annotated[Optional[list[str]], typer.Option(
    "--columns", metavar="OURS=THEIRS,...",
    help="Read columns named otherwise, e.g. query_id=qid,doc_id=docid,grade=label,text=passage (repeatable). "
         "Well-known names (qid, docid, _id, query-id, corpus-id, passage, ...) are read without it.")]
BeirOpt = Annotated[Optional[Path], typer.Option(
    "--beir", metavar="DIR", help="A BEIR dataset folder: corpus.jsonl, queries.jsonl and qrels/<split>.tsv, "
                                  "read as they are.")]
BeirSplitOpt = Annotated[str, typer.Option("--beir-split", help="Which qrels/<split>.tsv of --beir to read.")]


def beir_inputs(beir: Path | None, split: str, *, queries: Path | None, corpus: Path | None,
                need_qrels: bool) -> tuple[Path | None, Path | None, Path | None]:
    """(queries, corpus, qrels): an explicit --queries/--corpus wins over the BEIR folder's file."""
    if beir is None:
        return queries, corpus, None
    from labeller.io.beir import beir_dataset

    data = beir_dataset(beir, split, need_qrels=need_qrels)
    return queries or data.queries, corpus or data.corpus, data.qrels


def required(value: Path | None, flag: str) -> Path:
    if value is None:
        raise BadInputError(f"missing {flag} (or --beir DIR, whose folder holds it)", field=flag.lstrip("-"))
    return value


# Options that name a scale per file: given twice, click would keep the last silently (a file's scale dropped).
ONCE_ONLY = ("--from-scale",)


def refuse_repeated(args: list[str]) -> None:
    """An option of ONCE_ONLY given more than once with different values is refused (before any command runs)."""
    for name in ONCE_ONLY:
        values = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == name]
        values += [arg.partition("=")[2] for arg in args if arg.startswith(name + "=")]
        if len(set(values)) > 1:
            raise BadInputError(f"{name} is given {len(values)} times ({', '.join(values)}); give it once, naming "
                                f"each file's scale, e.g. {name} gold=0-3,labels=0-2", field=name.lstrip("-"))
