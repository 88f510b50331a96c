"""The export step every job ends with: after its local outputs are written, push its batch to each target.

`prepare` runs before the job (bad specs and missing extras are exit 2 before anything is paid);
`push` runs last and never raises for a backend that is down: it returns one line per failure, so the
caller reports them after everything local is safe (labeller.errors.ExportError, exit 4).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from labeller.errors import redact
from labeller.exporters.base import Exporter, ExportBatch, ExportSettings, Target
from labeller.exporters.registry import make_exporter
from labeller.redaction import url_secrets

# Environment variables whose values authenticate to a backend: never shown in an error line.
_SECRET_ENV = ("_API_KEY", "_TOKEN", "_PASSWORD", "_HEADERS", "_SECRET")


@dataclass
class Prepared:
    target: Target
    exporter: Exporter


def prepare(settings: ExportSettings | None) -> list[Prepared]:
    """An exporter per target, each client library imported now. Connects to nothing."""
    if settings is None:
        return []
    return [Prepared(t, make_exporter(t, settings)) for t in settings.targets]


def push(batch: ExportBatch, prepared: list[Prepared], echo: Callable[[str], None]) -> list[str]:
    """Push to every target; `echo` gets one line per success. Returns one line per failure."""
    failures = []
    for item in prepared:
        try:
            with _quiet_client_logs():
                where = item.exporter.export(batch)
        except Exception as exc:  # noqa: BLE001 -- any failure of a backend is reported, never lost in a traceback
            failures.append(f"export to {item.target.spec} failed: {_reason(exc, item.target)}")
        else:
            echo(f"exported {len(batch.figures)} figures to {item.target.spec}: {redact(where, _secrets(item.target))}")
    return failures


def failure_message(failures: list[str]) -> str:
    return "; ".join(failures) + " (every local result was written first)"


def _reason(exc: BaseException, target: Target) -> str:
    """One line: what went wrong, without a credential, with the root cause when it says more."""
    root, seen = exc, {id(exc)}
    while (nxt := root.__cause__ or root.__context__) is not None and id(nxt) not in seen:
        root = nxt
        seen.add(id(nxt))
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(root, ConnectionRefusedError) or "Connection refused" in str(exc):
        text = f"no answer from {target.url} (connection refused): is the server running?"
    elif isinstance(root, TimeoutError) or "timed out" in str(exc).lower():
        text = f"no answer from {target.url} in time ({type(root).__name__})"
    return redact(text[:400], _secrets(target))


def _secrets(target: Target) -> list[str | None]:
    values: list[str | None] = [s.get_secret_value() for s in (target.username, target.password) if s is not None]
    values += url_secrets(target.url)
    for name, value in os.environ.items():
        if name.upper().endswith(_SECRET_ENV):
            values.append(value)
            values += [part.partition("=")[2] for part in value.split(",") if "=" in part]  # k=v,k=v headers
    return values


@contextmanager
def _quiet_client_logs() -> Iterator[None]:
    """The client libraries log their retries and failures (with URLs) to stderr; labeller says it once."""
    loggers = [logging.getLogger(n) for n in ("opentelemetry", "mlflow", "urllib3", "prometheus_client")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
