"""The regression gate fires on a run degraded by shuffling and stays quiet on an unchanged one."""

from __future__ import annotations

import json
import random
import re

import pytest
from evaluation_helpers import cli, cli_json, write_qrels

from labeller.evaluation.runs import Ranking, shuffle_top, to_trec


@pytest.fixture
def files(tmp_path):
    """A decent run (relevant documents tend to rank high), a shuffled copy and an identical copy."""
    rng = random.Random(11)
    qrels, docs = {}, {}
    for q in range(50):
        grades = {f"d{q}-{i}": rng.choice([0, 0, 1, 2, 3]) for i in range(30)}
        grades[f"d{q}-0"] = 3  # every query has an answer
        qrels[f"q{q}"] = grades
        docs[f"q{q}"] = sorted(grades, key=lambda d: grades[d] + rng.random() * 1.5, reverse=True)
    good = Ranking(name="good", source="", docs=docs)
    paths = {"qrels": write_qrels(tmp_path / "qrels.txt", qrels)}
    for name, ranking in (("good", good), ("same", good), ("shuffled", shuffle_top(good, 100, seed=5))):
        paths[name] = tmp_path / f"{name}.trec"
        paths[name].write_text(to_trec(ranking))
    return paths


def gate_args(files, run: str, baseline: str | None = None, *extra):
    return ["evaluate", "--run", files[run], "--baseline", baseline or files["good"], "--labels", files["qrels"],
            "--metrics", "ndcg@10,map,recall@20", "--fail-on-regression", *extra]


def test_gate_fires_on_a_shuffled_run(files, capsys):
    code, out, err = cli(*gate_args(files, "shuffled"), "--threshold", "ndcg@10=0.02", capsys=capsys)
    assert code == 1
    assert re.search(r"regression gate failed: ndcg@10 of shuffled 0\.\d{4} -> 0\.\d{4} \(delta -0\.\d{4}, fails below -0\.02;", err)
    assert "**Regression gate: FAILED**" in out and "FAIL: regression" in out


def test_gate_stays_quiet_on_an_unchanged_run(files, capsys):
    code, out, err = cli(*gate_args(files, "same"), "--json", capsys=capsys)
    assert code == 0, err
    gate = json.loads(out)["gate"]
    assert gate["passed"] is True
    assert {c["verdict"] for c in gate["checks"]} == {"no-drop"}
    assert all(c["p_value"] == 1.0 for c in gate["checks"])


def test_a_drop_within_its_threshold_passes(files, capsys):
    code, out, _ = cli(*gate_args(files, "shuffled"), "--default-threshold", "0.9", "--json", capsys=capsys)
    assert code == 0
    assert {c["verdict"] for c in json.loads(out)["gate"]["checks"]} <= {"drop-within-threshold", "no-drop"}


def test_a_large_drop_on_few_queries_fails_on_the_threshold_alone(files, tmp_path, capsys):
    qrels_text = "".join(line for line in files["qrels"].read_text().splitlines(keepends=True)
                         if line.split()[0] in ("q0", "q1", "q2"))
    few = tmp_path / "few.txt"
    few.write_text(qrels_text)
    args = ["evaluate", "--run", files["shuffled"], "--baseline", files["good"], "--labels", few,
            "--metrics", "ndcg@10", "--fail-on-regression", "--json"]
    code, out, err = cli(*args, capsys=capsys)
    check = json.loads(out)["gate"]["checks"][0]
    # Three queries: no exact test goes below 2^-3 = 0.125, so significance cannot be reached and the
    # drop is decided by its threshold, and said so.
    assert code == 1 and check["verdict"] == "regression" and check["drop"] > 0.01
    assert check["smallest_p"] == 0.125 and check["decided_by"] == "threshold alone"
    assert "too few queries for significance" in err and "decided by the threshold alone" in err
    # --require-significance opts out: the drop passes, but as untested, with a warning.
    code, out, err = cli(*args, "--require-significance", capsys=capsys)
    gate = json.loads(out)["gate"]
    assert code == 0 and gate["passed"] and gate["checks"][0]["verdict"] == "drop-untestable"
    assert re.search(r"labeller: warning: ndcg@10 of shuffled \d\.\d{4} -> \d\.\d{4} \(delta -0\.\d{4}", err) and "not gated" in err


def test_the_gate_fails_by_default_and_no_fail_on_regression_only_reports(files, capsys):
    default = [a for a in gate_args(files, "shuffled") if a != "--fail-on-regression"]
    assert cli(*default, capsys=capsys)[0] == 1
    args = [a if a != "--fail-on-regression" else "--no-fail-on-regression" for a in gate_args(files, "shuffled")]
    code, out, _ = cli(*args, "--json", capsys=capsys)
    assert code == 0 and json.loads(out)["gate"]["passed"] is False


def test_a_saved_json_result_works_as_baseline(files, tmp_path, capsys):
    saved = cli_json("evaluate", "--run", files["good"], "--labels", files["qrels"], "--metrics",
                     "ndcg@10,map,recall@20", capsys=capsys)
    baseline = tmp_path / "last_week.json"
    baseline.write_text(json.dumps(saved))
    assert cli(*gate_args(files, "shuffled", baseline), capsys=capsys)[0] == 1
    code, out, _ = cli(*gate_args(files, "same", baseline), "--json", capsys=capsys)
    assert code == 0 and json.loads(out)["gate"]["passed"] is True
    # A baseline evaluated another way is refused, not silently compared.
    code, _, err = cli(*gate_args(files, "same", baseline), "--relevant-from", "4", capsys=capsys)
    assert code == 2 and "evaluate both the same way" in err


@pytest.mark.parametrize("extra, message", [
    (["--threshold", "ndcg@5=0.1"], "not among the metrics"),
    (["--threshold", "ndcg@10"], "is not METRIC=DROP"),
    (["--threshold", "ndcg@10=abc"], "is not a number"),
    (["--alpha", "1.5"], "--alpha 1.5 is out of range"),
    (["--test", "wilcoxon"], "--test 'wilcoxon' is unknown"),
])
def test_bad_gate_options(files, capsys, extra, message):
    code, _, err = cli(*gate_args(files, "same"), *extra, capsys=capsys)
    assert code == 2 and message in err


def test_fail_on_regression_needs_a_baseline(files, capsys):
    code, _, err = cli("evaluate", "--run", files["good"], "--labels", files["qrels"], "--fail-on-regression",
                       capsys=capsys)
    assert code == 2 and "--fail-on-regression needs --baseline" in err
