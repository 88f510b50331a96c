"""`labeller run CONFIG` and `labeller demo`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import app
from labeller.cli.exporting import ExperimentOpt, ExportOpt, stderr

JudgeOpt = Annotated[Optional[str], typer.Option("--judge", help="Replace the config's judge, e.g. openai:gpt-4.1-mini.")]
BaseUrlOpt = Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible server for the judge.")]


@app.command("run")
def run_command(
    config: Annotated[Path, typer.Argument(help="A pipeline config (TOML), e.g. pipelines/regression.toml.")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Override a value: section.key=value.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Write outputs here instead of output.dir.")] = None,
    judge: JudgeOpt = None,
    base_url: BaseUrlOpt = None,
    promote: Annotated[bool, typer.Option("--promote", help="regression: make today's run the baseline if it passes.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    junit: Annotated[Optional[Path], typer.Option("--junit", help="Write JUnit XML here: one test case per gated "
                                                                  "check (metric gate, floor, every pair labelled).")] = None,
    summary: Annotated[Optional[Path], typer.Option("--summary", help="Append a Markdown summary here, e.g. "
                                                                      "\"$GITHUB_STEP_SUMMARY\".")] = None,
    export: ExportOpt = None,
    export_experiment: ExperimentOpt = None,
) -> int:
    """Run one pipeline: label_slice, validate_prompt or regression (exit 1 when its gate fails or a pair
    could not be labelled)."""
    from labeller.exporters import export_settings, finish, prepare
    from labeller.exporters.batches import pipeline_batch
    from labeller.pipelines import pipeline_config, run_pipeline
    from labeller.io.outputs import check_outputs
    from labeller.reports.ci import write_ci_outputs

    check_outputs(inputs=[config], files={"--junit": junit, "--summary": summary})
    cfg = pipeline_config(config, overrides=set_, out_dir=out, judge=judge, base_url=base_url)
    exports = prepare(export_settings([*cfg.export.to, *(export or [])], export_experiment or cfg.export.experiment,
                                      cfg.export.timeout))  # [export] and --export, checked before the run

    result = run_pipeline(config, overrides=set_, out_dir=out, judge=judge, base_url=base_url, promote=promote)
    _show([result], json_)
    body = "\n".join(f"- {line}" for line in result.summary)
    for path in write_ci_outputs(result.checks, title=f"labeller run {result.pipeline}", body=body, junit=junit,
                                 summary=summary):
        typer.echo(f"wrote {path}", err=True)
    finish(exports, lambda: pipeline_batch(result, cfg), stderr, job_failed=result.exit_code != 0)
    return result.exit_code


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Option("--out", help="Where the demo writes its outputs and reports.")] = Path("out/demo"),
    judge: Annotated[Optional[str], typer.Option(
        "--judge", help="A real judge instead of offline:lexical, e.g. openai:gpt-4.1-mini (needs its API key).")] = None,
    base_url: BaseUrlOpt = None,
) -> int:
    """Run all three pipelines on the bundled sample (offline judge by default) and print where the reports are."""
    from labeller.pipelines.demo import run_demo

    results, index = run_demo(out, judge=judge, base_url=base_url)
    _show(results, False)
    typer.echo(f"\nOpen {index} in a browser for all reports.")
    return max(r.exit_code for r in results)


def _show(results, as_json: bool) -> None:
    if as_json:
        typer.echo("[" + ",".join(r.model_dump_json() for r in results) + "]" if len(results) > 1
                   else results[0].model_dump_json(indent=2))
        return
    for r in results:
        typer.echo(f"\n== {r.pipeline} ({r.config}): {r.status.upper()}")
        for line in r.summary:
            typer.echo(f"  {line}")
        for title, path in r.reports.items():
            typer.echo(f"  report: {title}: {path}")
