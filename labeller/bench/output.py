"""Where a judge-bench result goes: the Markdown table (or, with --json, the JSON) on stdout, and files
for --md, --html and --report DIR (judge-bench.md, judge-bench.json, judge-bench.html)."""

from __future__ import annotations

from pathlib import Path

from labeller.bench.models import BenchResult
from labeller.bench.report import html as html_page
from labeller.bench.report import markdown
from labeller.io.writing import write_text

REPORT_FILES = {"md": "judge-bench.md", "json": "judge-bench.json", "html": "judge-bench.html"}


def output_files(md: Path | None, html: Path | None, report: Path | None) -> dict[str, Path]:
    """flag -> file, for the early check (nothing is sent before every output can be written)."""
    files = {"--md": md, "--html": html}
    if report is not None:
        files.update({f"--report's {name}": report / name for name in REPORT_FILES.values()})
    return {flag: path for flag, path in files.items() if path is not None}


def write_outputs(result: BenchResult, *, as_json: bool, md: Path | None, html: Path | None,
                  report: Path | None) -> tuple[str, list[Path]]:
    """Write the files asked for; returns what stdout shows and the files written."""
    text, page, data = markdown(result), html_page(result), result.model_dump_json(indent=2) + "\n"
    written = [write_text(path, text) for path in (md,) if path is not None]
    written += [write_text(path, page) for path in (html,) if path is not None]
    if report is not None:
        for kind, body in (("md", text), ("json", data), ("html", page)):
            written.append(write_text(report / REPORT_FILES[kind], body))
    return (data if as_json else text).rstrip("\n"), written
