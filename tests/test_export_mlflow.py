"""--export mlflow=URL against a real `mlflow server` (sqlite store, local artifacts) the test module starts.

Each job is one MLflow run in the experiment; every figure of its `--json` is a metric with the same value,
the five labels are params and tags, the reports and result.json are artifacts.
"""

from __future__ import annotations

import json
import re
import time

from evaluation_helpers import cli
from export_helpers import PIPELINES, SECRET, evaluate_inputs, expected_evaluate, expected_pipeline, run_json
from exporter_servers import free_port, mlflow_server  # noqa: F401 -- fixture


def key(kind: str, name: str, own: dict[str, str], retriever: str) -> str:
    """The metric key docs/exporters.md promises, written out independently of labeller.exporters.mlflow."""
    run = own.get("run", "")
    parts = [kind if kind != "metric" else "", run if run != retriever else "", name, own.get("check", ""),
             "vs " + own["reference"] if "reference" in own else ""]
    return "/".join(re.sub(r"[^\w.\- :/]", "_", p.replace("@", "_at_")) for p in parts if p)


def runs_of(url: str, experiment: str):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=url)
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment}"
    return client, client.search_runs([found.experiment_id], order_by=["attributes.start_time ASC"])


def assert_run_holds(run, expected, retriever: str) -> None:
    want = {key(kind, name, own, retriever): value for kind, name, own, value in expected}
    assert len(want) == len(expected), "the key rule maps two figures to one key"
    assert run.data.metrics == want  # every figure, with exactly its --json value, and nothing else


def test_each_evaluate_is_a_run_with_its_figures_labels_and_reports(tmp_path, capsys, mlflow_server,  # noqa: F811
                                                                    monkeypatch):
    args = evaluate_inputs(tmp_path)
    code, data, err = run_json(capsys, *args, "--export", f"mlflow={mlflow_server}", "--export-experiment", "retrieval")
    assert code == 1, err  # the weak run's floor fails; the export happened all the same
    assert re.search(r"exported \d+ figures to mlflow=http://127\.0\.0\.1:\d+: experiment retrieval, run \w+", err)
    code, again, _ = run_json(capsys, *args[:5], "--labels", tmp_path / "qrels.txt",
                              "--export", f"mlflow={mlflow_server}", "--export-experiment", "retrieval")
    assert code == 0
    client, runs = runs_of(mlflow_server, "retrieval")
    assert len(runs) == 2  # one MLflow run per job
    first, second = runs
    assert first.info.status == "FINISHED" and first.info.run_name == "evaluate bm25"
    assert_run_holds(first, expected_evaluate(data), "bm25")
    assert first.data.metrics["ndcg_at_10"] == data["runs"]["bm25"]["metrics"]["ndcg@10"]
    assert first.data.metrics["gate/weak/floor/ndcg_at_10"] == 0.0
    digest = first.data.params["suite_digest"]
    assert first.data.params == {"pipeline": "evaluate", "retriever": "bm25", "suite_digest": digest}
    assert {k: v for k, v in first.data.tags.items() if k.startswith("labeller.")} == {
        "labeller.pipeline": "evaluate", "labeller.retriever": "bm25", "labeller.suite_digest": digest}
    assert {a.path for a in client.list_artifacts(first.info.run_id, "reports")} == {"reports/index.html",
                                                                                      "reports/summary.md"}
    local = client.download_artifacts(first.info.run_id, "result.json", str(tmp_path / "down"))
    assert json.loads(open(local).read()) == data
    page = client.download_artifacts(first.info.run_id, "reports/index.html", str(tmp_path / "down"))
    assert open(page).read() == (tmp_path / "report" / "index.html").read_text()
    assert second.data.metrics["ndcg_at_10"] == again["runs"]["bm25"]["metrics"]["ndcg@10"]
    assert not [k for k in second.data.metrics if k.startswith("gate/")]

    # docs/exporters.md's comparison view from Python: one row per job, oldest first
    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    table = mlflow.search_runs(experiment_names=["retrieval"], filter_string="params.pipeline = 'evaluate'",
                               order_by=["attributes.start_time ASC"])
    assert list(table["metrics.ndcg_at_10"]) == [data["runs"]["bm25"]["metrics"]["ndcg@10"],
                                                 again["runs"]["bm25"]["metrics"]["ndcg@10"]]
    assert list(table["params.retriever"]) == ["bm25", "bm25"]


