"""`labeller traces`: a production traces export (OTLP JSON, Phoenix spans) as a run, queries and pairs files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import app


@app.command("traces")
def traces(
    export: Annotated[Path, typer.Argument(help="OTLP JSON (OpenInference or GenAI retriever spans), the OpenTelemetry "
                                                "SDK's ConsoleSpanExporter output, or a Phoenix spans export.")],
    run: Annotated[Path, typer.Option(help="Write the run here (query_id = trace id; .jsonl, .csv or .parquet).")],
    queries: Annotated[Optional[Path], typer.Option(help="Write the queries (trace id, retriever input) here.")] = None,
    pairs: Annotated[Optional[Path], typer.Option(help="Write the (trace id, doc id) pairs to label here.")] = None,
    trace_format: Annotated[str, typer.Option("--format", help="auto, otlp, console or phoenix.")] = "auto",
    depth: Annotated[Optional[int], typer.Option(min=1, help="Keep the top DEPTH documents of each trace.")] = None,
) -> None:
    """Read retrieval traces as a run: then `labeller label` the pairs and `labeller evaluate` or `outcomes` it."""
    from labeller.io.outputs import check_outputs
    from labeller.traces.files import write_trace_files

    check_outputs(inputs=[export], files={"--run": run, "--queries": queries, "--pairs": pairs})
    done = write_trace_files(export, run=run, queries=queries, pairs=pairs, format=trace_format, depth=depth)
    print(f"{done.traces} traces, {done.documents} retrieved documents: wrote {', '.join(done.written)}")
    if done.without_query and queries is not None:
        print(f"labeller: warning: {len(done.without_query)} traces have no retriever input text and are not in "
              f"{queries} (first: {done.without_query[0]})", file=sys.stderr)
