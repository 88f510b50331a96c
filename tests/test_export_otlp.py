"""--export otlp=URL: the OpenTelemetry SDK's real OTLP/HTTP exporter, to a loopback receiver that decodes
each request with the opentelemetry-proto messages (tests/exporter_servers.py)."""

from __future__ import annotations

import base64
import json

from evaluation_helpers import cli
from export_helpers import PIPELINES, SECRET, agree_inputs, evaluate_inputs, expected_agree, expected_evaluate, run_json
from exporter_servers import free_port, otlp_receiver  # noqa: F401 -- fixture

INSTRUMENT = {"metric": "labeller.metric", "gate": "labeller.gate.passed", "drift": "labeller.judge_drift",
              "outcome": "labeller.outcome.rate", "count": "labeller.count"}
LABELS = ("pipeline", "retriever", "judge", "rubric_version", "suite_digest")


def assert_points_match(points, expected, run_labels: dict[str, str]) -> None:
    index = {}
    for scope, metric, value, attributes, resource in points:
        own = tuple(sorted((k, v) for k, v in attributes.items() if k not in (*LABELS, "name")))
        index[(metric, attributes["name"], own)] = (value, attributes, resource, scope)
    assert len(index) == len(points) == len(expected)
    for kind, name, own, value in expected:
        got, attributes, resource, scope = index[(INSTRUMENT[kind], name, tuple(sorted(own.items())))]
        assert got == value and scope == "labeller"
        assert {k: attributes[k] for k in run_labels} == run_labels


def test_evaluate_sends_every_figure_once_with_its_labels(tmp_path, capsys, otlp_receiver):  # noqa: F811
    base = otlp_receiver.url.removesuffix("/v1/metrics")
    code, data, err = run_json(capsys, *evaluate_inputs(tmp_path), "--export", f"otlp={base}",
                               "--export-experiment", "search-quality")
    assert code == 1, err  # the floor fails; the figures went out first
    assert len(otlp_receiver.requests) == 1
    points = otlp_receiver.points()
    assert {p[4]["service.name"] for p in points} == {"search-quality"}
    assert_points_match(points, expected_evaluate(data), {"pipeline": "evaluate", "retriever": "bm25", "judge": ""})
    assert otlp_receiver.headers[0]["content-type"] == "application/x-protobuf"


def test_agree_and_basic_auth_from_the_url(tmp_path, capsys, otlp_receiver):  # noqa: F811
    host = otlp_receiver.url.removeprefix("http://")
    code, data, err = run_json(capsys, *agree_inputs(tmp_path), "--export", f"otlp=http://ci:{SECRET}@{host}")
    assert code == 1, err  # the prompt-change gate fails (the old labels were closer to gold)
    assert_points_match(otlp_receiver.points(), expected_agree(data), {"pipeline": "agree", "judge": "offline:test"})
    sent = otlp_receiver.headers[0]["authorization"]
    assert base64.b64decode(sent.removeprefix("Basic ")).decode() == f"ci:{SECRET}"
    assert SECRET not in err


def test_headers_from_the_sdks_environment_variable_are_sent_and_never_shown(tmp_path, capsys, otlp_receiver,  # noqa: F811
                                                                              monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"x-team-token={SECRET}")
    config = tmp_path / "regression.toml"
    text = (PIPELINES / "regression.toml").read_text().replace('"sample/', f'"{PIPELINES}/sample/')
    config.write_text(text + f'\n[export]\nto = ["otlp={otlp_receiver.url}"]\n')
    code, data, err = run_json(capsys, "run", config, "--out", tmp_path / "out")
    assert code == 0, err
    assert otlp_receiver.headers[0]["x-team-token"] == SECRET
    names = {(p[1], p[3]["name"]) for p in otlp_receiver.points()}
    assert ("labeller.metric", "ndcg@10") in names and ("labeller.gate.passed", "regression") in names
    assert {p[3]["pipeline"] for p in otlp_receiver.points()} == {"regression"}

    down = f"http://127.0.0.1:{free_port()}"
    code, out, err = cli("run", config, "--out", tmp_path / "out2", "--export", f"otlp={down}", capsys=capsys)
    assert code == 4 and SECRET not in out + err
    assert f"export to otlp={down} failed: no answer from {down} (connection refused)" in err
    assert (tmp_path / "out2" / "latest.md").is_file()  # the pipeline's outputs are all there


def test_an_endpoint_that_refuses_the_request_is_exit_4_with_its_status(tmp_path, capsys, otlp_receiver):  # noqa: F811
    wrong = otlp_receiver.url.replace("/v1/metrics", "/not/metrics")
    code, out, err = cli(*evaluate_inputs(tmp_path)[:5], "--labels", tmp_path / "qrels.txt", "--json",
                         "--export", f"otlp={wrong}", capsys=capsys)
    assert code == 4 and json.loads(out)["runs"]
    (line,) = [x for x in err.splitlines() if x.startswith("labeller: error:")]
    assert f"export to otlp={wrong} failed:" in line and "404" in line
