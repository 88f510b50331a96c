"""OpenTelemetry metrics over OTLP/HTTP (`--export otlp=http://collector:4318`; extra `otlp`).

The SDK's own OTLP/HTTP protobuf exporter sends one request per job: a gauge per kind of figure
(labeller.metric, labeller.gate.passed, labeller.judge_drift, labeller.outcome.rate, labeller.count),
each point with the attributes `name` (ndcg@10, ...), the five run labels and the figure's own (run,
check); the resource's service.name is `--export-experiment`. A URL without a path gets the standard
/v1/metrics. Auth: `http://user:pass@host` (basic) or the SDK's OTEL_EXPORTER_OTLP_HEADERS.
"""

from __future__ import annotations

import base64
import logging
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.resources import Resource

from labeller.exporters.base import DESCRIPTIONS, ExportBatch, ExportSettings, Target

INSTRUMENTS = {"metric": "labeller.metric", "gate": "labeller.gate.passed", "drift": "labeller.judge_drift",
               "outcome": "labeller.outcome.rate", "count": "labeller.count"}
_SDK_LOGGER = "opentelemetry.exporter.otlp"


class OtlpExporter:
    def __init__(self, target: Target, settings: ExportSettings) -> None:
        self.target, self.settings = target, settings
        self.endpoint = target.url if urlsplit(target.url).path not in ("", "/") else f"{target.url}/v1/metrics"

    def export(self, batch: ExportBatch) -> str:
        reader = InMemoryMetricReader()
        provider = MeterProvider(resource=Resource.create({"service.name": self.settings.experiment}),
                                 metric_readers=[reader])
        meter = provider.get_meter("labeller")
        shared = batch.labels.as_dict()
        for kind, name in INSTRUMENTS.items():
            figures = batch.of_kind(kind)  # type: ignore[arg-type]
            if figures:
                gauge = meter.create_gauge(name, description=DESCRIPTIONS[kind])
                for f in figures:
                    gauge.set(f.value, attributes={**shared, **f.labels, "name": f.name})
        data = reader.get_metrics_data()
        provider.shutdown()
        exporter = OTLPMetricExporter(endpoint=self.endpoint, headers=self._headers(), timeout=self.settings.timeout)
        with _captured(_SDK_LOGGER) as said:
            result = exporter.export(data, timeout_millis=self.settings.timeout * 1000)
        exporter.shutdown()
        if result != MetricExportResult.SUCCESS:
            # the last retry's cause (e.g. connection refused) and the final verdict
            raise ConnectionError(" / ".join(said[-2:]) or f"the OTLP endpoint {self.endpoint} did not take the metrics")
        return f"{self.endpoint}, service.name {self.settings.experiment}"

    def _headers(self) -> dict[str, str] | None:
        if self.target.username is None:
            return None  # the SDK's OTEL_EXPORTER_OTLP_(METRICS_)HEADERS still apply
        password = self.target.password.get_secret_value() if self.target.password else ""
        token = base64.b64encode(f"{self.target.username.get_secret_value()}:{password}".encode()).decode()
        return {"Authorization": f"Basic {token}"}


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class _captured:
    """The SDK says why an export failed only in its log: keep those lines (for the one error line) and
    keep them off stderr."""

    def __init__(self, name: str) -> None:
        self.logger, self.handler = logging.getLogger(name), _Collect()

    def __enter__(self) -> list[str]:
        self.saved = (self.logger.level, self.logger.propagate)
        self.logger.setLevel(logging.WARNING)
        self.logger.propagate = False
        self.logger.addHandler(self.handler)
        return self.handler.messages

    def __exit__(self, *exc) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.saved[0])
        self.logger.propagate = self.saved[1]
