"""--export prometheus=URL against Debian's real prometheus-pushgateway, started by the test module.

Every figure a job's `--json` has must be a series on the gateway with the run's labels and the same
value; a gateway that is down is one error line and exit 4 after every local output is written.
"""

from __future__ import annotations

import base64
import hashlib
import json
import urllib.request

import pytest

from prometheus_client.parser import text_string_to_metric_families

from evaluation_helpers import cli
from export_helpers import (PIPELINES, SECRET, agree_inputs, evaluate_inputs, expected_agree, expected_evaluate,
                            expected_pipeline, run_json)
from exporter_servers import free_port, pushgateway, pushgateway_server  # noqa: F401 -- fixture

FAMILY = {"metric": "labeller_metric", "gate": "labeller_gate_passed", "drift": "labeller_judge_drift",
          "outcome": "labeller_outcome_rate", "count": "labeller_count"}


def series(url: str, auth: str | None = None, **group: str) -> list[tuple[str, dict[str, str], float]]:
    """(family, labels, value) of every labeller series the gateway serves in the group with these labels."""
    request = urllib.request.Request(f"{url}/metrics", headers={"Authorization": auth} if auth else {})
    with urllib.request.urlopen(request, timeout=10) as reply:
        text = reply.read().decode()
    out = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("labeller_") and all(sample.labels.get(k) == v for k, v in group.items()):
                out.append((sample.name, sample.labels, sample.value))
    return out


def assert_every_figure_arrived(got, expected, run_labels: dict[str, str]) -> None:
    own_keys = {"run", "check", "reference"}
    index = {(name, labels["name"], tuple(sorted((k, v) for k, v in labels.items() if k in own_keys and v))): (labels, v)
             for name, labels, v in got}
    assert len(index) == len(got), "two series with the same figure"
    for kind, name, own, value in expected:
        key = (FAMILY[kind], name, tuple(sorted(own.items())))
        assert key in index, f"missing on the gateway: {key}"
        labels, pushed = index[key]
        assert pushed == value, (key, pushed, value)  # exactly the --json value, not a rounding of it
        assert {k: labels[k] for k in run_labels} == run_labels, (key, labels)
    assert len(got) == len(expected), "the gateway holds figures --json does not have"


def test_evaluate_pushes_every_figure_of_its_json_with_the_run_labels(tmp_path, capsys, pushgateway):  # noqa: F811
    code, data, err = run_json(capsys, *evaluate_inputs(tmp_path), "--export", f"prometheus={pushgateway}")
    assert code == 1  # the weak run is below its floor: the gate's exit code, and the export still happened
    assert f"exported {len(expected_evaluate(data))} figures to prometheus={pushgateway}" in err
    got = series(pushgateway, pipeline="evaluate", retriever="bm25")
    digest = got[0][1]["suite_digest"]
    assert digest.startswith("sha256:") and len(digest) == 23
    assert_every_figure_arrived(got, expected_evaluate(data), {"job": "labeller", "pipeline": "evaluate",
                                                               "retriever": "bm25", "judge": "", "suite_digest": digest})
    floors = {s[1]["run"]: s[2] for s in got if s[1]["name"] == "floor"}
    assert floors == {"bm25": 1.0, "weak": 0.0}  # the failing floor arrives as a failed gate


def test_a_regression_arrives_as_failed_gates(tmp_path, capsys, pushgateway):  # noqa: F811
    evaluate_inputs(tmp_path)
    code, data, err = run_json(capsys, "evaluate", "--run", tmp_path / "weak.trec", "--baseline", tmp_path / "bm25.trec",
                               "--labels", tmp_path / "qrels.txt", "--export", f"prometheus={pushgateway}",
                               "--export-experiment", "regressed")
    assert code == 1 and not data["gate"]["passed"], err
    got = series(pushgateway, job="regressed", retriever="weak")
    assert_every_figure_arrived(got, expected_evaluate(data), {"pipeline": "evaluate"})
    gates = {s[1]["check"]: s[2] for s in got if s[0] == "labeller_gate_passed"}
    assert gates[""] == 0.0 and gates["ndcg@10"] == 0.0  # the whole gate and the ndcg@10 check: FAIL


