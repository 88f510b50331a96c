"""--export for `labeller outcomes`, `labeller answers judge` and the answers pipeline, against Debian's real
prometheus-pushgateway: every figure of the job's `--json` arrives with the run's labels and the same value, a
failed gate arrives as 0 (and keeps exit 1)."""

from __future__ import annotations

from export_helpers import PIPELINES, expected_pipeline, run_json
from exporter_servers import pushgateway, pushgateway_server  # noqa: F401 -- fixture
from test_export_prometheus import assert_every_figure_arrived, series
from test_outcomes_cli import _args, _world

SAMPLE = PIPELINES / "sample"


def _present(holder: dict, names, kind: str, own: dict, prefix: str = "") -> list:
    return [(kind, prefix + n, own, float(holder[n])) for n in names
            if n in holder and isinstance(holder[n], (int, float)) and holder[n] is not None]


def expected_outcomes(data: dict) -> list:
    """Every figure `labeller outcomes --json` has, written out from its own fields."""
    rows = [("outcome", "outcome_rate", {}, data["outcome_rate"])] if data["outcome_rate"] is not None else []
    rows += _present(data["joined"], ("outcomes", "analysed", "not_in_outcomes"), "count", {})
    for p in data["predictions"]:
        rows += _present(p, ("auc", "auc_low", "auc_high", "ok_rate", "failed_rate"), "metric", {"check": p["metric"]})
    if data["attribution"]:
        rows += _present(data["attribution"]["counts"], data["attribution"]["counts"], "count",
                         {"check": data["attribution"]["metric"]}, prefix="attribution:")
    if data["regression"]:
        r = data["regression"]
        rows += _present(r, ("newly_failing", "lost_evidence", "kept_evidence", "never_had", "newly_fixed",
                             "retrieval_dropped"), "count", {"check": r["metric"], "reference": r["baseline"]})
    if data["gate"]:
        g = data["gate"]
        own = {"check": g["metric"], "reference": g["baseline"]}
        rows += _present(g, ("baseline_rate", "run_rate"), "outcome", own, prefix="predicted_")
        rows += _present(g, ("drop", "drop_low", "drop_high"), "metric", own, prefix="predicted_")
        rows.append(("gate", "downstream", own, 1.0 if g["passed"] else 0.0))
    return rows


def expected_answers(data: dict) -> list:
    rows = [("metric", "mean_groundedness", {}, data["mean_groundedness"])]
    rows += [("count", "claims", {}, float(data["claims"]))]
    rows += [("count", f"attribution:{k}", {}, float(v)) for k, v in data["counts"].items()]
    for step, stats in data["stats"].items():
        rows += _present(stats, ("requested", "new", "cached", "failed", "requests"), "count", {"check": step})
        rows += _present(stats, ("cost_usd",), "metric", {"check": step})
    rows.append(("gate", "answers", {}, 1.0 if data["passed"] else 0.0))
    rows += [("gate", "answers", {"check": c["name"]}, 1.0 if c["passed"] else 0.0) for c in data["checks"]]
    return rows


def test_outcomes_pushes_every_figure_and_its_failed_downstream_gate(tmp_path, capsys, pushgateway):  # noqa: F811
    files = _world(tmp_path)
    code, data, err = run_json(capsys, "outcomes", *_args(files, "labels", "outcomes", "run", "baseline",
                                                          "baseline_outcomes"), "--bootstrap", "200",
                               "--export", f"prometheus={pushgateway}", "--export-experiment", "outcomes")
    assert code == 1 and not data["gate"]["passed"], err  # 11 succeeding tasks lost their evidence
    expected = expected_outcomes(data)
    assert f"exported {len(expected)} figures to prometheus={pushgateway}" in err
    got = series(pushgateway, job="outcomes", pipeline="outcomes")
    digest = got[0][1]["suite_digest"]
    assert digest.startswith("sha256:")
    assert_every_figure_arrived(got, expected, {"pipeline": "outcomes", "retriever": data["run"],
                                                "suite_digest": digest})
    assert [s[2] for s in got if s[1]["name"] == "downstream"] == [0.0]
    assert {s[1]["name"] for s in got} >= {"outcome_rate", "auc", "lost_evidence", "predicted_drop"}


def test_answers_judge_pushes_every_figure_and_its_failed_checks(tmp_path, capsys, pushgateway):  # noqa: F811
    code, piped, err = run_json(capsys, "run", PIPELINES / "answers.toml", "--out", tmp_path / "out")
    assert code == 0, err
    code, data, err = run_json(capsys, "answers", "judge", "--queries", SAMPLE / "queries.jsonl", "--answers",
                               SAMPLE / "answers" / "answers.jsonl", "--run", tmp_path / "out" / "run.trec",
                               "--corpus", SAMPLE / "corpus.jsonl", "--required", SAMPLE / "answers" / "required.jsonl",
                               "--outcomes", SAMPLE / "answers" / "outcomes.jsonl", "--min-groundedness", "0.9",
                               "--max-unsupported-rate", "0", "--cache", tmp_path / "verdicts",
                               "--export", f"prometheus={pushgateway}", "--export-experiment", "answers-judge")
    assert code == 1 and not data["passed"], err  # hallucinated answers among the bundled ones
    from labeller.tasks.claims import load_claim_rubric

    got = series(pushgateway, job="answers-judge", pipeline="answers")
    assert_every_figure_arrived(got, expected_answers(data), {
        "retriever": "run", "judge": "offline:lexical", "rubric_version": load_claim_rubric(None).version})
    gates = {s[1]["check"]: s[2] for s in got if s[0] == "labeller_gate_passed"}
    assert gates == {"": 0.0, "min_groundedness": 0.0, "max_unsupported_generation_rate": 0.0, "max_failures": 1.0}


def test_the_answers_pipeline_exports_through_its_config_section(tmp_path, capsys, pushgateway):  # noqa: F811
    config = tmp_path / "answers.toml"
    text = (PIPELINES / "answers.toml").read_text().replace('"sample/', f'"{PIPELINES}/sample/')
    config.write_text(text + f'\n[export]\nto = ["prometheus={pushgateway}"]\nexperiment = "ci-answers"\n')
    code, data, err = run_json(capsys, "run", config, "--out", tmp_path / "out")
    assert code == 0, err
    from labeller.tasks.claims import load_claim_rubric

    got = series(pushgateway, job="ci-answers", pipeline="answers")
    assert_every_figure_arrived(got, expected_pipeline(data), {
        "retriever": "bm25", "judge": "offline:lexical", "rubric_version": load_claim_rubric(None).version})
    counts = {s[1]["name"]: s[2] for s in got if s[0] == "labeller_count"}
    assert counts["claims"] == data["figures"]["claims"] and counts["attribution.ok"] == 3