def test_a_regression_pipeline_is_a_run_with_its_judge_and_rubric(tmp_path, capsys, mlflow_server):  # noqa: F811
    code, data, err = run_json(capsys, "run", PIPELINES / "regression.toml", "--out", tmp_path / "out",
                               "--export", f"mlflow={mlflow_server}", "--export-experiment", "nightly")
    assert code == 0, err
    from labeller.rubric import load_rubric

    client, (run,) = runs_of(mlflow_server, "nightly")
    assert_run_holds(run, expected_pipeline(data), "bm25")
    assert run.data.params["judge"] == "offline:lexical"
    assert run.data.params["rubric_version"] == load_rubric("transactions").version
    assert run.data.params["pipeline"] == "regression" and run.data.params["retriever"] == "bm25"
    names = {a.path.removeprefix("reports/") for a in client.list_artifacts(run.info.run_id, "reports")}
    assert names == {"index.html", "trend.html", "summary.md"}


def test_a_tracking_server_that_is_down_is_exit_4_after_the_local_outputs(tmp_path, capsys):
    down = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    code, out, err = cli(*evaluate_inputs(tmp_path)[:5], "--labels", tmp_path / "qrels.txt", "--json",
                         "--report", tmp_path / "report", "--export", f"mlflow=http://ci:{SECRET}@{down[7:]}",
                         capsys=capsys)
    assert code == 4
    assert json.loads(out)["runs"] and (tmp_path / "report" / "index.html").is_file()
    errors = [line for line in err.splitlines() if line.startswith("labeller: error:")]
    assert len(errors) == 1 and f"export to mlflow={down} failed:" in errors[0], err
    assert SECRET not in out + err
    assert time.monotonic() - started < 60  # MLflow's own retries would wait minutes


def test_credentials_in_the_url_never_reach_the_output_or_the_run(tmp_path, capsys, mlflow_server):  # noqa: F811
    host = mlflow_server.removeprefix("http://")
    code, out, err = cli(*evaluate_inputs(tmp_path)[:5], "--labels", tmp_path / "qrels.txt", "--json",
                         "--export", f"mlflow=http://ci:{SECRET}@{host}", "--export-experiment", "auth", capsys=capsys)
    assert code == 0, err
    assert SECRET not in out + err and "🏃" not in out  # MLflow's own "View run" line stays out of --json
    json.loads(out)
    _, runs = runs_of(mlflow_server, "auth")
    assert len(runs) == 1 and SECRET not in json.dumps(runs[0].to_dictionary())


WATCH = """
import socket, sys
real = socket.getaddrinfo
def getaddrinfo(host, *args, **kwargs):
    if host not in ("127.0.0.1", "localhost", "::1", None):
        print(f"OUTSIDE {host}", file=sys.stderr)
        raise OSError(f"blocked {host}")
    return real(host, *args, **kwargs)
socket.getaddrinfo = getaddrinfo
from labeller.cli import main
main()
"""


def test_exporting_to_mlflow_reaches_nothing_but_the_tracking_server(tmp_path, mlflow_server):  # noqa: F811
    """MLflow's client reports usage to mlflow-telemetry.io unless told not to (it stays quiet under pytest
    or CI, so the job runs in a process without those variables, as a user's would)."""
    import os
    import subprocess
    import sys

    quiet = {"PYTEST_CURRENT_TEST", "CI", "GITHUB_ACTIONS", "MLFLOW_DISABLE_TELEMETRY", "DO_NOT_TRACK"}
    env = {k: v for k, v in os.environ.items() if k not in quiet}
    args = [str(a) for a in evaluate_inputs(tmp_path)[:5]] + ["--labels", str(tmp_path / "qrels.txt"),
                                                              "--export", f"mlflow={mlflow_server}"]
    done = subprocess.run([sys.executable, "-c", WATCH, *args], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    assert "exported" in done.stderr and "OUTSIDE" not in done.stderr, done.stderr