def test_a_failing_pipeline_arrives_with_its_failed_status_and_checks(tmp_path, capsys, pushgateway):  # noqa: F811
    code, data, err = run_json(capsys, "run", PIPELINES / "regression.toml", "--out", tmp_path / "out",
                               "--set", "retriever.name=random", "--export", f"prometheus={pushgateway}",
                               "--export-experiment", "broken")
    assert code == 1 and data["status"] == "failed", err
    got = series(pushgateway, job="broken", pipeline="regression", retriever="random")
    assert_every_figure_arrived(got, expected_pipeline(data), {"judge": "offline:lexical"})
    assert [s[2] for s in got if s[0] == "labeller_gate_passed" and s[1]["check"] == ""] == [0.0]


def test_a_second_push_replaces_the_groups_figures_and_other_groups_stay(tmp_path, capsys, pushgateway):  # noqa: F811
    args = evaluate_inputs(tmp_path)
    run_json(capsys, *args, "--export", f"prometheus={pushgateway}", "--export-experiment", "nightly")
    code, data, _ = run_json(capsys, *args[:5], "--labels", tmp_path / "qrels.txt",
                             "--export", f"prometheus={pushgateway}", "--export-experiment", "nightly")
    assert code == 0
    got = series(pushgateway, job="nightly", pipeline="evaluate", retriever="bm25")
    assert not [s for s in got if s[0] == FAMILY["gate"]]  # no baseline this time: the old gate figures are gone
    assert_every_figure_arrived(got, [r for r in expected_evaluate({**data, "gate": {"passed": True, "checks": []},
                                                                     "floors": []}) if r[0] != "gate"],
                                {"job": "nightly"})


def test_agree_pushes_its_agreement_figures_and_gate(tmp_path, capsys, pushgateway):  # noqa: F811
    code, data, err = run_json(capsys, *agree_inputs(tmp_path), "--export", f"prometheus={pushgateway}",
                               "--judge", "offline:test")
    assert code == 1, err  # the old labels were better: the prompt-change gate fails, and is exported as failed
    got = series(pushgateway, pipeline="agree")
    assert_every_figure_arrived(got, expected_agree(data), {"pipeline": "agree", "retriever": "", "judge": "offline:test",
                                                            "rubric_version": "0123456789ab"})
    assert [s[2] for s in got if s[1]["name"] == "prompt_change"] == [0.0]


def test_a_regression_pipeline_exports_through_its_config_section(tmp_path, capsys, pushgateway):  # noqa: F811
    config = tmp_path / "regression.toml"
    text = (PIPELINES / "regression.toml").read_text().replace('"sample/', f'"{PIPELINES}/sample/')
    config.write_text(text + f'\n[export]\nto = ["prometheus={pushgateway}"]\nexperiment = "ci"\n')
    code, data, err = run_json(capsys, "run", config, "--out", tmp_path / "out")
    assert code == 0, err
    got = series(pushgateway, job="ci", pipeline="regression")
    from labeller.rubric import load_rubric

    assert_every_figure_arrived(got, expected_pipeline(data),
                                {"retriever": "bm25", "judge": "offline:lexical",
                                 "rubric_version": load_rubric("transactions").version})
    assert {s[1]["name"] for s in got if s[0] == "labeller_metric"} >= {"ndcg@10", "recall@10", "mrr@10", "judged@10"}


@pytest.mark.parametrize("pipeline", ["label_slice", "validate_prompt"])
def test_the_other_pipelines_export_their_figures_checks_and_labels(pipeline, tmp_path, capsys,
                                                                     pushgateway):  # noqa: F811
    code, data, err = run_json(capsys, "run", PIPELINES / f"{pipeline}.toml", "--out", tmp_path / "out",
                               "--export", f"prometheus={pushgateway}")
    assert code == 0, err
    from labeller.pipelines import load_config
    from labeller.rubric import load_rubric

    cfg = load_config(PIPELINES / f"{pipeline}.toml")
    digest = hashlib.sha256(b"".join(p.read_bytes() + b"\0" for p in (cfg.inputs.queries, cfg.inputs.corpus,
                                                                      cfg.inputs.gold) if p is not None))
    got = series(pushgateway, pipeline=pipeline)
    assert_every_figure_arrived(got, expected_pipeline(data), {
        "retriever": "bm25" if pipeline == "label_slice" else "", "judge": "offline:lexical",
        "rubric_version": load_rubric("transactions").version, "suite_digest": f"sha256:{digest.hexdigest()[:16]}"})


