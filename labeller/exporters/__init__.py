"""Results out, to where teams watch: every job's figures pushed to MLflow, a Prometheus Pushgateway or
an OpenTelemetry (OTLP/HTTP) endpoint, after the job's local outputs are written.

    --export mlflow=http://127.0.0.1:5000 --export prometheus=http://127.0.0.1:9091

The data flow: a job's result -> batches.py (its `--json` as an ExportBatch of labelled figures) ->
push.py (each target's exporter, registry.py) -> the backend (mlflow.py, prometheus.py, otlp.py). A
backend that is down is one error line and exit 4 (labeller.errors.ExportError), never lost results.
See docs/exporters.md.
"""

from __future__ import annotations

from collections.abc import Callable

from labeller.errors import ExportError
from labeller.exporters.base import ExportBatch, ExportSettings, Figure, RunLabels, Target
from labeller.exporters.push import Prepared, failure_message, prepare, push
from labeller.exporters.registry import BACKENDS, parse_target


def export_settings(specs: list[str] | None, experiment: str | None = None, timeout: float | None = None,
                    where: str = "--export") -> ExportSettings | None:
    """The settings for `--export` specs (None when there are none). Bad specs are ConfigError (exit 2)."""
    if not specs:
        return None
    options = {k: v for k, v in (("experiment", experiment), ("timeout", timeout)) if v is not None}
    targets = {}
    for spec in specs:  # the same target from [export] and --export is pushed to once
        target = parse_target(spec, where)
        targets.setdefault((target.backend, target.url), target)
    return ExportSettings(targets=list(targets.values()), **options)


def finish(prepared: list[Prepared], make_batch: Callable[[], ExportBatch], echo: Callable[[str], None], *,
           job_failed: bool = False) -> None:
    """The last step of a job, after its local outputs: push its batch to every target. A backend that failed
    is ExportError (exit 4); when the job itself failed (a gate: exit 1), the failure is only shown through
    `echo` and the caller's own error keeps its exit code."""
    failures = push(make_batch(), prepared, echo) if prepared else []
    if failures and not job_failed:
        raise ExportError(failure_message(failures))
    if failures:
        echo(f"labeller: error: {failure_message(failures)}")


__all__ = ["BACKENDS", "ExportBatch", "ExportSettings", "Figure", "Prepared", "RunLabels", "Target",
           "export_settings", "finish", "parse_target", "prepare", "push"]
