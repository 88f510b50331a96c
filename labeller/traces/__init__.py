"""Production retrieval traces read as runs: each trace a query (its id the trace id), its retriever spans'
documents the ranking. One reader per format, registered in READERS."""

from __future__ import annotations

import re
from pathlib import Path

from labeller.errors import BadInputError
from labeller.traces.base import RetrievalTrace, TraceDocument, TraceRun
from labeller.traces.console import read_console
from labeller.traces.otlp import read_otlp
from labeller.traces.phoenix import read_phoenix

READERS = {"otlp": read_otlp, "console": read_console, "phoenix": read_phoenix}
_CONSOLE = re.compile(rb'"trace_id"\s*:\s*"0x')  # the SDK's span.to_json(): context ids as 0x-prefixed hex


def sniff(path: Path) -> str:
    """otlp for a JSON export whose first object has resourceSpans, console for the SDK's ConsoleSpanExporter
    output, phoenix for any other table."""
    if path.suffix.lower() in (".json", ".jsonl", ".ndjson", ".txt", ".log") and path.is_file():
        with path.open("rb") as handle:
            head = handle.read(4096)
        if b"resourceSpans" in head:
            return "otlp"
        if _CONSOLE.search(head):
            return "console"
    return "phoenix"


def read_traces(path: str | Path, format: str = "auto", name: str | None = None) -> TraceRun:
    if format != "auto" and format not in READERS:
        raise BadInputError(f"trace format '{format}' is unknown; expected auto, {', '.join(READERS)}",
                            field="trace_format")
    path = Path(path)
    return READERS[sniff(path) if format == "auto" else format](path, name)


__all__ = ["READERS", "RetrievalTrace", "TraceDocument", "TraceRun", "read_traces"]