def test_a_gateway_that_is_down_is_one_line_and_exit_4_after_every_local_output(tmp_path, capsys):
    down = f"http://127.0.0.1:{free_port()}"
    args = evaluate_inputs(tmp_path)
    code, out, err = cli(*args[:5], "--labels", tmp_path / "qrels.txt", "--report", tmp_path / "report", "--json",
                         "--junit", tmp_path / "junit.xml", "--export", f"prometheus={down}", capsys=capsys)
    assert code == 4
    assert json.loads(out)["runs"]  # the result was printed whole
    assert (tmp_path / "report" / "index.html").is_file() and (tmp_path / "junit.xml").is_file()
    errors = [line for line in err.splitlines() if line.startswith("labeller: error:")]
    assert errors == [f"labeller: error: export to prometheus={down} failed: no answer from {down} (connection refused): "
                      "is the server running? (every local result was written first)"]


def test_a_failed_gate_keeps_exit_1_when_the_gateway_is_down_too(tmp_path, capsys):
    down = f"http://127.0.0.1:{free_port()}"
    code, _, err = cli(*evaluate_inputs(tmp_path), "--export", f"prometheus={down}", capsys=capsys)
    assert code == 1
    assert "export to prometheus=" in err and "floor failed" in err


def test_credentials_in_the_url_authenticate_and_are_never_shown(tmp_path, capsys, pushgateway):  # noqa: F811
    host = pushgateway.removeprefix("http://")
    code, out, err = cli(*evaluate_inputs(tmp_path)[:5], "--labels", tmp_path / "qrels.txt", "--json",
                         "--export", f"prometheus=http://ci:{SECRET}@{host}", "--export-experiment", "auth",
                         capsys=capsys)
    assert code == 0, err
    assert SECRET not in out + err and f"prometheus=http://{host}" in err
    assert series(pushgateway, job="auth")
    down = free_port()
    code, out, err = cli(*evaluate_inputs(tmp_path)[:5], "--labels", tmp_path / "qrels.txt",
                         "--export", f"prometheus=http://ci:{SECRET}@127.0.0.1:{down}", capsys=capsys)
    assert code == 4 and SECRET not in out + err and "ci:" not in err


def test_a_gateway_that_wants_basic_auth_gets_the_urls_credentials(tmp_path, capsys):
    args = [*evaluate_inputs(tmp_path)[:5], "--labels", tmp_path / "qrels.txt", "--json"]
    with pushgateway_server(tmp_path, basic_auth=True) as url:
        code, _, err = cli(*args, "--export", f"prometheus={url}", capsys=capsys)
        assert code == 4 and "401" in err  # refused without them: a real check on the server's side
        code, out, err = cli(*args, "--export", f"prometheus=http://ci:{SECRET}@{url[7:]}", capsys=capsys)
        assert code == 0, err
        assert SECRET not in out + err
        token = base64.b64encode(f"ci:{SECRET}".encode()).decode()
        got = series(url, auth=f"Basic {token}", pipeline="evaluate")
        assert {s[1]["name"] for s in got} >= {"ndcg@10", "recall@100", "mrr@10"}


def test_bad_export_specs_are_refused_before_the_job_runs(tmp_path, capsys):
    args = evaluate_inputs(tmp_path)
    for spec, message in (("nosuch=http://127.0.0.1:1", "unknown export backend 'nosuch'"),
                          ("prometheus", "is not BACKEND=URL"),
                          (f"prometheus=ftp://u:{SECRET}@127.0.0.1:1", "is not an http:// or https:// URL")):
        code, out, err = cli(*args, "--export", spec, capsys=capsys)
        assert code == 2 and message in err and SECRET not in err, (spec, err)
        assert out == "" and not (tmp_path / "report").exists()  # nothing ran, nothing written
