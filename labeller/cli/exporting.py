"""Options every job shares to push its results out (labeller.exporters): --export and --export-experiment."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

ExportOpt = Annotated[Optional[list[str]], typer.Option(
    "--export", metavar="BACKEND=URL",
    help="After the local results are written, push the figures (as --json has them) with the run's labels to "
         "mlflow=URL (tracking server), prometheus=URL (Pushgateway) or otlp=URL (OTLP/HTTP metrics endpoint) "
         "(repeatable). A backend that is down: one error line, exit 4. docs/exporters.md")]
ExperimentOpt = Annotated[Optional[str], typer.Option(
    "--export-experiment", metavar="NAME",
    help="Where exported figures are grouped: MLflow experiment, Pushgateway job, OTel service.name "
         "(default: labeller).")]


def stderr(line: str) -> None:
    print(line, file=sys.stderr)


def prepared_exports(specs: list[str] | None, experiment: str | None):
    """Check --export before the job runs (exit 2 for a bad spec or a missing extra); connects to nothing."""
    if not specs:
        return []
    from labeller.exporters import export_settings, prepare

    return prepare(export_settings(specs, experiment))
