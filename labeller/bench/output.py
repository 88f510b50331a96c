"""Where a judge-bench result goes: Markdown to stdout or --md, --json (a file or '-'), --html."""

from __future__ import annotations

from pathlib import Path

from labeller.bench.models import BenchResult
from labeller.bench.report import html as html_page
from labeller.bench.report import markdown
from labeller.io.tables import write_text


def write_outputs(result: BenchResult, *, md: Path | None, json_out: Path | None,
                  html: Path | None) -> tuple[str | None, list[Path]]:
    """Write the files asked for. Returns what stdout shows (the JSON with `--json -`, else the Markdown
    table unless --md took it; None when both went to files) and the files written."""
    json_to_stdout = json_out is not None and str(json_out) == "-"
    written: list[Path] = []
    if json_out is not None and not json_to_stdout:
        written.append(write_text(json_out, result.model_dump_json(indent=2) + "\n"))
    if md is not None:
        written.append(write_text(md, markdown(result)))
    if html is not None:
        written.append(write_text(html, html_page(result)))
    if json_to_stdout:
        return result.model_dump_json(indent=2), written
    return (markdown(result).rstrip("\n") if md is None else None), written
