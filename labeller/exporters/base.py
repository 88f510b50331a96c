"""What an exporter receives (one job's figures with the run's labels) and the one method it has.

A job (evaluate, agree, a pipeline, the outcomes analysis, ...) turns its `--json` result into an
ExportBatch (labeller.exporters.batches); every backend (MLflow, a Prometheus Pushgateway, OTLP) is one
file beside this one with one class: `Backend(target, settings)` checks what it can without the
network, and `export(batch)` pushes and returns where the figures went (one line for the terminal).

Each figure keeps `source`, the JSON pointer (RFC 6901) of its value in the job's `--json`, so every
number pushed can be traced to, and checked against, the result labeller printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

from pydantic import Field, SecretStr

from labeller.records import Record

# metric: a retrieval or agreement figure; gate: a verdict, 1 passed / 0 failed; drift: the judge-drift
# check; outcome: a downstream outcome rate; count: how much work a job did (pairs, requests).
Kind = Literal["metric", "gate", "drift", "outcome", "count"]
KINDS: tuple[Kind, ...] = ("metric", "gate", "drift", "outcome", "count")
DESCRIPTIONS: dict[Kind, str] = {  # each backend's help text for the series of one kind
    "metric": "A retrieval or agreement figure of the job (name: ndcg@10, kappa, ...).",
    "gate": "A gate's verdict: 1 passed, 0 failed.",
    "drift": "The judge-drift check: old vs new verdicts on the fixed sample.",
    "outcome": "A downstream outcome rate.",
    "count": "How much the job did (pairs compared, judge requests).",
}
LABEL_NAMES = ("pipeline", "retriever", "judge", "rubric_version", "suite_digest")


class RunLabels(Record):
    """What the figures are of: the same five labels on every figure a job pushes ("" when unknown)."""

    pipeline: str  # the job: evaluate, agree, regression, validate_prompt, label_slice, ...
    retriever: str = ""  # the system under test (the run's name, or the configured retriever)
    judge: str = ""  # provider:model whose labels the figures are computed on
    rubric_version: str = ""
    suite_digest: str = ""  # sha256 of the files that define what is measured (labels/gold, queries, corpus)

    def as_dict(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in LABEL_NAMES}


class Figure(Record):
    kind: Kind
    name: str  # ndcg@10, kappa_quadratic, regression, ...
    value: float
    labels: dict[str, str] = Field(default_factory=dict)  # this figure's own: run, check, ...
    source: str  # JSON pointer of the value in the job's --json, e.g. /runs/bm25/metrics/ndcg@10


class ExportBatch(Record):
    """One job's results, as every backend receives them."""

    labels: RunLabels
    figures: list[Figure]
    reports: list[Path] = Field(default_factory=list)  # HTML reports and summaries (MLflow keeps them as artifacts)
    result_json: str = ""  # the job's --json text (kept beside the reports as result.json)

    def of_kind(self, kind: Kind) -> list[Figure]:
        return [f for f in self.figures if f.kind == kind]

    @property
    def metrics(self) -> list[Figure]:
        return self.of_kind("metric")

    @property
    def gates(self) -> list[Figure]:
        return self.of_kind("gate")

    @property
    def drift(self) -> list[Figure]:
        return self.of_kind("drift")

    @property
    def outcomes(self) -> list[Figure]:
        return self.of_kind("outcome")


class Target(Record):
    """One `--export BACKEND=URL`: the URL without its credentials, which are kept apart and never shown."""

    backend: str
    url: str
    username: SecretStr | None = None
    password: SecretStr | None = None

    @property
    def spec(self) -> str:
        """How the target may be shown: never with its credentials."""
        from labeller.redaction import redact_url

        return f"{self.backend}={redact_url(self.url)}"


class ExportSettings(Record):
    targets: list[Target] = Field(default_factory=list)
    experiment: str = "labeller"  # MLflow experiment, Pushgateway job, OTel service.name
    timeout: float = Field(10.0, gt=0, le=600)  # seconds a backend may take before it counts as down


class Exporter(Protocol):
    def __init__(self, target: Target, settings: ExportSettings) -> None: ...

    def export(self, batch: ExportBatch) -> str:
        """Push the batch; return where it went (no credential). Raise on any failure."""
        ...
