"""`labeller outcomes` as a user runs it, and `labeller.link_outcomes` as a notebook calls it: the same figures."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from cli_helpers import cli
from outcomes_helpers import planted, with_first_relevant_at, write_labels, write_outcomes, write_run

import labeller
from labeller.errors import BadInputError


def _world(tmp_path):
    """The hit_rate@3 world of test_outcomes, as files: a baseline run, a candidate that loses the evidence of
    11 succeeding tasks, and each run's outcomes (3 more tasks fail with their evidence at rank 1: the agent's)."""
    ranking, judgments, first = planted(n=200, relevant=1)
    success = {q: r <= 3 for q, r in first.items()}
    ok = sorted(q for q, r in first.items() if r <= 3)
    agent = [q for q in ok if first[q] == 1][:3]
    lost = [q for q in ok if q not in agent][:11]
    candidate = with_first_relevant_at(ranking, judgments, {q: 15 for q in lost}, "candidate")
    after = {**success, **{q: False for q in lost + agent}}
    return dict(labels=write_labels(tmp_path / "labels.jsonl", judgments),
                baseline=write_run(tmp_path / "baseline.trec", ranking),
                run=write_run(tmp_path / "candidate.trec", candidate),
                baseline_outcomes=write_outcomes(tmp_path / "baseline-outcomes.jsonl", success),
                outcomes=write_outcomes(tmp_path / "outcomes.jsonl", after), lost=lost)


def _args(files, *names):
    return [a for n in names for a in (f"--{n.replace('_', '-')}", files[n])]


def test_markdown_names_the_metric_and_the_regression(tmp_path, capsys):
    files = _world(tmp_path)
    code, out, err = cli(capsys, "outcomes", *_args(files, "labels", "outcomes", "run", "baseline",
                                                    "baseline_outcomes"), "--bootstrap", "200",
                         "--report", tmp_path / "report")
    assert code == 1, err  # the downstream gate fails: 11 succeeding tasks lost their evidence
    assert "Gate on hit_rate@3" in out
    assert "Of the 14 newly failing tasks, 11 lost their evidence" in out
    assert "Downstream gate: FAIL" in out
    assert err.strip().splitlines()[-1].startswith("labeller: error: downstream gate failed")
    for name in ("index.html", "summary.md", "result.json"):
        assert (tmp_path / "report" / name).is_file()
    page = (tmp_path / "report" / "index.html").read_text()
    assert "retrieval failed, task failed (retrieval&#39;s fault)" in page and files["lost"][0] in page


def test_json_equals_the_python_api_on_dataframes(tmp_path, capsys):
    files = _world(tmp_path)
    code, out, err = cli(capsys, "outcomes", *_args(files, "labels", "outcomes", "run"), "--bootstrap", "200",
                         "--json")
    assert code == 0, err
    from_cli = json.loads(out)
    run = pd.read_csv(files["run"], sep=" ", header=None, names=["query_id", "q0", "doc_id", "rank", "score", "tag"])
    result = labeller.link_outcomes(pd.read_json(files["outcomes"], lines=True),
                                    pd.read_json(files["labels"], lines=True),
                                    run[["query_id", "doc_id", "score"]], bootstrap=200)
    assert result.recommendation.model_dump() == from_cli["recommendation"]
    assert [p.model_dump() for p in result.predictions] == from_cli["predictions"]
    assert result.attribution.model_dump() == from_cli["attribution"]
    frame = result.to_frame()
    assert frame.loc["hit_rate@3", "auc"] == from_cli["predictions"][0]["auc"]
    figures = result.figures()  # what an exporter pushes: every one equal to the --json record's
    assert figures["outcome_auc:hit_rate@3"] == from_cli["predictions"][0]["auc"]
    assert figures["outcome_rate"] == from_cli["outcome_rate"]
    assert figures["attribution:agent_fault"] == from_cli["attribution"]["counts"]["agent_fault"]
    cells = result.attribution_frame()
    assert cells.groupby("cell").size().to_dict() == {k: v for k, v in from_cli["attribution"]["counts"].items() if v}


def test_no_fail_on_drop_only_reports(tmp_path, capsys):
    files = _world(tmp_path)
    code, out, _ = cli(capsys, "outcomes", *_args(files, "labels", "outcomes", "run", "baseline"),
                       "--bootstrap", "100", "--no-fail-on-drop")
    assert code == 0 and "Downstream gate: FAIL" in out


def test_the_api_names_the_frame_row_and_column():
    with pytest.raises(BadInputError) as info:
        labeller.link_outcomes(pd.DataFrame({"query_id": ["q1", "q2"], "outcome": ["correct", "perhaps"]}),
                               pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "grade": [4]}),
                               pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]}))
    assert (info.value.path, info.value.line, info.value.field) == ("outcomes DataFrame", 2, "outcome")
    with pytest.raises(BadInputError) as info:
        labeller.link_outcomes(pd.DataFrame({"query_id": ["q1"], "outcome": ["correct"]}),
                               pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "grade": [7]}),
                               pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]}))
    assert (info.value.path, info.value.field) == ("labels DataFrame", "grade")


@pytest.mark.parametrize("text, expected", [
    ('{"query_id": "q000", "outcome": "correct"}\n{"query_id": "q001", "outcome": "sure"}\n',
     "outcomes.jsonl:2: field 'outcome': expected correct or incorrect"),
    ('{"query_id": "q000", "outcome": "correct", "note": "x"}\n', "outcomes.jsonl:1: field 'note': unknown column"),
    ('{"query_id": "q000", "outcome": 1}\n{"query_id": "q000", "outcome": 0}\n',
     "outcomes.jsonl:2: field 'query_id': query_id 'q000' is listed twice"),
])
def test_bad_outcomes_files_exit_2_naming_file_line_and_field(tmp_path, capsys, text, expected):
    files = _world(tmp_path)
    (tmp_path / "outcomes.jsonl").write_text(text, encoding="utf-8")
    code, out, err = cli(capsys, "outcomes", *_args(files, "labels", "outcomes", "run"), "--report",
                         tmp_path / "r")
    assert code == 2 and expected in err and out == ""
    assert not (tmp_path / "r").exists()


def test_the_api_takes_evidence_and_queries_as_frames(tmp_path):
    ranking, judgments, first = planted(n=60, relevant=1, seed=3)
    relevant = {q: next(d for d, g in judgments.grades[q].items() if g >= 3) for q in first}
    labels = pd.DataFrame([(q, d, g) for q, docs in judgments.grades.items() for d, g in docs.items()],
                          columns=["query_id", "doc_id", "grade"])
    run = pd.DataFrame([(q, d, float(len(docs) - i)) for q, docs in ranking.docs.items() for i, d in enumerate(docs)],
                       columns=["query_id", "doc_id", "score"])
    result = labeller.link_outcomes(
        pd.DataFrame({"query_id": list(first), "outcome": [first[q] <= 5 for q in first]}), labels, run,
        evidence=pd.DataFrame({"query_id": list(relevant), "doc_id": list(relevant.values())}),
        queries=pd.DataFrame({"query_id": list(first), "text": [f"text of {q}" for q in first]}),
        bootstrap=100, gate_metric="coverage@5")
    assert result.attribution.metric == "coverage@5"
    assert result.to_frame().loc["coverage@5", "auc"] == 1.0
    assert all(q.text == f"text of {q.query_id}" for cell in result.attribution.queries.values() for q in cell)
