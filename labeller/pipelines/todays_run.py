"""Today's run of the regression pipeline: retrieved by the configured retriever (a registered name or
your own `package.module:function`), or read from `retriever.run`, the file your system wrote."""

from __future__ import annotations

import re
from pathlib import Path

from labeller.io.trec import read_known_run
from labeller.records import Doc, Query, RunEntry


def todays_run(cfg, queries: dict[str, Query], corpus: dict[str, Doc], stem: Path) -> tuple[Path, list[RunEntry]]:
    """(the run file to evaluate, its entries). A given run file is evaluated where it lies, so every
    error (an unknown document, a bad line) names that file and line, not a copy."""
    if cfg.retriever.run is not None:
        return cfg.retriever.run, read_known_run(cfg.retriever.run, queries, corpus, cfg.retriever.depth)
    from labeller.pipelines.steps import retrieve

    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", cfg.retriever.name)  # "pkg.mod:fn" is a file name too
    path = stem.with_name(f"{stem.name}-{safe}.trec")
    return path, retrieve(cfg.retriever.name, queries, corpus, cfg.retriever.depth, path)


def system_name(cfg) -> str:
    """What today's system is called in summaries and history: the run file's name, else the retriever's."""
    return f"run file {cfg.retriever.run.name}" if cfg.retriever.run is not None else cfg.retriever.name
