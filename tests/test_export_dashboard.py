"""docs/grafana/labeller.json against real data: jobs push to a real Pushgateway, a real Prometheus scrapes
it as docs/exporters.md says, and every query of the dashboard (panels and variables) must answer with
the figures the jobs printed."""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import urllib.request
from pathlib import Path

from export_helpers import PIPELINES, agree_inputs, evaluate_inputs, run_json
from exporter_servers import prometheus_scraping, pushgateway  # noqa: F401 -- fixture
from labeller.exporters import ExportBatch, Figure, RunLabels, export_settings, prepare, push

DASHBOARD = Path(__file__).resolve().parents[1] / "docs" / "grafana" / "labeller.json"
ALL = {"$experiment": ".*", "$pipeline": ".*", "$retriever": ".*", "$metric": ".*"}


def query(prometheus: str, expr: str) -> list[dict]:
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as reply:
        answer = json.loads(reply.read())
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def label_values(prometheus: str, definition: str) -> set[str]:
    """Grafana's label_values(SELECTOR, LABEL), through Prometheus' series API."""
    selector, label = re.fullmatch(r"label_values\((.*), (\w+)\)", definition).groups()
    url = f"{prometheus}/api/v1/series?" + urllib.parse.urlencode({"match[]": selector})
    with urllib.request.urlopen(url, timeout=10) as reply:
        return {s.get(label, "") for s in json.loads(reply.read())["data"]}


def substitute(expr: str) -> str:
    for variable, value in ALL.items():
        expr = expr.replace(variable, value)
    return expr


def test_every_dashboard_query_answers_with_the_jobs_figures(tmp_path, capsys, pushgateway):  # noqa: F811
    target = ["--export", f"prometheus={pushgateway}"]
    _, evaluated, _ = run_json(capsys, *evaluate_inputs(tmp_path), *target)  # a floor fails: a FAIL on the board
    run_json(capsys, *agree_inputs(tmp_path), *target)
    out = tmp_path / "regression"
    code, _, err = run_json(capsys, "run", PIPELINES / "regression.toml", "--out", out, *target)
    assert code == 0, err
    code, regression, err = run_json(capsys, "run", PIPELINES / "regression.toml", "--out", out,
                                     "--set", "judge.rubric=general", *target)  # another rubric: the drift check runs
    assert regression["judge_drift"]["status"] == "checked", err
    # the downstream outcomes job's rates, through the same interface
    outcome = ExportBatch(labels=RunLabels(pipeline="outcomes", retriever="bm25"),
                          figures=[Figure(kind="outcome", name="task_success", value=0.82, source="/rate")])
    assert push(outcome, prepare(export_settings([f"prometheus={pushgateway}"])), lambda _: None) == []

    dashboard = json.loads(DASHBOARD.read_text())
    with prometheus_scraping(pushgateway, tmp_path) as prometheus:
        deadline = time.monotonic() + 60
        while not query(prometheus, 'labeller_outcome_rate') and time.monotonic() < deadline:
            time.sleep(0.5)
        for variable in dashboard["templating"]["list"]:
            if variable["type"] == "query":
                assert label_values(prometheus, substitute(variable["definition"])) - {""}, variable["name"]
        answers = {}
        for panel in dashboard["panels"]:
            for t in panel["targets"]:
                answers[panel["title"]] = query(prometheus, substitute(t["expr"]))
                assert answers[panel["title"]], f"panel {panel['title']!r} shows nothing: {t['expr']}"

    quality = {(s["metric"]["pipeline"], s["metric"].get("run", ""), s["metric"]["name"]): float(s["value"][1])
               for s in answers["Retrieval quality over time"]}
    assert quality["evaluate", "bm25", "ndcg@10"] == evaluated["runs"]["bm25"]["metrics"]["ndcg@10"]
    assert quality["regression", "", "ndcg@10"] == regression["figures"]["ndcg@10"]
    gates = {(s["metric"]["pipeline"], s["metric"].get("retriever", "")): s["value"][1]
             for s in answers["Gates (latest run)"]}
    assert gates["evaluate", "bm25"] == "0"  # the failed floor
    failed = {(s["metric"]["name"], s["metric"].get("run", "")) for s in answers["Failed checks over time"]}
    assert ("floor", "weak") in failed
    drift = {s["metric"]["name"]: float(s["value"][1]) for s in answers["Judge drift"]}
    assert drift["kappa_quadratic"] == regression["judge_drift"]["kappa_quadratic"]
    assert [float(s["value"][1]) for s in answers["Downstream outcome rates"]] == [0.82]
    assert not [s for s in answers["Retrieval quality over time"] if s["metric"]["name"] == "difference"]
    differences = {(s["metric"]["run"], s["metric"]["check"]): float(s["value"][1])
                   for s in answers["Against the baseline (run - reference)"]}
    test = next(t for c in evaluated["comparisons"] if c["run"] == "bm25" for t in c["tests"] if t["metric"] == "ndcg@10")
    assert differences["bm25", "ndcg@10"] == test["difference"]
