"""What today's system of the regression pipeline is called: the configured retriever (a registered
name or your own `package.module:function`), or `retriever.run`, the file your system wrote."""

from __future__ import annotations

import re


def safe_name(name: str) -> str:
    """A system name as a file name: "pkg.mod:fn" or "run file x.trec" -> "pkg.mod_fn", "run_file_x.trec"."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def system_name(cfg) -> str:
    """What today's system is called in summaries and history: the run file's name, else the retriever's."""
    return f"run file {cfg.retriever.run.name}" if cfg.retriever.run is not None else cfg.retriever.name
