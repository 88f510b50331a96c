"""The library call behind `labeller acceptance run` and `compare`: check outputs, run, write reports."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from labeller.acceptance.report import html_page, json_text, markdown
from labeller.acceptance.result import AcceptanceResult
from labeller.acceptance.runner import RunOptions, run_acceptance
from labeller.errors import BadInputError
from labeller.io.outputs import check_outputs
from labeller.io.writing import write_text
from labeller.systems.registry import pydantic_error


@dataclass
class ReportPaths:
    json: Path | None = None
    md: Path | None = None
    html: Path | None = None


def write_reports(results: list[AcceptanceResult], paths: ReportPaths) -> None:
    for path, render in ((paths.json, json_text), (paths.md, markdown), (paths.html, html_page)):
        if path is not None:
            write_text(path, render(results))


def acceptance_run(options: RunOptions, paths: ReportPaths) -> list[AcceptanceResult]:
    inputs = [options.suite if not hasattr(options.suite, "cases") else None,
              *(c for c in options.candidates if isinstance(c, (str, Path)))]
    check_outputs(inputs=inputs, files={"--out": paths.json, "--md": paths.md, "--html": paths.html,
                                        "--triage": None})
    if options.triage is not None:
        check_outputs(inputs=[*inputs, paths.json, paths.md, paths.html], files={"--triage": options.triage})
    results = run_acceptance(options)
    write_reports(results, paths)
    return results


def read_results(path: str | Path) -> list[AcceptanceResult]:
    """The results of a `labeller acceptance run --out` file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInputError("results file not found", path=str(path)) from None
    except json.JSONDecodeError as exc:
        raise BadInputError(f"not valid JSON ({exc.msg})", path=str(path), line=exc.lineno) from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise BadInputError("expected the JSON written by `labeller acceptance run --out`", path=str(path))
    try:
        return [AcceptanceResult.model_validate(r) for r in data["results"]]
    except ValidationError as exc:
        raise pydantic_error(exc, path, prefix="results") from None


def compare_results(paths: list[Path], report: ReportPaths) -> list[AcceptanceResult]:
    """Candidates from separate runs side by side; refused when their comparison conditions differ."""
    if len(paths) < 2:
        raise BadInputError("compare needs at least two results files")
    check_outputs(inputs=paths, files={"--out": report.json, "--md": report.md, "--html": report.html})
    found = [(p, r) for p in paths for r in read_results(p)]
    results = [r for _, r in found]
    reference = results[0].conditions.model_dump()
    for path, result in found:
        theirs = result.conditions.model_dump()
        differ = [k for k in reference if reference[k] != theirs[k]]
        if differ:
            raise BadInputError(f"candidate '{result.candidate['name']}' was tested under other conditions "
                                f"({', '.join(differ)} differ from '{results[0].candidate['name']}'); a "
                                "side-by-side comparison needs identical conditions", path=str(path))
    names = [r.candidate["name"] for r in results]
    if len(set(names)) != len(names):
        raise BadInputError(f"candidate '{next(n for n in names if names.count(n) > 1)}' appears twice")
    write_reports(results, report)
    return results
