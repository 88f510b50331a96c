"""Prometheus, through a Pushgateway (`--export prometheus=http://pushgateway:9091`; extra `prometheus`).

One gauge family per kind of figure: labeller_metric, labeller_gate_passed, labeller_judge_drift,
labeller_outcome_rate, labeller_count, each series labelled `name` (ndcg@10, ...), judge, rubric_version,
suite_digest and the figure's own labels (run, check, reference). A job pushes with PUT to the group
job=<experiment>, pipeline, retriever: the group always holds exactly that job's latest figures, and
the jobs of other pipelines and retrievers stay beside it. Prometheus scraping the gateway (with
honor_labels: true) keeps the history that docs/grafana/labeller.json draws.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, push_to_gateway
from prometheus_client.exposition import basic_auth_handler, default_handler

from labeller.exporters.base import DESCRIPTIONS, ExportBatch, ExportSettings, Target

FAMILIES = {"metric": "labeller_metric", "gate": "labeller_gate_passed", "drift": "labeller_judge_drift",
            "outcome": "labeller_outcome_rate", "count": "labeller_count"}
GROUPING = ("pipeline", "retriever")  # with job=<experiment>: one group per job and system


class PushgatewayExporter:
    def __init__(self, target: Target, settings: ExportSettings) -> None:
        self.target, self.settings = target, settings

    def export(self, batch: ExportBatch) -> str:
        registry = CollectorRegistry()
        shared = {k: v for k, v in batch.labels.as_dict().items() if k not in GROUPING}
        for kind, metric in FAMILIES.items():
            figures = batch.of_kind(kind)  # type: ignore[arg-type]
            if not figures:
                continue
            own = sorted({key for f in figures for key in f.labels})
            gauge = Gauge(metric, DESCRIPTIONS[kind], ["name", *shared, *own], registry=registry)
            for f in figures:
                gauge.labels(name=f.name, **shared, **{k: f.labels.get(k, "") for k in own}).set(f.value)
        group = {k: getattr(batch.labels, k) for k in GROUPING}
        push_to_gateway(self.target.url, job=self.settings.experiment, registry=registry, grouping_key=group,
                        timeout=self.settings.timeout, handler=self._handler)
        return f"job {self.settings.experiment}, " + ", ".join(f"{k}={v or '(none)'}" for k, v in group.items())

    def _handler(self, url, method, timeout, headers, data):
        if self.target.username is None:
            return default_handler(url, method, timeout, headers, data)
        password = self.target.password.get_secret_value() if self.target.password else ""
        return basic_auth_handler(url, method, timeout, headers, data, self.target.username.get_secret_value(),
                                  password)
