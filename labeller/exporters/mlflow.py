"""MLflow (`--export mlflow=http://tracking-server:5000`; extra `mlflow`, the mlflow-skinny client).

One MLflow run per job, in the experiment `--export-experiment` names (default labeller, created when
missing). The run's five labels are its params and its `labeller.*` tags; every figure is a metric;
the job's HTML and Markdown reports go under the artifact folder `reports/`, its `--json` as
`result.json`. Metric keys (MLflow allows letters, digits and _ - . : / space):
`ndcg_at_10` (a metric of the run under test), `weak/ndcg_at_10` (of another run the job compared),
`difference/ndcg_at_10/vs baseline:weak` (the run against the reference), `gate/regression`,
`gate/weak/floor/ndcg_at_10`, `drift/kappa_quadratic`, `outcome/...`, `count/n`: kind (metrics have
none), the figure's run when it is not the retriever, name, check, "vs" the reference; `@` reads `_at_`.
Credentials: `http://user:pass@host` or MLflow's own MLFLOW_TRACKING_USERNAME/PASSWORD/TOKEN.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

# MLflow's client reports usage to mlflow-telemetry.io from the process that imports it: labeller's users
# did not ask for that. Off unless they set MLFLOW_DISABLE_TELEMETRY themselves (before MLflow reads it).
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

from mlflow.entities import Metric, Param  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

from labeller.exporters.base import ExportBatch, ExportSettings, Figure, Target

_INVALID = re.compile(r"[^\w.\- :/]")
_BATCH = 1000  # MLflow's log-batch limit on metrics per request


def metric_key(figure: Figure, retriever: str) -> str:
    run = figure.labels.get("run", "")
    parts = [figure.kind if figure.kind != "metric" else "", run if run != retriever else "", figure.name,
             figure.labels.get("check", ""), "vs " + figure.labels["reference"] if "reference" in figure.labels else ""]
    return "/".join(_INVALID.sub("_", p.replace("@", "_at_")) for p in parts if p)[:250]


class MlflowExporter:
    def __init__(self, target: Target, settings: ExportSettings) -> None:
        self.target, self.settings = target, settings

    def export(self, batch: ExportBatch) -> str:
        with self._environment():
            client = MlflowClient(tracking_uri=self.target.url)
            experiment = self._experiment(client)
            labels = {k: v for k, v in batch.labels.as_dict().items() if v}
            name = f"{batch.labels.pipeline} {batch.labels.retriever}".strip()
            run = client.create_run(experiment, run_name=name, tags={f"labeller.{k}": v for k, v in labels.items()})
            run_id = run.info.run_id
            try:
                self._log(client, run_id, batch, labels)
            except BaseException:
                try:  # mark the half-logged run; the original error is the one reported
                    client.set_terminated(run_id, status="FAILED")
                except Exception:  # noqa: BLE001
                    pass
                raise
            client.set_terminated(run_id)
        page = f"{self.target.url}/#/experiments/{experiment}/runs/{run_id}"
        return f"experiment {self.settings.experiment}, run {run_id} ({page})"

    def _log(self, client: MlflowClient, run_id: str, batch: ExportBatch, labels: dict[str, str]) -> None:
        now = int(time.time() * 1000)
        metrics = [Metric(metric_key(f, batch.labels.retriever), f.value, now, 0) for f in batch.figures]
        if len({m.key for m in metrics}) != len(metrics):
            raise ValueError("two figures would share one MLflow metric key; this is a bug in labeller")
        client.log_batch(run_id, params=[Param(k, v) for k, v in labels.items()])
        for start in range(0, len(metrics), _BATCH):
            client.log_batch(run_id, metrics=metrics[start:start + _BATCH])
        for path in batch.reports:
            client.log_artifact(run_id, str(path), "reports")
        if batch.result_json:
            client.log_text(run_id, batch.result_json, "result.json")

    def _experiment(self, client: MlflowClient) -> str:
        found = client.get_experiment_by_name(self.settings.experiment)
        if found is not None:
            return found.experiment_id
        try:
            return client.create_experiment(self.settings.experiment)
        except Exception:  # noqa: BLE001 -- another job created it meanwhile
            found = client.get_experiment_by_name(self.settings.experiment)
            if found is None:
                raise
            return found.experiment_id

    @contextmanager
    def _environment(self) -> Iterator[None]:
        """MLflow reads its client settings from the environment: set them for this export only. Its own
        retries would wait minutes for a server that is down; a user's own values win."""
        wanted = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                  "MLFLOW_HTTP_REQUEST_TIMEOUT": str(max(1, round(self.settings.timeout)))}
        wanted = {k: v for k, v in wanted.items() if k not in os.environ}
        wanted["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"  # stdout is the job's --json
        if self.target.username is not None:
            wanted["MLFLOW_TRACKING_USERNAME"] = self.target.username.get_secret_value()
            wanted["MLFLOW_TRACKING_PASSWORD"] = self.target.password.get_secret_value() if self.target.password else ""
        saved = {k: os.environ.get(k) for k in wanted}
        os.environ.update(wanted)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
