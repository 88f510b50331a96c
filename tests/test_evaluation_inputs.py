"""What `labeller evaluate` reads and writes: run and label formats, bad input, JSON and reports."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from evaluation_helpers import cli, cli_json, synthetic, write_qrels, write_run

METRICS = "ndcg@10,recall@20,mrr@10"


@pytest.fixture
def data(tmp_path):
    qrels, run = synthetic(seed=3, queries=12)
    return {"qrels": write_qrels(tmp_path / "qrels.txt", qrels), "run": write_run(tmp_path / "run.trec", run),
            "qrels_dict": qrels, "run_dict": run, "dir": tmp_path}


def label_row(q: str, d: str, grade: int) -> dict:
    return {"query_id": q, "doc_id": d, "grade": grade, "justification": "because", "judge": "offline:lexical",
            "provider": "offline", "model": "lexical", "rubric": "general", "rubric_version": "abc",
            "cache_key": "k" * 64, "created_at": "2026-01-01T00:00:00Z"}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_table_runs_score_like_the_trec_run(data, capsys):
    rows = [{"query_id": q, "doc_id": d, "score": s} for q, ds in data["run_dict"].items() for d, s in ds.items()]
    frame = pd.DataFrame(rows)
    paths = [write_jsonl(data["dir"] / "run.jsonl", rows), data["dir"] / "run.csv", data["dir"] / "run.parquet"]
    frame.to_csv(paths[1], index=False)
    frame.to_parquet(paths[2], index=False)
    expected = cli_json("evaluate", "--run", data["run"], "--labels", data["qrels"], "--metrics", METRICS,
                        capsys=capsys)
    for path in paths:
        got = cli_json("evaluate", "--run", path, "--labels", data["qrels"], "--metrics", METRICS, capsys=capsys)
        assert got["per_query"] == expected["per_query"], path.suffix


def test_label_and_gold_files_score_like_the_qrels(data, capsys):
    qrels = data["qrels_dict"]
    labels = write_jsonl(data["dir"] / "labels.jsonl",
                         [label_row(q, d, g + 1) for q, ds in qrels.items() for d, g in ds.items()])
    gold = write_jsonl(data["dir"] / "gold.jsonl",
                       [{"query_id": q, "doc_id": d, "grade": g + 1} for q, ds in qrels.items() for d, g in ds.items()])
    expected = cli_json("evaluate", "--run", data["run"], "--labels", data["qrels"], "--metrics", METRICS,
                        capsys=capsys)
    for path in (labels, gold):
        got = cli_json("evaluate", "--run", data["run"], "--labels", path, "--metrics", METRICS, capsys=capsys)
        assert got["per_query"] == expected["per_query"] and got["metrics"] == expected["metrics"]


def test_several_gold_annotators_give_the_median_grade(data, capsys):
    run = write_run(data["dir"] / "one.trec", {"q": {"a": 2.0, "b": 1.0}})
    gold = write_jsonl(data["dir"] / "gold.jsonl", [
        {"query_id": "q", "doc_id": "a", "grade": g, "annotator": who} for g, who in ((1, "x"), (4, "y"), (5, "z"))
    ] + [{"query_id": "q", "doc_id": "b", "grade": g, "annotator": who} for g, who in ((5, "x"), (2, "y"))])
    got = cli_json("evaluate", "--run", run, "--labels", gold, "--metrics", "mrr", "--relevant-from", "4",
                   capsys=capsys)
    # a: median of 1, 4, 5 = 4 (relevant, rank 1). b: 2 and 5 split evenly: the lower middle grade, 2.
    assert got["metrics"]["mrr"] == 1.0
    got = cli_json("evaluate", "--run", run, "--labels", gold, "--metrics", "recall@2", "--relevant-from", "5",
                   capsys=capsys)
    assert got["no_answer"]["query_ids"] == ["q"]


def test_json_keys_are_the_metric_names_as_typed(data, capsys):
    got = cli_json("evaluate", "--run", data["run"], "--labels", data["qrels"], "--metrics", "NDCG@10, p@5,map",
                   capsys=capsys)
    assert list(got["metrics"]) == ["NDCG@10", "p@5", "map"]
    assert set(got) >= {"metrics", "per_query", "judged", "no_answer", "trec_eval", "queries", "settings"}


def test_report_files_match_the_json(data, capsys):
    reversed_run = {q: {d: -s for d, s in ds.items()} for q, ds in data["run_dict"].items()}
    other = write_run(data["dir"] / "other.trec", reversed_run)
    out = data["dir"] / "report"
    code, stdout, err = cli("evaluate", "--run", data["run"], "--run", other, "--labels", data["qrels"], "--metrics",
                            METRICS, "--report", out, "--json", capsys=capsys)
    assert code == 0 and f"report: {out / 'index.html'}" in err
    assert json.loads((out / "result.json").read_text()) == json.loads(stdout)
    html = (out / "index.html").read_text()
    assert "<svg" in html and "other against run" in html and "<script" not in html
    assert "| ndcg@10 |" in (out / "summary.md").read_text()


@pytest.mark.parametrize("content, message", [
    ("q1 Q0 d1 1 2.0\n", "run.trec:1: expected 6 columns"),
    ("q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n", "run.trec:2: field 'doc_id': document 'd1' appears twice"),
    ("q1 Q0 d1 1 high t\n", "run.trec:1: field 'score': score 'high' is not a number"),
    ("q1 Q0 d1 1 nan t\n", "run.trec:1: field 'score': score 'nan' is not a finite number"),
    ("", "run.trec: file is empty"),
])
def test_bad_runs_are_one_clear_error(data, capsys, content, message):
    bad = data["dir"] / "run.trec"
    bad.write_text(content)
    report = data["dir"] / "out"
    code, out, err = cli("evaluate", "--run", bad, "--labels", data["qrels"], "--report", report, capsys=capsys)
    assert code == 2 and message in err and err.count("\n") == 1
    assert out == "" and not report.exists()


def test_bad_labels_are_one_clear_error(data, capsys):
    labels = write_jsonl(data["dir"] / "labels.jsonl", [label_row("q1", "d1", 3), label_row("q1", "d1", 5)])
    code, _, err = cli("evaluate", "--run", data["run"], "--labels", labels, capsys=capsys)
    assert code == 2 and "labels.jsonl:2: field 'doc_id': pair (q1, d1) is graded twice (first on line 1)" in err
    qrels = data["dir"] / "five.qrels"
    qrels.write_text(f"{next(iter(data['run_dict']))} 0 d1 4\n")
    code, _, err = cli("evaluate", "--run", data["run"], "--labels", qrels, capsys=capsys)
    assert code == 2 and "five.qrels:1: field 'grade': grade 4 is outside the scale 0-3" in err
    code, _, err = cli("evaluate", "--run", data["run"], "--labels", qrels, "--from-scale", "0-4", capsys=capsys)
    assert code == 0, err
    code, _, err = cli("evaluate", "--run", data["run"], "--labels", data["dir"] / "missing.txt", capsys=capsys)
    assert code == 2 and "missing.txt: file not found" in err


def test_a_run_sharing_no_query_with_the_labels_is_an_error_not_a_passing_gate(data, capsys):
    """Wrong labels file: every metric would be blank and the regression gate would pass on nothing."""
    other = write_qrels(data["dir"] / "other.qrels", {"elsewhere": {"d1": 2}})
    for extra in ([], ["--baseline", data["run"]]):
        code, out, err = cli("evaluate", "--run", data["run"], "--labels", other, *extra, capsys=capsys)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "none of the 12 queries of run" in err and "has a judgment in" in err and "other.qrels" in err


@pytest.mark.parametrize("option, message", [
    (["--relevant-from", "1"], "--relevant-from 1 is out of range"),
    (["--gain", "square"], "gain 'square' is unknown"),
    (["--average", "some"], "--average 'some' is unknown"),
    (["--seed", "-1"], "--seed -1 is negative"),
    (["--default-threshold", "-0.5"], "--default-threshold -0.5 is negative"),
    (["--depth", "0", "--fill-holes", "--judge", "offline:lexical", "--queries", "q.jsonl", "--corpus", "c.jsonl"],
     "--depth 0 must be at least 1"),
])
def test_bad_options(data, capsys, option, message):
    code, _, err = cli("evaluate", "--run", data["run"], "--labels", data["qrels"], *option, capsys=capsys)
    assert code == 2 and message in err
