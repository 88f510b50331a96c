"""export: a result from a notebook to MLflow, a Pushgateway or OTLP, as `--export` does on the command line."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


def export(result: Any, to: str | list[str], *, experiment: str | None = None, timeout: float | None = None,
           reports: Iterable[str | Path] = (), config: str | Path | None = None) -> list[str]:
    """Push an `evaluate`/`compare` result, an `agree` result or a pipeline's result (its `config` says
    the judge and rubric; default: the config file the result names) to each `to` ("mlflow=URL",
    "prometheus=URL", "otlp=URL"). Returns where the figures went; a backend that failed raises
    ExportError naming each one (the others were still pushed)."""
    from labeller.agreement.run import AgreeResult
    from labeller.errors import ExportError
    from labeller.evaluation.results import Evaluation
    from labeller.exporters import export_settings, failure_message, prepare, push
    from labeller.exporters import batches
    from labeller.pipelines.result import PipelineResult

    prepared = prepare(export_settings([to] if isinstance(to, str) else list(to), experiment, timeout, where="to"))
    if isinstance(result, Evaluation):
        batch = batches.evaluation_batch(result)
    elif isinstance(result, AgreeResult):
        batch = batches.agreement_batch(result)
    elif isinstance(result, PipelineResult):
        from labeller.pipelines import load_config

        batch = batches.pipeline_batch(result, load_config(config or result.config))
    else:
        raise TypeError(f"export takes an evaluate, compare, agree or pipeline result, not {type(result).__name__}")
    batch = batch.model_copy(update={"reports": [*batch.reports, *map(Path, reports)]})
    said: list[str] = []
    failures = push(batch, prepared, said.append)
    if failures:
        raise ExportError(failure_message(failures))
    return said
